# DINO's DataAugmentationDINO with its default 8 local crops: refused,
# the 96-pixel local crops cannot share a stream with the 224-pixel ones.
from dino_object import DataAugmentationDINO

views = DataAugmentationDINO((0.4, 1.), (0.05, 0.4), 8)
REFUSED = ("views[2] makes 96x96 images, views[0] 224x224",)
REASON = "one stream holds one image size"
