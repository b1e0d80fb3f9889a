# DeiT-like training without timm: RandomResizedCrop (bicubic), flip,
# RandAugment (m 9, 2 ops), ColorJitter 0.4, ToTensor, Normalize,
# RandomErasing 0.25 with random values (timm's mode 'pixel').
import torch
import torchvision.transforms as T

IMAGENET_DEFAULT_MEAN = (0.485, 0.456, 0.406)
IMAGENET_DEFAULT_STD = (0.229, 0.224, 0.225)
transform = T.Compose([
    T.RandomResizedCrop(224, scale=(0.08, 1.0), interpolation=T.InterpolationMode.BICUBIC),
    T.RandomHorizontalFlip(0.5),
    T.RandAugment(num_ops=2, magnitude=9),
    T.ColorJitter(0.4, 0.4, 0.4),
    T.ToTensor(),
    T.Normalize(IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD),
    T.RandomErasing(p=0.25, value="random"),
])
KS = True
