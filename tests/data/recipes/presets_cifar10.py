# torchvision references: train.py --auto-augment cifar10, no flip
from _presets import ClassificationPresetTrain

transform = ClassificationPresetTrain(crop_size=224, auto_augment_policy="cifar10",
                                      hflip_prob=0.0)
