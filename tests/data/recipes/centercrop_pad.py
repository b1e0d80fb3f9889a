# CenterCrop larger than the image pads with zeros (torchvision's
# behaviour); a uint8 tensor comes out.
from torchvision import transforms

transform = transforms.Compose([
    transforms.Resize(180),
    transforms.CenterCrop(224),
    transforms.PILToTensor(),
])
