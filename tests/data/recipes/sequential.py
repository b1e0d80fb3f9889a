# torchvision's scriptable form: torch.nn.Sequential of transforms.
import torch
import torchvision.transforms as T

transform = torch.nn.Sequential(
    T.RandomResizedCrop((160, 160), scale=(0.25, 1.0)),
    T.RandomHorizontalFlip(),
    T.ColorJitter(brightness=(0.5, 1.5), hue=0.05),
)
