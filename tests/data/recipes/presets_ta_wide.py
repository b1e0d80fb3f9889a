# torchvision references: train.py --auto-augment ta_wide --interpolation bicubic
# --random-erase 0.1 --train-crop-size 176
from _presets import ClassificationPresetTrain
from torchvision.transforms import InterpolationMode

transform = ClassificationPresetTrain(crop_size=176, interpolation=InterpolationMode("bicubic"),
                                      auto_augment_policy="ta_wide", random_erase_prob=0.1)
