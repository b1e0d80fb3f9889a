# DINO's two global crops alone (--local_crops_number 0).
from PIL import Image
from torchvision import transforms

flip_and_color_jitter = transforms.Compose([
    transforms.RandomHorizontalFlip(p=0.5),
    transforms.RandomApply([transforms.ColorJitter(brightness=0.4, contrast=0.4,
                                                   saturation=0.2, hue=0.1)], p=0.8),
    transforms.RandomGrayscale(p=0.2),
])
normalize = transforms.Compose([
    transforms.ToTensor(),
    transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
])
views = [
    transforms.Compose([
        transforms.RandomResizedCrop(224, scale=(0.4, 1.), interpolation=Image.BICUBIC),
        flip_and_color_jitter,
        transforms.GaussianBlur(23, sigma=(0.1, 2.0)),
        normalize,
    ]),
    transforms.Compose([
        transforms.RandomResizedCrop(224, scale=(0.4, 1.), interpolation=Image.BICUBIC),
        flip_and_color_jitter,
        transforms.RandomApply([transforms.GaussianBlur(23, sigma=(0.1, 2.0))], p=0.1),
        transforms.RandomSolarize(128, p=0.2),
        normalize,
    ]),
]
