# torchvision references: train.py --auto-augment augmix
from _presets import ClassificationPresetTrain

transform = ClassificationPresetTrain(crop_size=224, auto_augment_policy="augmix")
