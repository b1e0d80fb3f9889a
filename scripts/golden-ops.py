#!/usr/bin/python3
"""golden-ops.py - golden outputs for refurb's augmentation ops.

Writes tests/data/golden/ops/ (see golden_common.py for the layout):

  manifest.tsv    one line per case: torchvision 0.14's
                  autoaugment._apply_op(pil_image, op, magnitude,
                  interpolation, fill) on a test image, params
                  m=<magnitude as _apply_op receives it>[:interp=..][:fill=..]
  magnitudes.tsv  the magnitude tables of RandAugment, TrivialAugmentWide and
                  AutoAugment (torch.linspace float32 values, as bit patterns)
  policies.tsv    AutoAugment's ImageNet, CIFAR-10 and SVHN sub-policies

Usage: scripts/golden-ops.py [OUTDIR]   (default tests/data/golden)
Needs /usr/bin/python3 with numpy, torch, torchvision 0.14, PIL 9.4.
"""

# --help before the imports a machine may lack (torch, torchvision, PIL)
import sys  # noqa: E402
if sys.argv[1:2] in (["-h"], ["--help"]):
    print(__doc__.strip())
    raise SystemExit(0)
import os
import sys

import numpy as np
import torch
from PIL import Image
from torchvision.transforms import InterpolationMode
from torchvision.transforms import autoaugment as AA

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import Suite, save_pnm  # noqa: E402

INTERP = {"nearest": InterpolationMode.NEAREST,
          "bilinear": InterpolationMode.BILINEAR,
          "bicubic": InterpolationMode.BICUBIC}

# Magnitudes as _apply_op receives them (signed), per op.
MAGNITUDES = {
    # 1000 and -500: corners beyond 16.16 fixed point, PIL's double loop
    "ShearX": [0.0, 0.05, 0.3, -0.3, 0.99, -0.99, 1000.0],
    "ShearY": [0.0, -0.05, 0.3, -0.3, 0.99, -0.99, -500.0],
    "TranslateX": [1.0, -7.9, 30.36, -30.36, 100.0],
    "TranslateY": [-1.0, 7.9, 24.02, -24.02, -100.0],
    # 180 + 1 ulp: round(sin, 15) is 0,, PIL's ScaleAffine with a mirror
    "Rotate": [0.0, -0.0, 1.0, 13.5, -13.5, 30.0, -30.0, 45.0, 90.0,
               -90.0, 135.0, -135.0, 180.0, -180.0, 360.0, 1e-13,
               180.00000000000003, -179.99999999999997],
    "Brightness": [0.03, -0.3, 0.9, -0.9, 0.99, -0.99, 2.5],
    "Color": [-0.03, 0.3, 0.9, -0.9, 0.99, -0.99, 2.5],
    "Contrast": [0.03, -0.3, 0.9, -0.9, 0.99, -0.99, 2.5],
    "Sharpness": [-0.03, 0.3, 0.9, -0.9, 0.99, -0.99, 2.5],
    "Posterize": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 6.7],
    "Solarize": [0.0, 1.0, 8.5, 128.0, 246.5, 255.0, 256.0],
    "AutoContrast": [0.0],
    "Equalize": [0.0],
    "Invert": [0.0],
    "Identity": [0.0],
}

# A few cases on the larger images (keeps the committed size small).
BIG_CASES = [("ShearX", 0.3), ("ShearY", -0.3), ("TranslateX", 30.0),
             ("Rotate", 30.0), ("Rotate", 90.0), ("Brightness", 0.9),
             ("Color", -0.9), ("Contrast", 0.5), ("Sharpness", -0.9),
             ("AutoContrast", 0.0), ("Equalize", 0.0)]

FILTERED_CASES = [("ShearX", 0.3), ("ShearY", -0.99), ("TranslateX", 7.0),
                  ("Rotate", 30.0), ("Rotate", -13.5), ("Rotate", 90.0),
                  ("Rotate", 180.0)]


