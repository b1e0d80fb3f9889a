# torchvision's documentation forms: RandomApply over a torch.nn.ModuleList,
# positional ColorJitter ranges as tuples, AutoAugment with its enum, a
# uint8 tensor erased with a per-channel value.
import torch
import torchvision.transforms as T

transform = T.Compose([
    T.RandomResizedCrop([128], scale=(0.3, 1.0), ratio=(0.75, 1.3333333333333333)),
    T.RandomApply(torch.nn.ModuleList([
        T.ColorJitter((0.7, 1.3), (0.8, 1.2)),
        T.RandomAdjustSharpness(sharpness_factor=0.5, p=1.0),
    ]), p=0.3),
    T.AutoAugment(T.AutoAugmentPolicy.SVHN, interpolation=T.InterpolationMode.BILINEAR, fill=[128, 128, 128]),
    T.PILToTensor(),
    T.RandomErasing(p=0.5, scale=(0.05, 0.2), value=(124, 116, 104)),
])
KS = True
