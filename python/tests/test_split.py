"""The split of a recipe: refurb_stream.split (the converter's) and
refurb_stream.multicrop (recipe_from_torchvision's) give one answer."""
import unittest

from refurb_stream.multicrop import split_views
from refurb_stream.split import propose_split

RRC = "rrcrop=96x96:scale=0.2-1:ratio=0.75-1.3333333333333333:interp=bilinear"


class SplitTest(unittest.TestCase):
    def test_cached_center_crop_then_flip(self):
        # the final part starts with a center crop to the cached size
        specs = ["resize=40:interp=bilinear,centercrop=32x32,flip=p=0.5"] * 2
        self.assertEqual(split_views(specs),
                         ("resize=40:interp=bilinear,centercrop=32x32",
                          ["centercrop=32x32,flip=p=0.5"] * 2))
        s = propose_split(specs)
        self.assertEqual((s.partial, s.finals), split_views(specs))

    def test_crop_first_caches_the_decode(self):
        # recipe_from_torchvision keeps the photo's resolution ('' partial);
        # the converter's proposal inserts a resize; the finals are one
        specs = [RRC + ",flip=p=0.5", RRC + ",solarize=threshold=128:p=0.2"]
        partial, finals = split_views(specs)
        self.assertEqual(partial, "")
        self.assertEqual(finals, specs)
        s = propose_split(specs)
        self.assertEqual((s.inserted, s.finals), ("resize=110", finals))

    def test_pad_is_cached_like_a_resize(self):
        specs = ["resize=32x32,pad=4,crop=32x32"] * 2
        self.assertEqual(split_views(specs), ("resize=32x32,pad=4", ["crop=32x32"] * 2))


if __name__ == "__main__":
    unittest.main()
