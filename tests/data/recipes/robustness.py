# Rotation / affine / perspective robustness training, keyword forms.
from torchvision import transforms as T
from torchvision.transforms import InterpolationMode

transform = T.Compose([
    T.Resize(size=144),
    T.RandomRotation(degrees=15, interpolation=InterpolationMode.BILINEAR, fill=0),
    T.RandomAffine(degrees=0, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=5),
    T.RandomPerspective(distortion_scale=0.2, p=0.5),
    T.CenterCrop(size=128),
    T.RandomApply([T.RandomAdjustSharpness(sharpness_factor=2), T.RandomAutocontrast()], p=0.3),
    T.RandomEqualize(p=0.1),
    T.RandomPosterize(bits=4, p=0.1),
    T.ToTensor(),
])
KS = True
