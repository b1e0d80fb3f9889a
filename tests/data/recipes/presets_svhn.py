# torchvision references: train.py --auto-augment svhn --random-erase 0.25
from _presets import ClassificationPresetTrain

transform = ClassificationPresetTrain(crop_size=224, auto_augment_policy="svhn",
                                      random_erase_prob=0.25, hflip_prob=0.3)
