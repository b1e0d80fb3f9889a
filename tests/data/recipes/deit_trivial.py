# DeiT-III-like: TrivialAugmentWide instead of RandAugment, erasing on the
# uint8 tensor before the float conversion, positional arguments.
import torch
from torchvision import transforms

transform = transforms.Compose([
    transforms.RandomResizedCrop(192, (0.08, 1), (3 / 4, 4 / 3), 3),
    transforms.RandomHorizontalFlip(),
    transforms.TrivialAugmentWide(31, transforms.InterpolationMode.BILINEAR),
    transforms.ColorJitter(0.3, 0.3, 0.3),
    transforms.PILToTensor(),
    transforms.RandomErasing(0.25, (0.02, 1 / 3), (0.3, 3.3), 0),
    transforms.ConvertImageDtype(torch.float32),
    transforms.Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]),
])
