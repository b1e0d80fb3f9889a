# torchvision references: the evaluation preset with a bicubic resize
# (--val-resize-size 232 --val-crop-size 224 --interpolation bicubic).
from _presets import ClassificationPresetEval
from torchvision.transforms import InterpolationMode

transform = ClassificationPresetEval(crop_size=224, resize_size=232,
                                     interpolation=InterpolationMode.BICUBIC)
