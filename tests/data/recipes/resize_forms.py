# Resize in the forms users write: a one-element list, max_size,
# antialias, a PIL integer interpolation, CenterCrop with a tuple.
from torchvision import transforms

transform = transforms.Compose([
    transforms.Resize([160], interpolation=2, max_size=200, antialias=True),
    transforms.CenterCrop((128, 144)),
    transforms.RandomVerticalFlip(),
])
