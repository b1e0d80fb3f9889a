# SimCLR (sthalles/SimCLR's get_simclr_pipeline_transform with s = 1 and
# n_views = 2), with torchvision's GaussianBlur for the repository's own.
from torchvision import transforms


def get_simclr_pipeline_transform(size, s=1):
    color_jitter = transforms.ColorJitter(0.8 * s, 0.8 * s, 0.8 * s, 0.2 * s)
    return transforms.Compose([transforms.RandomResizedCrop(size=size),
                               transforms.RandomHorizontalFlip(),
                               transforms.RandomApply([color_jitter], p=0.8),
                               transforms.RandomGrayscale(p=0.2),
                               transforms.GaussianBlur(kernel_size=9),
                               transforms.ToTensor()])


base = get_simclr_pipeline_transform(96)
views = [base for _ in range(2)]
KS = True
