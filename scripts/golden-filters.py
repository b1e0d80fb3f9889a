#!/usr/bin/python3
"""golden-filters.py - golden outputs for refurb's single-transform filters.

Writes tests/data/golden/filters/ (layout in golden_common.py): each case
is a torchvision 0.14 transform with its random ranges collapsed to one
value (and p=1), applied to a test image; the manifest's op column holds
the refurb pipeline spec that must give the same image (tests/unit/
test_filters.c runs it: >= 99% of the samples within +-1, MAE <= 0.5).
scripts/compare-filters.py runs the same comparison on real photos, and
the random ranges' distributions (KS).

Usage: scripts/golden-filters.py [OUTDIR]   (default tests/data/golden)
Needs /usr/bin/python3 with numpy, torch, torchvision 0.14, PIL 9.4.
"""

# --help before the imports a machine may lack (torch, torchvision, PIL)
import sys  # noqa: E402
if sys.argv[1:2] in (["-h"], ["--help"]):
    print(__doc__.strip())
    raise SystemExit(0)
import os
import sys

import torch
from torchvision import transforms as T
from torchvision.transforms import InterpolationMode as IM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import Suite, padded_for_crop  # noqa: E402

# (case, spec, transform, on gray images too)
CASES = [
    ("brightness", "colorjitter=brightness=1.3-1.3", T.ColorJitter(brightness=(1.3, 1.3)), True),
    ("contrast", "colorjitter=contrast=0.6-0.6", T.ColorJitter(contrast=(0.6, 0.6)), True),
    ("saturation", "colorjitter=saturation=1.7-1.7", T.ColorJitter(saturation=(1.7, 1.7)), True),
    ("hue_p0_1", "colorjitter=hue=0.1-0.1", T.ColorJitter(hue=(0.1, 0.1)), True),
    ("hue_m0_3", "colorjitter=hue=-0.3--0.3", T.ColorJitter(hue=(-0.3, -0.3)), False),
    ("hue_p0_5", "colorjitter=hue=0.5-0.5", T.ColorJitter(hue=(0.5, 0.5)), False),
    ("grayscale", "grayscale=p=1", T.RandomGrayscale(p=1.0), True),
    ("gaussblur9", "gaussblur=kernel_size=9:sigma=1.5", T.GaussianBlur(9, (1.5, 1.5)), True),
    ("gaussblur23x5", "gaussblur=kernel_size=23x5:sigma=3.1-3.1",
     T.GaussianBlur((5, 23), (3.1, 3.1)), False),
    ("gaussblur3", "gaussblur=kernel_size=3:sigma=0.1", T.GaussianBlur(3, (0.1, 0.1)), True),
    ("vflip", "vflip=p=1", T.RandomVerticalFlip(p=1.0), True),
    ("solarize", "solarize=threshold=128:p=1", T.RandomSolarize(128, p=1.0), True),
    ("posterize", "posterize=bits=3:p=1", T.RandomPosterize(3, p=1.0), True),
    ("equalize", "equalize=p=1", T.RandomEqualize(p=1.0), True),
    ("autocontrast", "autocontrast=p=1", T.RandomAutocontrast(p=1.0), True),
    ("sharpness", "sharpness=factor=2:p=1", T.RandomAdjustSharpness(2, p=1.0), True),
    ("invert", "invert=p=1", T.RandomInvert(p=1.0), True),
    ("rotation30", "rotation=degrees=30-30", T.RandomRotation((30, 30)), True),
    ("rotation_bilinear_fill", "rotation=degrees=-12.5--12.5:interpolation=bilinear:fill=10/20/30",
     T.RandomRotation((-12.5, -12.5), interpolation=IM.BILINEAR, fill=(10, 20, 30)), False),
    ("affine", "affine=degrees=15-15:scale=1.2-1.2:shear=10-10",
     T.RandomAffine((15, 15), scale=(1.2, 1.2), shear=(10, 10)), True),
    ("affine_bilinear", "affine=degrees=-20--20:scale=0.8-0.8:shear=-5--5/7-7:interpolation=bilinear",
     T.RandomAffine((-20, -20), scale=(0.8, 0.8), shear=(-5, -5, 7, 7),
                    interpolation=IM.BILINEAR), True),
    ("apply_p1", "apply=p=1,colorjitter=brightness=0.8-0.8",
     T.RandomApply([T.ColorJitter(brightness=(0.8, 0.8))], p=1.0), True),
    ("apply_p0", "apply=p=0:n=2,invert=p=1,vflip=p=1",
     T.RandomApply([T.RandomInvert(p=1.0), T.RandomVerticalFlip(p=1.0)], p=0.0), True),
    ("rotation_expand", "rotation=degrees=30-30:expand=1", T.RandomRotation((30, 30), expand=True),
     True),
    ("rotation_expand_bilinear", "rotation=degrees=-100--100:expand=1:interpolation=bilinear:"
     "fill=10/20/30", T.RandomRotation((-100, -100), expand=True, interpolation=IM.BILINEAR,
                                       fill=(10, 20, 30)), False),
    ("rotation_expand90", "rotation=degrees=90-90:expand=1", T.RandomRotation((90, 90), expand=True),
     True),
    ("rotation_expand270", "rotation=degrees=-90--90:expand=1",
     T.RandomRotation((-90, -90), expand=True), True),
    ("rotation_center", "rotation=degrees=25-25:center=10/7", T.RandomRotation((25, 25), center=(10, 7)),
     True),
    ("rotation_center_expand", "rotation=degrees=-40--40:expand=1:center=0/0:interpolation=bicubic",
     T.RandomRotation((-40, -40), expand=True, center=(0, 0), interpolation=IM.BICUBIC), True),
    ("rotation_center180", "rotation=degrees=180-180:center=5.5/5", T.RandomRotation((180, 180),
                                                                               center=(5.5, 5)), True),
    ("affine_center", "affine=degrees=15-15:scale=1.2-1.2:shear=10-10:center=3/40",
     T.RandomAffine((15, 15), scale=(1.2, 1.2), shear=(10, 10), center=(3, 40)), True),
    ("affine_center_bilinear", "affine=degrees=-30--30:translate=0/0:center=60.5/2:interpolation=bilinear",
     T.RandomAffine((-30, -30), translate=(0, 0), center=(60.5, 2), interpolation=IM.BILINEAR), True),
    ("choice_collapsed", "choice=3:p=0/1/0,vflip=1,colorjitter=brightness=1.3-1.3,invert=1",
     T.RandomChoice([T.RandomVerticalFlip(1.0), T.ColorJitter(brightness=(1.3, 1.3)),
                     T.RandomInvert(1.0)], p=[0, 1, 0]), True),
    ("choice_group", "choice=2:p=0/1:layers=1/2,vflip=1,rotation=10-10,invert=1",
     T.RandomChoice([T.RandomVerticalFlip(1.0), T.Compose([T.RandomRotation((10, 10)),
                                                          T.RandomInvert(1.0)])], p=[0, 1]), True),
    ("choice_resize", "choice=2:p=0/1:layers=1/2,centercrop=40,resize=50,centercrop=40",
     T.RandomChoice([T.CenterCrop(40), T.Compose([T.Resize(50), T.CenterCrop(40)])], p=[0, 1]),
     True),
    ("apply_resize", "apply=1,resize=30", T.RandomApply([T.Resize(30)], p=1.0), True),
    ("order_one", "order=1,rotation=15-15", T.RandomOrder([T.RandomRotation((15, 15))]), True),
    ("pad_reflect", "pad=5/3/70/2:padding_mode=reflect",
     T.Pad((5, 3, 70, 2), padding_mode="reflect"), True),
    ("pad_symmetric", "pad=padding=9/40:mode=symmetric", T.Pad((9, 40), padding_mode="symmetric"),
     True),
    ("pad_edge", "pad=4:padding_mode=edge", T.Pad(4, padding_mode="edge"), True),
    ("pad_constant", "pad=3/1/4/1:fill=10/20/30", T.Pad((3, 1, 4, 1), fill=(10, 20, 30)), False),
    ("jitter_chain", "colorjitter=brightness=1.2-1.2,colorjitter=saturation=0.5-0.5,"
     "colorjitter=hue=0.2-0.2", T.Compose([T.ColorJitter(brightness=(1.2, 1.2)),
                                          T.ColorJitter(saturation=(0.5, 0.5)),
                                          T.ColorJitter(hue=(0.2, 0.2))]), False),
]


