# RandomCrop bigger than some images: pad_if_needed with an ImageNet-mean fill.
from torchvision import transforms

transform = transforms.Compose([
    transforms.RandomCrop(256, pad_if_needed=True, fill=(124, 116, 104)),
    transforms.RandomHorizontalFlip(),
    transforms.RandomGrayscale(p=0.1),
])
