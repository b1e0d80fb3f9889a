# torchvision references: train.py --auto-augment augmix
from _presets import ClassificationPresetTrain

transform = ClassificationPresetTrain(crop_size=224, auto_augment_policy="augmix")
REFUSED = ("AugMix",)
REASON = "no augmix filter yet (issue 21, the augmix branch adds it)"
