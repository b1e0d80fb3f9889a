# Resize to an exact (h, w) tuple with nearest interpolation, then a
# PILToTensor output (uint8), as segmentation-style code writes it.
from torchvision import transforms
from torchvision.transforms import InterpolationMode

transform = transforms.Compose([
    transforms.Resize((120, 160), InterpolationMode.NEAREST),
    transforms.RandomHorizontalFlip(p=0.5),
    transforms.PILToTensor(),
])
