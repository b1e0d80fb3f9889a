# MoCo v3 (facebookresearch/moco-v3 main_moco.py): BYOL's asymmetric
# views, solarize written on the float tensor after ToTensor (threshold
# 0.5 of 1.0), blur as RandomApply.
import torchvision.transforms as transforms

normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
augmentation1 = [
    transforms.RandomResizedCrop(224, scale=(0.08, 1.)),
    transforms.RandomApply([transforms.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
    transforms.RandomGrayscale(p=0.2),
    transforms.RandomApply([transforms.GaussianBlur(23, sigma=(.1, 2.))], p=1.0),
    transforms.RandomHorizontalFlip(),
    transforms.ToTensor(),
    normalize
]
augmentation2 = [
    transforms.RandomResizedCrop(224, scale=(0.08, 1.)),
    transforms.RandomApply([transforms.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
    transforms.RandomGrayscale(p=0.2),
    transforms.RandomApply([transforms.GaussianBlur(23, sigma=(.1, 2.))], p=0.1),
    transforms.RandomHorizontalFlip(),
    transforms.ToTensor(),
    transforms.RandomSolarize(0.5, p=0.2),
    normalize
]
views = [transforms.Compose(augmentation1), transforms.Compose(augmentation2)]
