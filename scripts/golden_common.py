"""golden_common.py - shared by the golden-output generators.

The generators (scripts/golden-*.py) run torchvision/PIL on small,
deterministic test images and write the results as binary PPM/PGM files
plus a manifest, tests/data/golden/<suite>/manifest.tsv, one line per case:

    case<TAB>input<TAB>op<TAB>params<TAB>output

params are name=value pairs separated by ':' (the op's explicit
parameters, so the C test can apply exactly the same operation).  The C
side reads them with tests/unit/golden.h.  Needs /usr/bin/python3 with
numpy and PIL.  The real-photo checks (scripts/compare-filters.py,
scripts/check-recipes.py) share its torchvision helper and KS statistic.
"""
import os

import numpy as np
from PIL import Image


def test_images():
    """Deterministic test inputs: name -> PIL image.

    Odd sizes, both channel counts, smooth regions, edges and noise, so
    interpolation, rounding and border handling are all exercised.
    """
    rng = np.random.default_rng(20261122)
    images = {}
    for name, (w, h, c) in {"rgb67x53": (67, 53, 3), "rgb128x96": (128, 96, 3),
                            "gray41x29": (41, 29, 1), "gray96x128": (96, 128, 1)}.items():
        y, x = np.mgrid[0:h, 0:w].astype(np.float64)
        base = 127.5 + 90 * np.sin(x / 7.0) * np.cos(y / 5.0)
        chans = []
        for k in range(c):
            ch = base + 40 * np.sin((x + 3 * k) / 3.0 + y / 11.0)
            ch[(x // 9 + y // 9) % 4 == k] = 20 + 60 * k  # hard edges
            ch += rng.normal(0, 12, size=ch.shape)
            chans.append(np.clip(np.rint(ch), 0, 255).astype(np.uint8))
        arr = np.stack(chans, axis=-1) if c == 3 else chans[0]
        images[name] = Image.fromarray(arr, "RGB" if c == 3 else "L")
    return images


def save_pnm(img, path):
    """Write an L image as binary PGM (P5) or RGB as binary PPM (P6)."""
    arr = np.asarray(img)
    magic = b"P5" if arr.ndim == 2 else b"P6"
    with open(path, "wb") as f:
        f.write(b"%s\n%d %d\n255\n" % (magic, arr.shape[1], arr.shape[0]))
        f.write(np.ascontiguousarray(arr, dtype=np.uint8).tobytes())


class Suite:
    """Collects the cases of one suite and writes inputs, outputs, manifest."""

    def __init__(self, root, name):
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir, exist_ok=True)
        self.rows = []
        self.inputs = test_images()
        for iname, img in self.inputs.items():
            save_pnm(img, os.path.join(self.dir, iname + self._ext(img)))

    @staticmethod
    def _ext(img):
        return ".pgm" if img.mode == "L" else ".ppm"

    def add(self, case, input_name, op, params, out_img):
        """params: dict of explicit parameters, written as a=b:c=d."""
        out = case + self._ext(out_img)
        save_pnm(out_img, os.path.join(self.dir, out))
        p = ":".join("%s=%s" % (k, v) for k, v in params.items()) or "-"
        src = input_name + self._ext(self.inputs[input_name])
        self.rows.append("\t".join([case, src, op, p, out]))

    def write(self):
        with open(os.path.join(self.dir, "manifest.tsv"), "w") as f:
            f.write("# case\tinput\top\tparams\toutput (see scripts/golden_common.py)\n")
            f.write("\n".join(self.rows) + "\n")


def padded_for_crop(img, size, padding, mode):
    """RandomCrop.forward up to the crop: F.pad, then pad_if_needed."""
    from torchvision.transforms import functional as F
    if padding is not None:
        img = F.pad(img, padding, 0, mode)
    width, height = img.size
    if width < size[1]:
        img = F.pad(img, [size[1] - width, 0], 0, mode)
    if height < size[0]:
        img = F.pad(img, [0, size[0] - height], 0, mode)
    return img


def ks(a, b):
    """Two-sample Kolmogorov-Smirnov statistic D."""
    a, b = np.sort(a), np.sort(b)
    allv = np.concatenate([a, b])
    fa = np.searchsorted(a, allv, side="right") / len(a)
    fb = np.searchsorted(b, allv, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))