# F.perspective(img, startpoints, endpoints, interpolation, fill) with
# fixed corner points (RandomPerspective's draws are the pipeline's; its
# map is checked here through rfb_perspective): the op column is
# "perspective", params the 8 end coordinates, interp and fill.
PERSPECTIVE = [
    ((3, 2, 60, 4, 64, 50, 1, 47), "nearest", 0),
    ((10, 8, 55, 1, 66, 52, 0, 40), "bilinear", 0),
    ((0, 0, 66, 5, 50, 52, 12, 44), "bicubic", 77),
]


def perspective_cases(suite):
    from torchvision.transforms import functional as F
    modes = {"nearest": IM.NEAREST, "bilinear": IM.BILINEAR, "bicubic": IM.BICUBIC}
    for k, (end, interp, fill) in enumerate(PERSPECTIVE):
        for iname in ["rgb67x53", "gray41x29"]:
            img = suite.inputs[iname]
            w, h = img.size
            # scale the points (made for 67 x 53) to the image
            e = [(round(end[2 * i] * (w - 1) / 66), round(end[2 * i + 1] * (h - 1) / 52))
                 for i in range(4)]
            start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
            out = F.perspective(img, start, [list(p) for p in e], modes[interp], fill=fill)
            params = {"end": "/".join("%d/%d" % p for p in e), "interp": interp,
                      "fill": str(fill)}
            suite.add("perspective%d_%s" % (k, iname), iname, "perspective", params, out)