def pattern(w, h, c, seed):
    """Like golden_common.test_images: smooth, edges and noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    chans = []
    for k in range(c):
        ch = 127.5 + 100 * np.sin(x / 5.0 + k) * np.cos(y / 4.0)
        ch[(x // 7 + y // 5) % 3 == k] = 240 - 70 * k
        ch += rng.normal(0, 10, size=ch.shape)
        chans.append(np.clip(np.rint(ch), 0, 255).astype(np.uint8))
    arr = np.stack(chans, axis=-1) if c == 3 else chans[0]
    return Image.fromarray(arr, "RGB" if c == 3 else "L")


def extra_images():
    """Square images (Rotate's 90/270 shortcut), constant, sparse, tiny."""
    ims = {"rgb64x64": pattern(64, 64, 3, 1), "gray33x33": pattern(33, 33, 1, 2),
           "rgbconst9x7": Image.new("RGB", (9, 7), (100, 50, 200)),
           "grayconst5x4": Image.new("L", (5, 4), 77),
           "rgb1x1": Image.new("RGB", (1, 1), (3, 130, 250)),
           "gray2x5": pattern(2, 5, 1, 3), "rgb3x3": pattern(3, 3, 3, 4),
           "rgb7x2": pattern(7, 2, 3, 5)}
    # few distinct levels: equalize's step and autocontrast's range
    sparse = np.array(pattern(23, 19, 3, 6)) // 64 * 60 + 20
    sparse[..., 2] = 90
    sparse[0, 0, 2] = 91
    ims["rgbsparse23x19"] = Image.fromarray(sparse.astype(np.uint8), "RGB")
    two = np.full((11, 13), 40, np.uint8)
    two[3:, 5:] = 41
    ims["graytwo13x11"] = Image.fromarray(two, "L")
    return ims


NAMES = set()


def fmt(v):
    return repr(float(v))


def case_name(op, m, img, interp="nearest", fill=None):
    sign = "m" if np.signbit(m) else "p"
    mag = repr(abs(float(m))).replace(".0e", "e").replace("-", "m")
    mag = (mag[:-2] if mag.endswith(".0") else mag).replace(".", "_")
    name = "%s_%s%s_%s" % (op.lower(), sign, mag, img)
    if interp != "nearest":
        name += "_" + interp
    if fill is not None:
        name += "_fill"
    return name


def add_case(suite, op, m, iname, interp="nearest", fill=None):
    img = suite.inputs[iname]
    out = AA._apply_op(img, op, float(m), interpolation=INTERP[interp], fill=fill)
    assert out.mode == img.mode and out.size == img.size
    name = case_name(op, m, iname, interp, fill)
    assert name not in NAMES, name
    NAMES.add(name)
    params = {"m": fmt(m)}
    if interp != "nearest":
        params["interp"] = interp
    if fill is not None:
        params["fill"] = ",".join(str(int(v)) for v in fill)
    suite.add(name, iname, op, params, out)


def ops_cases(suite):
    small = ["rgb67x53", "gray41x29"]
    for op, mags in MAGNITUDES.items():
        for m in mags:
            for iname in small:
                add_case(suite, op, m, iname)
    for op, m in BIG_CASES:
        for iname in ["rgb128x96", "gray96x128"]:
            add_case(suite, op, m, iname)
    for m in [90.0, -90.0, 270.0, 180.0, 30.0]:
        for iname in ["rgb64x64", "gray33x33"]:
            add_case(suite, "Rotate", m, iname)
    for interp in ["bilinear", "bicubic"]:
        for op, m in FILTERED_CASES:
            for iname in small:
                add_case(suite, op, m, iname, interp)
    for op, m in [("ShearX", 0.3), ("TranslateY", -7.0), ("Rotate", 30.0)]:
        add_case(suite, op, m, "rgb67x53", fill=[10, 200, 30])
        add_case(suite, op, m, "gray41x29", fill=[128])
        add_case(suite, op, m, "rgb67x53", "bilinear", fill=[10, 200, 30])
    degenerate = ["rgbconst9x7", "grayconst5x4", "rgb1x1", "gray2x5", "rgb3x3",
                  "rgb7x2", "rgbsparse23x19", "graytwo13x11"]
    for iname in degenerate:
        for op, m in [("AutoContrast", 0.0), ("Equalize", 0.0), ("Contrast", 0.5),
                      ("Contrast", -0.9), ("Sharpness", 0.9), ("Color", 0.9),
                      ("Brightness", 0.5), ("ShearX", 0.3), ("Rotate", 30.0),
                      ("Rotate", 90.0), ("TranslateX", 1.0), ("Solarize", 128.0)]:
            add_case(suite, op, m, iname)


def magnitude_rows():
    """space, op, num_bins, width, height, signed, then the table: the
    float32 bit patterns of bins 0..num_bins-1 as 8 hex digits, ','."""
    rows = []
    sizes = [(67, 53), (224, 224), (331, 331), (1000, 37)]
    ra, ta, aa = AA.RandAugment(), AA.TrivialAugmentWide(), AA.AutoAugment()
    spaces = [("randaug", [31, 10, 2, 3, 7, 16, 64],
               lambda n, h, w: ra._augmentation_space(n, (h, w))),
              ("trivialaug", [31, 2, 5, 16, 64], lambda n, h, w: ta._augmentation_space(n)),
              ("autoaug", [10], lambda n, h, w: aa._augmentation_space(n, (h, w)))]
    for space, bins_list, make in spaces:
        for n in bins_list:
            for si, (w, h) in enumerate(sizes):
                for op, (table, signed) in make(n, h, w).items():
                    if table.ndim == 0 or (si > 0 and not op.startswith("Translate")):
                        continue
                    bits = np.array([float(v) for v in table.tolist()],
                                    dtype=np.float32).view(np.uint32)
                    rows.append("%s\t%s\t%d\t%d\t%d\t%d\t%s" % (
                        space, op, n, w, h, int(signed),
                        ",".join("%08x" % b for b in bits)))
    return rows


def policy_rows():
    rows = []
    for name, pol in [("imagenet", AA.AutoAugmentPolicy.IMAGENET),
                      ("cifar10", AA.AutoAugmentPolicy.CIFAR10),
                      ("svhn", AA.AutoAugmentPolicy.SVHN)]:
        for i, sub in enumerate(AA.AutoAugment(pol).policies):
            cells = [name, str(i)]
            for op, p, mid in sub:
                cells += [op, repr(p), "-" if mid is None else str(mid)]
            rows.append("\t".join(cells))
    return rows


def write_rows(path, header, rows):
    with open(path, "w") as f:
        f.write(header + "\n")
        f.write("\n".join(rows) + "\n")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "tests/data/golden"
    torch.set_num_threads(1)
    suite = Suite(root, "ops")
    for iname, img in extra_images().items():
        suite.inputs[iname] = img
        save_pnm(img, os.path.join(suite.dir, iname + suite._ext(img)))
    ops_cases(suite)
    suite.write()
    write_rows(os.path.join(suite.dir, "magnitudes.tsv"),
               "# space\top\tnum_bins\twidth\theight\tsigned\tfloat32 bits of each bin", magnitude_rows())
    write_rows(os.path.join(suite.dir, "policies.tsv"),
               "# policy\tindex\top1\tp1\tbin1\top2\tp2\tbin2", policy_rows())
    print("golden-ops: %d cases in %s" % (len(suite.rows), suite.dir))


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    main()
