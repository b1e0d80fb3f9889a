# DINO (facebookresearch/dino main_dino.py DataAugmentationDINO) with
# torchvision's GaussianBlur / RandomSolarize for utils.GaussianBlur and
# utils.Solarization: two global crops (224, scale 0.4-1) and local crops
# (96, scale 0.05-0.4).
from PIL import Image
from torchvision import transforms

global_crops_scale, local_crops_scale, local_crops_number = (0.4, 1.), (0.05, 0.4), 8
flip_and_color_jitter = transforms.Compose([
    transforms.RandomHorizontalFlip(p=0.5),
    transforms.RandomApply(
        [transforms.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1)],
        p=0.8
    ),
    transforms.RandomGrayscale(p=0.2),
])
normalize = transforms.Compose([
    transforms.ToTensor(),
    transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
])


def blur(p):
    return transforms.RandomApply([transforms.GaussianBlur(23, sigma=(0.1, 2.0))], p=p)


global_transfo1 = transforms.Compose([
    transforms.RandomResizedCrop(224, scale=global_crops_scale, interpolation=Image.BICUBIC),
    flip_and_color_jitter,
    blur(1.0),
    normalize,
])
global_transfo2 = transforms.Compose([
    transforms.RandomResizedCrop(224, scale=global_crops_scale, interpolation=Image.BICUBIC),
    flip_and_color_jitter,
    blur(0.1),
    transforms.RandomSolarize(128, p=0.2),
    normalize,
])
local_transfo = transforms.Compose([
    transforms.RandomResizedCrop(96, scale=local_crops_scale, interpolation=Image.BICUBIC),
    flip_and_color_jitter,
    blur(0.5),
    normalize,
])
views = [global_transfo1, global_transfo2] + [local_transfo] * local_crops_number
# multi-crop in one stream: view groups of 2 x 224 and 8 x 96 (refurb-final -g)
