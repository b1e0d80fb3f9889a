# CIFAR-10 with AutoAugment's CIFAR-10 policy, as the AutoAugment paper's
# PyTorch ports write it (the images here are not 32x32, so the crop pads
# only where it must).
import torch
from torchvision import transforms
from torchvision.transforms import AutoAugmentPolicy

transform = transforms.Compose([
    transforms.RandomCrop((32, 32), padding=4, fill=128),
    transforms.RandomHorizontalFlip(),
    transforms.AutoAugment(AutoAugmentPolicy.CIFAR10),
    transforms.PILToTensor(),
    transforms.ConvertImageDtype(torch.float),
    transforms.Normalize([0.4914, 0.4822, 0.4465], [0.2470, 0.2435, 0.2616]),
])
