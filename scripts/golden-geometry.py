#!/usr/bin/python3
"""golden-geometry.py - golden outputs of torchvision 0.14 + PIL for refurb's
geometric filters: resize, center crop, pad + crop, resized crop, flip,
channel conversion and normalize.

    /usr/bin/python3 scripts/golden-geometry.py [ROOT]

writes ROOT/geometry/ (default ROOT: tests/data/golden): the test inputs,
one output per case and manifest.tsv (format in scripts/golden_common.py).
tests/unit/test_resize.c and test_transform.c apply the same operations
with the parameters of each row and compare.  Ops and their params:

  resize       w, h, interp           F.resize(img, [h, w], interp)
  resize_short size, max_size, interp F.resize(img, size, interp, max_size)
  centercrop   h, w                   F.center_crop(img, [h, w])
  padcrop      pl, pt, pr, pb, fill, i, j, h, w
                                      F.crop(F.pad(img, [pl, pt, pr, pb],
                                      fill), i, j, h, w)
  resizedcrop  i, j, h, w, oh, ow, interp
                                      F.resized_crop(img, i, j, h, w,
                                      [oh, ow], interp)
  hflip        -                      F.hflip(img)
  gray         -                      img.convert("L")
  rgb          -                      img.convert("RGB")
  normalize    mean, std (a/b/c)      F.normalize(F.to_tensor(img), mean,
                                      std): output is raw little-endian
                                      float32, CHW
"""
import os
import sys

import numpy as np
import torch
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import Suite  # noqa: E402

INTERP = {"nearest": InterpolationMode.NEAREST,
          "bilinear": InterpolationMode.BILINEAR,
          "bicubic": InterpolationMode.BICUBIC}


def add_resizes(s):
    for name, img in s.inputs.items():
        w0, h0 = img.size
        for interp in INTERP:
            # exact sizes: down, up, mixed, odd, one axis unchanged
            for (w, h) in [(w0 // 2, h0 // 3), (w0 * 2 + 1, h0 + 7),
                           (17, h0 * 3), (w0, h0 // 2 + 1), (5, 3), (w0 - 1, h0)]:
                s.add("resize_%s_%s_%dx%d" % (name, interp, w, h), name, "resize",
                      {"w": w, "h": h, "interp": interp},
                      F.resize(img, [h, w], INTERP[interp]))
            for size, max_size in [(24, 0), (111, 0), (31, 40)]:
                out = F.resize(img, size, INTERP[interp], max_size or None)
                s.add("resize_%s_%s_short%d_max%d" % (name, interp, size, max_size),
                      name, "resize_short",
                      {"size": size, "max_size": max_size, "interp": interp}, out)


def add_crops(s):
    for name, img in s.inputs.items():
        w0, h0 = img.size
        for (h, w) in [(h0 // 2, w0 // 2), (h0 - 1, w0 - 2), (h0 - 3, w0 - 4),
                       (h0 + 5, w0 + 4), (h0 // 2, w0 + 3), (h0 + 1, w0 // 3), (h0, w0)]:
            s.add("centercrop_%s_%dx%d" % (name, h, w), name, "centercrop",
                  {"h": h, "w": w}, F.center_crop(img, [h, w]))
        for (pad, fill, i, j, h, w) in [((4, 4, 4, 4), 0, 0, 0, h0, w0),
                                        ((4, 4, 4, 4), 0, 8, 1, h0, w0),
                                        ((1, 2, 3, 5), 128, 3, 0, h0 - 2, w0 - 1),
                                        ((0, 0, 0, 0), 0, 5, 7, h0 // 2, w0 // 3),
                                        ((6, 0, 2, 9), 255, 9, 8, h0, w0 // 2)]:
            n = 1 if img.mode == "L" else 3
            padded = F.pad(img, list(pad), fill=fill if n == 1 else (fill,) * n)
            s.add("padcrop_%s_%d_%d_%d_%d" % (name, i, j, h, w), name, "padcrop",
                  {"pl": pad[0], "pt": pad[1], "pr": pad[2], "pb": pad[3],
                   "fill": fill, "i": i, "j": j, "h": h, "w": w},
                  F.crop(padded, i, j, h, w))
        for (i, j, h, w, oh, ow, interp) in [(0, 0, h0, w0, 32, 32, "bilinear"),
                                             (3, 5, h0 // 2, w0 // 2, 40, 40, "bilinear"),
                                             (1, 2, h0 - 5, w0 // 3, 24, 30, "bicubic"),
                                             (7, 0, 9, 11, 50, 41, "bilinear"),
                                             (2, 3, h0 - 4, w0 - 6, 16, 16, "nearest")]:
            s.add("resizedcrop_%s_%d_%d_%d_%d_%s" % (name, i, j, h, w, interp), name,
                  "resizedcrop", {"i": i, "j": j, "h": h, "w": w, "oh": oh, "ow": ow,
                                  "interp": interp},
                  F.resized_crop(img, i, j, h, w, [oh, ow], INTERP[interp]))
        s.add("hflip_%s" % name, name, "hflip", {}, F.hflip(img))
        s.add("gray_%s" % name, name, "gray", {}, img.convert("L"))
        s.add("rgb_%s" % name, name, "rgb", {}, img.convert("RGB"))


def add_normalize(s):
    for name, img in s.inputs.items():
        n = 1 if img.mode == "L" else 3
        for mean, std in [([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
                          ([0.5, 0.25, 0.0], [0.5, 2.0, 1.0]), ([0.0] * 3, [1.0] * 3)]:
            mean, std = mean[:n], std[:n]
            t = F.normalize(F.to_tensor(img), mean, std)
            assert t.dtype == torch.float32
            case = "normalize_%s_%s" % (name, "_".join("%g" % m for m in mean))
            out = case + ".f32"
            t.numpy().astype("<f4").tofile(os.path.join(s.dir, out))
            p = "mean=%s:std=%s" % ("/".join(repr(m) for m in mean),
                                    "/".join(repr(v) for v in std))
            src = name + (".pgm" if img.mode == "L" else ".ppm")
            s.rows.append("\t".join([case, src, "normalize", p, out]))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "golden")
    s = Suite(root, "geometry")
    add_resizes(s)
    add_crops(s)
    add_normalize(s)
    s.write()
    print("golden-geometry: %d cases in %s" % (len(s.rows), s.dir))


if __name__ == "__main__":
    main()
