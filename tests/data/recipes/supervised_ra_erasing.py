# Supervised ImageNet training with RandAugment and RandomErasing, as
# torchvision's classification references write it (train.py
# --auto-augment ra --random-erase 0.25): crop, flip, RandAugment(2, 9),
# float tensor, Normalize, RandomErasing(p=0.25).
import torch
from torchvision import transforms as T

transform = T.Compose([
    T.RandomResizedCrop(224, interpolation=T.InterpolationMode.BILINEAR),
    T.RandomHorizontalFlip(0.5),
    T.RandAugment(num_ops=2, magnitude=9, interpolation=T.InterpolationMode.BILINEAR),
    T.PILToTensor(),
    T.ConvertImageDtype(torch.float),
    T.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
    T.RandomErasing(p=0.25),
])
