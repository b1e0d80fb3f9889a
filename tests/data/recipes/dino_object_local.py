# DINO's DataAugmentationDINO with its default 8 local crops, taken whole:
# two view groups in one stream (2 x 224 global, 8 x 96 local crops).
from dino_object import DataAugmentationDINO

views = DataAugmentationDINO((0.4, 1.), (0.05, 0.4), 8)