# RandomCrop(size, padding, padding_mode) with the crop as large as the
# padded image (no draw): (case, image, spec, transform)
CROPS = [
    ("crop_reflect", "rgb67x53", "crop=59x77:padding=5/3:padding_mode=reflect",
     T.RandomCrop((59, 77), padding=(5, 3), padding_mode="reflect")),
    ("crop_symmetric", "gray41x29", "crop=31x45:pad=2/1:padding_mode=symmetric",
     T.RandomCrop((31, 45), padding=(2, 1), padding_mode="symmetric")),
    ("crop_edge", "rgb128x96", "crop=98x130:pad=1:padding_mode=edge",
     T.RandomCrop(size=(98, 130), padding=1, padding_mode="edge")),
]

# RandomCrop with pad_if_needed draws the crop's place: the output is a
# "window" of the image torchvision pads before cropping, which is what
# these cases hold (tests/unit/test_filters.c finds the window).
WINDOWS = [
    ("window_reflect", "rgb67x53", "crop=150x100:padding=3:padding_mode=reflect:pad_if_needed=1",
     (150, 100), 3, "reflect"),
    ("window_symmetric", "gray41x29", "crop=40x90:pad=1/2:padding_mode=symmetric:pad_if_needed=1",
     (40, 90), (1, 2), "symmetric"),
    ("window_edge", "rgb128x96", "crop=99x129:padding_mode=edge:pad_if_needed=1",
     (99, 129), None, "edge"),
]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "golden")
    suite = Suite(root, "filters")
    torch.manual_seed(0)
    for case, spec, tv, gray_too in CASES:
        for iname in ["rgb67x53", "rgb128x96", "gray41x29"]:
            if iname.startswith("gray") and not gray_too:
                continue
            out = tv(suite.inputs[iname])
            suite.add("%s_%s" % (case, iname), iname, spec, {}, out)
    for case, iname, spec, tv in CROPS:
        suite.add(case, iname, spec, {}, tv(suite.inputs[iname]))
    for case, iname, spec, size, padding, mode in WINDOWS:
        out = padded_for_crop(suite.inputs[iname], size, padding, mode)
        suite.add(case, iname, spec, {"window": "1"}, out)
    perspective_cases(suite)
    suite.write()
    print("%d cases in %s" % (len(suite.rows), suite.dir))


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    main()
