# torchvision references: train.py --auto-augment ra --random-erase 0.1
# (the recipe of the ResNet50 / ViT "new training recipe").
from _presets import ClassificationPresetTrain
from torchvision.transforms import InterpolationMode

transform = ClassificationPresetTrain(crop_size=176, interpolation=InterpolationMode.BILINEAR,
                                      auto_augment_policy="ra", random_erase_prob=0.1)
KS = True
