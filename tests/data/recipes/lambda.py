# A Lambda in the recipe: refurb cannot run Python code in the chain.
from torchvision import transforms

transform = transforms.Compose([
    transforms.RandomResizedCrop(64),
    transforms.Lambda(lambda img: img.rotate(90)),
    transforms.ToTensor(),
])
REFUSED = ("Lambda", "transforms[1]")
REASON = "arbitrary Python code cannot run in the C chain"
