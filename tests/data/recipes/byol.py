# BYOL (Grill et al. 2020, table 6): two asymmetric views, blur with p 1.0
# and 0.1, solarize with p 0 and 0.2, bicubic crops, ColorJitter
# (0.4, 0.4, 0.2, 0.1) with p 0.8.
from torchvision import transforms as T
from torchvision.transforms import InterpolationMode


def byol_view(blur_p, solarize_p):
    return T.Compose([
        T.RandomResizedCrop(224, interpolation=InterpolationMode.BICUBIC),
        T.RandomHorizontalFlip(p=0.5),
        T.RandomApply([T.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1)], p=0.8),
        T.RandomGrayscale(p=0.2),
        T.RandomApply([T.GaussianBlur(kernel_size=23, sigma=(0.1, 2.0))], p=blur_p),
        T.RandomSolarize(threshold=128, p=solarize_p),
        T.ToTensor(),
        T.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
    ])


views = [byol_view(1.0, 0.0), byol_view(0.1, 0.2)]
KS = True
