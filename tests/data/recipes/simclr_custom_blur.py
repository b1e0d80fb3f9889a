# SimCLR with the repository's own GaussianBlur class (sthalles/SimCLR's
# data_aug/gaussian_blur.py is an nn.Module-free class of that name): a
# class that only shares torchvision's name must be refused, not read.
import numpy as np
from torchvision import transforms


class GaussianBlur(object):
    """blur a single image on CPU"""

    def __init__(self, kernel_size):
        self.k = kernel_size
        self.r = kernel_size // 2

    def __call__(self, img):
        sigma = np.random.uniform(0.1, 2.0)
        return img  # (the repository convolves with a Conv2d here)


transform = transforms.Compose([transforms.RandomResizedCrop(size=96),
                                transforms.RandomHorizontalFlip(),
                                transforms.RandomApply([transforms.ColorJitter(0.8, 0.8, 0.8, 0.2)], p=0.8),
                                transforms.RandomGrayscale(p=0.2),
                                GaussianBlur(kernel_size=9),
                                transforms.ToTensor()])
REFUSED = ("GaussianBlur", "not torchvision's")
REASON = "a user's own class: refurb cannot know what its __call__ does"
