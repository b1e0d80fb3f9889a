# torchvision references: train.py --auto-augment imagenet --ra-magnitude 9
from _presets import ClassificationPresetTrain

transform = ClassificationPresetTrain(crop_size=224, auto_augment_policy="imagenet")
