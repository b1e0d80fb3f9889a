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

and rrcrop_stats.tsv: statistics of RandomResizedCrop.get_params (see
add_rrcrop_stats).
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
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode, RandomResizedCrop

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


def rrcrop_fallback(w, h, ratio):
    in_ratio = w / h
    if in_ratio < min(ratio):
        cw, ch = w, int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        ch, cw = h, int(round(h * max(ratio)))
    else:
        cw, ch = w, h
    return (h - ch) // 2, (w - cw) // 2, ch, cw


def add_rrcrop_stats(s, draws=20000):
    """Statistics of RandomResizedCrop.get_params over many draws, for
    test_transform.c to compare its own draws with: per image size the
    mean and standard deviation of the area fraction, of log(w / h) and of
    the relative row offset, and the fraction of fallback rectangles."""
    torch.manual_seed(20261122)
    scale, ratio = (0.08, 1.0), (3.0 / 4.0, 4.0 / 3.0)
    rows = ["# W\tH\tscale\tratio\tdraws\tarea_mean\tarea_std\tlogr_mean"
            "\tlogr_std\ttop_mean\tfallback_frac"]
    for (w, h) in [(500, 375), (64, 64), (40, 300), (1000, 10)]:
        img = torch.zeros(1, h, w)
        fb = rrcrop_fallback(w, h, ratio)
        area, logr, top, nfb = [], [], [], 0
        for _ in range(draws):
            i, j, ch, cw = RandomResizedCrop.get_params(img, list(scale), list(ratio))
            assert 0 <= i <= h - ch and 0 <= j <= w - cw
            area.append(ch * cw / (w * h))
            logr.append(np.log(cw / ch))
            if h > ch:
                top.append(i / (h - ch))
            nfb += (i, j, ch, cw) == fb
        rows.append("\t".join(str(v) for v in [
            w, h, "%g-%g" % scale, "%r-%r" % ratio, draws, np.mean(area), np.std(area),
            np.mean(logr), np.std(logr), np.mean(top) if top else 0.5, nfb / draws]))
    with open(os.path.join(s.dir, "rrcrop_stats.tsv"), "w") as f:
        f.write("\n".join(rows) + "\n")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "golden")
    s = Suite(root, "geometry")
    add_resizes(s)
    add_crops(s)
    add_normalize(s)
    add_rrcrop_stats(s)
    s.write()
    print("golden-geometry: %d cases in %s" % (len(s.rows), s.dir))


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    main()
