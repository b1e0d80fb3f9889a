# Test-time FiveCrop: one image becomes five (torchvision's docs' recipe).
import torch
from torchvision import transforms

transform = transforms.Compose([
    transforms.Resize(256),
    transforms.FiveCrop(224),
    transforms.Lambda(lambda crops: torch.stack([transforms.PILToTensor()(c) for c in crops])),
])
REFUSED = ("FiveCrop",)
REASON = "one image to five crops is not a filter of one image"
