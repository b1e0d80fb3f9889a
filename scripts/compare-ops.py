#!/usr/bin/python3
"""compare-ops.py - randomized differential test of rfb_op_apply against
torchvision 0.14's autoaugment._apply_op on PIL 9.4 images.

Usage: scripts/compare-ops.py [--seed S] [--cases N] [--asan]

Builds librefurb's sources (lib/sources.mk) into a shared library under build/compare/ (with
AddressSanitizer and UBSan when --asan is given; then run it as
  LD_PRELOAD="$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
  ASAN_OPTIONS=detect_leaks=0 scripts/compare-ops.py --asan)
and calls it through ctypes on random images (1..89 pixels a side, 1 or
3 channels; noise, gradients or few levels), random ops, magnitudes
(from the RandAugment / TrivialAugmentWide tables or continuous),
interpolations and fill colours.  Prints every mismatch (up to 10) and a
summary; exit status 1 if any case differs.  The golden tests
(scripts/golden-ops.py) are the committed, reproducible subset.
"""

# --help before the imports a machine may lack (torch, torchvision, PIL)
import sys  # noqa: E402
if sys.argv[1:2] in (["-h"], ["--help"]):
    print(__doc__.strip())
    raise SystemExit(0)
import argparse
import ctypes
import os
import subprocess
import sys

import numpy as np
from PIL import Image
from torchvision.transforms import InterpolationMode
from torchvision.transforms import autoaugment as AA

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate",
       "Brightness", "Color", "Contrast", "Sharpness", "Posterize", "Solarize",
       "AutoContrast", "Equalize", "Invert"]  # enum rfb_op order
INTERPS = [InterpolationMode.NEAREST, InterpolationMode.BILINEAR,
           InterpolationMode.BICUBIC]
RANGES = {"ShearX": 1.5, "ShearY": 1.5, "TranslateX": 120, "TranslateY": 120,
          "Rotate": 400, "Brightness": 1.5, "Color": 1.5, "Contrast": 1.5,
          "Sharpness": 1.5}


class RfbImage(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("stride", ctypes.c_size_t),
                ("width", ctypes.c_int), ("height", ctypes.c_int),
                ("channels", ctypes.c_int)]


def sources_mk(what):
    """A list lib/sources.mk gives (lib-src, lib-pkgs, lib-syslibs)."""
    return subprocess.run(["make", "-s", "--no-print-directory", "-f",
                           "lib/sources.mk", what], cwd=ROOT,
                          stdout=subprocess.PIPE, text=True,
                          check=True).stdout.split()


def build_library(asan):
    out_dir = os.path.join(ROOT, "build", "compare")
    os.makedirs(out_dir, exist_ok=True)
    lib = os.path.join(out_dir, "librefurb_ops%s.so" % ("_asan" if asan else ""))
    flags = ["-O1", "-g", "-fsanitize=address,undefined"] if asan else ["-O2"]
    # the sources and libraries of lib/sources.mk, as the Makefile builds
    srcs = [os.path.join(ROOT, f) for f in sources_mk("lib-src")]
    libs = subprocess.run(["pkg-config", "--libs"] + sources_mk("lib-pkgs"),
                          stdout=subprocess.PIPE, text=True,
                          check=True).stdout.split() + sources_mk("lib-syslibs")
    subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-fPIC", "-shared",
                    "-I" + os.path.join(ROOT, "lib", "include")] + flags +
                   ["-o", lib] + srcs + libs, check=True)
    dll = ctypes.CDLL(lib)
    dll.rfb_op_apply.argtypes = [ctypes.c_int, ctypes.c_double, ctypes.c_int,
                                 ctypes.c_void_p, ctypes.POINTER(RfbImage),
                                 ctypes.POINTER(RfbImage), ctypes.c_void_p]
    return dll


def random_image(rng):
    w, h, c = int(rng.integers(1, 90)), int(rng.integers(1, 90)), int(rng.choice([1, 3]))
    kind = int(rng.integers(0, 3))
    if kind == 0:
        arr = rng.integers(0, 256, size=(h, w, c), dtype=np.uint8)
    elif kind == 1:
        y, x = np.mgrid[0:h, 0:w]
        arr = np.stack([(x * (k + 3) + y * (7 - k)) % 256 for k in range(c)], -1)
    else:
        arr = rng.integers(0, 4, size=(h, w, c)) * 60 + 10
    arr = np.ascontiguousarray(arr.astype(np.uint8)[..., 0] if c == 1 else arr.astype(np.uint8))
    return arr, Image.fromarray(arr, "L" if c == 1 else "RGB")


def random_magnitude(rng, op, h, w):
    if rng.random() < 0.5:  # a table value, as the augmenters draw them
        space = (AA.RandAugment()._augmentation_space(31, (h, w)) if rng.random() < 0.5
                 else AA.TrivialAugmentWide()._augmentation_space(31))
        if op in space and space[op][0].ndim:
            m = float(space[op][0][int(rng.integers(0, 31))].item())
            return -m if space[op][1] and rng.random() < 0.5 else m
        return 0.0
    if op in RANGES:
        return float(rng.uniform(-RANGES[op], RANGES[op]))
    if op == "Posterize":
        return float(rng.uniform(0, 8.99))
    if op == "Solarize":
        return float(rng.uniform(-5, 260))
    return 0.0


def run_case(dll, rng):
    arr, img = random_image(rng)
    h, w = arr.shape[:2]
    c = 1 if arr.ndim == 2 else 3
    opi = int(rng.integers(0, len(OPS)))
    op = OPS[opi]
    m = random_magnitude(rng, op, h, w)
    interp = int(rng.choice([0, 0, 1, 2])) if 1 <= opi <= 5 else 0
    fill = [int(v) for v in rng.integers(0, 256, size=c)] if rng.random() < 0.5 else None
    want = np.asarray(AA._apply_op(img, op, m, interpolation=INTERPS[interp], fill=fill))
    got = np.zeros_like(arr)
    src = RfbImage(arr.ctypes.data, w * c, w, h, c)
    dst = RfbImage(got.ctypes.data, w * c, w, h, c)
    fill_c = (ctypes.c_ubyte * 3)(*(fill + [0, 0])[:3]) if fill else None
    rc = dll.rfb_op_apply(opi, m, interp, fill_c, ctypes.byref(src), ctypes.byref(dst), None)
    if rc == 0 and np.array_equal(got, want):
        return None
    diff = "rc %d" % rc if rc else "max diff %d" % np.abs(got.astype(int) - want).max()
    return "%s m=%r interp=%d fill=%s %dx%dx%d: %s" % (op, m, interp, fill, w, h, c, diff)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--asan", action="store_true")
    args = ap.parse_args()
    dll = build_library(args.asan)
    rng = np.random.default_rng(args.seed)
    bad = 0
    for _ in range(args.cases):
        msg = run_case(dll, rng)
        if msg:
            bad += 1
            if bad <= 10:
                print("MISMATCH " + msg)
    print("compare-ops: %d cases, %d mismatches (seed %d)" % (args.cases, bad, args.seed))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
