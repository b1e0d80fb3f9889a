#!/usr/bin/python3
"""compare-filters.py - refurb's single-transform filters against
torchvision 0.14 on real photos.

Usage: scripts/compare-filters.py [--photos N] [--draws K] [--only NAME]
                                  [PHOTO.jpg ...]

Builds lib/*/*.c into a shared library (build/compare/, as
scripts/compare-ops.py does) and runs each pipeline spec through
rfb_pipeline_parse + rfb_pipe_run on photos decoded by PIL (the same
RGB pixels torchvision gets), scaled to about 500x375 as ordinary
dataset photos are.  Two kinds of check:

  pixels  the spec's random ranges collapsed to one value (p=1,
          brightness=1.3-1.3, rotation degrees 30-30, ...) against the
          torchvision transform so collapsed: >= 99% of the samples
          within +-1 on every photo (and the mean absolute error);
          AugMix with its draws fixed (every op alone, then random
          chains and weights) through rfb_augmix_apply;
  KS      refurb's Dirichlet sampler against numpy's (each component);
  KS      the default (random) ranges: K draws of refurb (seeds) and K of
          torchvision (torch.manual_seed) on one photo, two-sample
          Kolmogorov-Smirnov on two statistics of each output (the mean
          sample, the mean of the top-left quarter; for augmix also the
          mean absolute change from the input): D below the 0.001
          critical value.

Without photos on the command line it takes N (default 8) from
scripts/fetch-photos --min-side 224.  Prints one line per case and a
summary; exit status 1 if any case fails.
"""

# --help before the imports a machine may lack (torch, torchvision, PIL)
import sys  # noqa: E402
if sys.argv[1:2] in (["-h"], ["--help"]):
    print(__doc__.strip())
    raise SystemExit(0)
import argparse
import ctypes
import importlib.util
import math
import os
import subprocess
import sys

import numpy as np
import torch
from PIL import Image
from torchvision import transforms as T
from torchvision.transforms import InterpolationMode as IM
from torchvision.transforms import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import ks, padded_for_crop  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class RfbImage(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("stride", ctypes.c_size_t),
                ("width", ctypes.c_int), ("height", ctypes.c_int),
                ("channels", ctypes.c_int)]


class PipeKey(ctypes.Structure):
    _fields_ = [("seed", ctypes.c_uint64), ("epoch", ctypes.c_uint32),
                ("sample", ctypes.c_uint32), ("stage_base", ctypes.c_uint32)]


class PipeOut(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("layout", ctypes.c_int),
                ("width", ctypes.c_int), ("height", ctypes.c_int),
                ("channels", ctypes.c_int), ("img", RfbImage),
                ("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


def load_library():
    spec = importlib.util.spec_from_file_location(
        "compare_ops", os.path.join(ROOT, "scripts", "compare-ops.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dll = mod.build_library(False)
    dll.rfb_pipeline_parse.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                       ctypes.c_void_p]
    dll.rfb_pipe_ctx_new.restype = ctypes.c_void_p
    dll.rfb_pipe_ctx_new.argtypes = [ctypes.c_void_p]
    dll.rfb_pipe_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.POINTER(RfbImage), ctypes.POINTER(PipeKey),
                                 ctypes.POINTER(PipeOut), ctypes.c_void_p]
    dll.rfb_pipeline_free.argtypes = [ctypes.c_void_p]
    dll.rfb_perspective.argtypes = [ctypes.POINTER(RfbImage), ctypes.POINTER(RfbImage),
                                    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                    ctypes.c_void_p, ctypes.c_void_p]
    return dll


class Refurb:
    def __init__(self, dll):
        self.dll = dll
        self.err = ctypes.create_string_buffer(4096)
        self.ctx = dll.rfb_pipe_ctx_new(self.err)

    def message(self):
        return self.err.raw[4 + 512:4 + 512 + 1024].split(b"\0")[0].decode()

    def parse(self, spec):
        p = ctypes.c_void_p()
        if self.dll.rfb_pipeline_parse(spec.encode(), ctypes.byref(p), self.err):
            raise ValueError(self.message())
        return p

    def run(self, pipe, arr, seed=1, sample=0):
        arr = np.ascontiguousarray(arr)
        h, w = arr.shape[:2]
        c = 1 if arr.ndim == 2 else arr.shape[2]
        img = RfbImage(arr.ctypes.data, w * c, w, h, c)
        key = PipeKey(seed, 0, sample, 0)
        out = PipeOut()
        if self.dll.rfb_pipe_run(self.ctx, pipe, ctypes.byref(img), ctypes.byref(key),
                                 ctypes.byref(out), self.err):
            raise RuntimeError(self.message())
        n = out.height * out.width * out.channels
        if out.dtype == 1:  # RFB_DTYPE_F32: CHW after normalize, as a CHW array
            res = np.ctypeslib.as_array(ctypes.cast(out.data, ctypes.POINTER(ctypes.c_float)),
                                        shape=(n,)).copy()
            return res.reshape(out.channels, out.height, out.width)
        res = np.ctypeslib.as_array(ctypes.cast(out.data, ctypes.POINTER(ctypes.c_uint8)),
                                    shape=(n,)).copy()
        return res.reshape(out.height, out.width, out.channels).squeeze()


# (name, refurb spec with collapsed ranges, torchvision transform)
PIXEL_CASES = [
    ("brightness", "colorjitter=brightness=1.3-1.3", T.ColorJitter(brightness=(1.3, 1.3))),
    ("contrast", "colorjitter=contrast=0.6-0.6", T.ColorJitter(contrast=(0.6, 0.6))),
    ("saturation", "colorjitter=saturation=1.7-1.7", T.ColorJitter(saturation=(1.7, 1.7))),
    ("hue+", "colorjitter=hue=0.1-0.1", T.ColorJitter(hue=(0.1, 0.1))),
    ("hue-", "colorjitter=hue=-0.3--0.3", T.ColorJitter(hue=(-0.3, -0.3))),
    ("grayscale", "grayscale=p=1", T.RandomGrayscale(p=1.0)),
    ("gaussblur9", "gaussblur=kernel_size=9:sigma=1.5", T.GaussianBlur(9, (1.5, 1.5))),
    ("gaussblur23x5", "gaussblur=kernel_size=23x5:sigma=3.1-3.1", T.GaussianBlur((5, 23), (3.1, 3.1))),
    ("vflip", "vflip=p=1", T.RandomVerticalFlip(p=1.0)),
    ("solarize", "solarize=threshold=128:p=1", T.RandomSolarize(128, p=1.0)),
    ("posterize", "posterize=bits=3:p=1", T.RandomPosterize(3, p=1.0)),
    ("equalize", "equalize=p=1", T.RandomEqualize(p=1.0)),
    ("autocontrast", "autocontrast=p=1", T.RandomAutocontrast(p=1.0)),
    ("sharpness", "sharpness=factor=2:p=1", T.RandomAdjustSharpness(2, p=1.0)),
    ("invert", "invert=p=1", T.RandomInvert(p=1.0)),
    ("rotation30", "rotation=degrees=30-30", T.RandomRotation((30, 30))),
    ("rotation-bilinear", "rotation=degrees=-12.5--12.5:interpolation=bilinear:fill=10/20/30",
     T.RandomRotation((-12.5, -12.5), interpolation=IM.BILINEAR, fill=(10, 20, 30))),
    ("affine", "affine=degrees=15-15:scale=1.2-1.2:shear=10-10",
     T.RandomAffine((15, 15), scale=(1.2, 1.2), shear=(10, 10))),
    ("affine-bilinear", "affine=degrees=-20--20:scale=0.8-0.8:shear=-5--5/7-7:interpolation=bilinear",
     T.RandomAffine((-20, -20), scale=(0.8, 0.8), shear=(-5, -5, 7, 7), interpolation=IM.BILINEAR)),
    ("apply", "apply=p=1,colorjitter=brightness=0.8-0.8",
     T.RandomApply([T.ColorJitter(brightness=(0.8, 0.8))], p=1.0)),
    ("erasing-all", "erasing=p=1:scale=0.1-0.1:ratio=1-1:value=0", None),
    ("rotation-expand", "rotation=degrees=30-30:expand=1",
     T.RandomRotation((30, 30), expand=True)),
    ("rotation-expand-bilinear", "rotation=degrees=-107.5--107.5:expand=1:interpolation=bilinear:fill=1/2/3",
     T.RandomRotation((-107.5, -107.5), expand=True, interpolation=IM.BILINEAR, fill=(1, 2, 3))),
    ("rotation-expand90", "rotation=degrees=90-90:expand=1", T.RandomRotation((90, 90), expand=True)),
    ("rotation-center", "rotation=degrees=20-20:center=100/30", T.RandomRotation((20, 20), center=(100, 30))),
    ("rotation-center-expand", "rotation=degrees=-45--45:expand=1:center=0/0:interpolation=bicubic",
     T.RandomRotation((-45, -45), expand=True, center=(0, 0), interpolation=IM.BICUBIC)),
    ("affine-center", "affine=degrees=15-15:scale=1.2-1.2:shear=10-10:center=30/200",
     T.RandomAffine((15, 15), scale=(1.2, 1.2), shear=(10, 10), center=(30, 200))),
    ("choice-collapsed", "choice=3:p=0/1/0,vflip=1,colorjitter=brightness=1.3-1.3,invert=1",
     T.RandomChoice([T.RandomVerticalFlip(1.0), T.ColorJitter(brightness=(1.3, 1.3)),
                     T.RandomInvert(1.0)], p=[0, 1, 0])),
    ("pad-reflect", "pad=7/3/300/2:padding_mode=reflect",
     T.Pad((7, 3, 300, 2), padding_mode="reflect")),
    ("pad-symmetric", "pad=20/9:padding_mode=symmetric", T.Pad((20, 9), padding_mode="symmetric")),
    ("pad-edge", "pad=5:padding_mode=edge", T.Pad(5, padding_mode="edge")),
    ("pad-constant", "pad=4:fill=9/8/7", T.Pad(4, fill=(9, 8, 7))),
]

# RandomOrder with its ranges collapsed: every output must be (within
# +-1 on 99% of the values) torchvision's output for one of the orders
ORDER_OPS = [T.ColorJitter(brightness=(1.3, 1.3)), T.RandomSolarize(100, p=1.0),
             T.RandomRotation((20, 20), interpolation=IM.BILINEAR)]
ORDER_CASES = [
    ("order-3", "order=3,colorjitter=brightness=1.3-1.3,solarize=threshold=100:p=1,"
     "rotation=degrees=20-20:interpolation=bilinear", ORDER_OPS),
]

# RandomCrop with padding modes: its output must be a window of the image
# torchvision pads before its random crop (name, spec, size, padding, mode)
WINDOW_CASES = [
    ("crop-reflect", "crop=224:pad=16:padding_mode=reflect", (224, 224), 16, "reflect"),
    ("crop-symmetric-ifneeded", "crop=400x600:pad=4/8:padding_mode=symmetric:pad_if_needed=1",
     (400, 600), (4, 8), "symmetric"),
    ("crop-edge-ifneeded", "crop=700:padding_mode=edge:pad_if_needed=1", (700, 700), None, "edge"),
]

# (name, refurb spec with the default ranges, torchvision transform)
KS_CASES = [
    ("colorjitter", "colorjitter=0.4:contrast=0.4:saturation=0.4:hue=0.1",
     T.ColorJitter(0.4, 0.4, 0.4, 0.1)),
    ("apply-colorjitter", "apply=0.8,colorjitter=0.4:contrast=0.4:saturation=0.4:hue=0.1",
     T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8)),
    ("grayscale", "grayscale=0.2", T.RandomGrayscale(0.2)),
    ("gaussblur", "gaussblur=23", T.GaussianBlur(23)),
    ("solarize", "solarize=128", T.RandomSolarize(128)),
    ("vflip", "vflip", T.RandomVerticalFlip()),
    ("rotation", "rotation=30", T.RandomRotation(30)),
    ("affine", "affine=10:translate=0.1/0.2:scale=0.8-1.2:shear=10",
     T.RandomAffine(10, translate=(0.1, 0.2), scale=(0.8, 1.2), shear=10)),
    ("perspective", "perspective", T.RandomPerspective()),
    ("erasing", "erasing=p=0.5", None),
    ("crop-reflect", "crop=224:pad=32:padding_mode=reflect",
     T.RandomCrop(224, padding=32, padding_mode="reflect")),
    ("rotation-expand", "rotation=45:expand=1", T.RandomRotation(45, expand=True)),
    ("choice", "choice=2:p=1/3,invert=1,colorjitter=0.4",
     T.RandomChoice([T.RandomInvert(1.0), T.ColorJitter(0.4)], p=[1, 3])),
    ("choice-crops", "choice=2:layers=1/2,rrcrop=224,resize=256,centercrop=224",
     T.RandomChoice([T.RandomResizedCrop(224), T.Compose([T.Resize(256), T.CenterCrop(224)])])),
    ("apply-crop", "apply=0.4:n=2,pad=16:padding_mode=reflect,crop=300,centercrop=300",
     T.Compose([T.RandomApply([T.Pad(16, padding_mode="reflect"), T.RandomCrop(300)], p=0.4),
                T.CenterCrop(300)])),
    ("order", "order=2,colorjitter=brightness=0.4,solarize=128:p=1",
     T.RandomOrder([T.ColorJitter(brightness=0.4), T.RandomSolarize(128, p=1.0)])),
    ("rotation-expand-crop", "rotation=180:expand=1:interpolation=bilinear,centercrop=300",
     T.Compose([T.RandomRotation(180, expand=True, interpolation=IM.BILINEAR), T.CenterCrop(300)])),
    ("rotation-center", "rotation=30:center=50/60", T.RandomRotation(30, center=(50, 60))),
    ("affine-center", "affine=10:translate=0.1/0.2:scale=0.8-1.2:shear=10:center=0/0",
     T.RandomAffine(10, translate=(0.1, 0.2), scale=(0.8, 1.2), shear=10, center=(0, 0))),
    ("augmix", "augmix", T.AugMix()),
    ("augmix-nearest", "augmix=severity=6:width=2:depth=2:alpha=0.5:interp=nearest:fill=40",
     T.AugMix(6, 2, 2, 0.5, interpolation=IM.NEAREST, fill=40)),
    ("augmix-basic", "augmix=severity=10:width=4:alpha=3:all_ops=0",
     T.AugMix(10, 4, alpha=3.0, all_ops=False)),
]


# Recipes through the converter (refurb_stream.pipeline_from_torchvision):
# collapsed ones compared pixel by pixel, random ones by KS.
RECIPE_PIXELS = [
    ("recipe-collapsed-1", T.Compose([
        T.Resize(256), T.CenterCrop(224),
        T.RandomApply([T.ColorJitter(brightness=(1.2, 1.2))], p=1.0),
        T.RandomGrayscale(p=1.0), T.GaussianBlur(9, (1.5, 1.5)), T.RandomSolarize(100, p=1.0),
        T.RandomRotation((10, 10)), T.RandomVerticalFlip(1.0)])),
    ("recipe-collapsed-2", T.Compose([
        T.Resize(200), T.RandomAffine((5, 5), scale=(1.1, 1.1), shear=(3, 3)),
        T.RandomAdjustSharpness(1.5, p=1.0), T.RandomPosterize(5, p=1.0),
        T.RandomEqualize(p=1.0), T.RandomInvert(p=1.0), T.PILToTensor()])),
]

RECIPE_KS = [
    ("recipe-simclr", T.Compose([
        T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
        T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
        T.RandomGrayscale(p=0.2), T.GaussianBlur(23, sigma=(0.1, 2.0))])),
    ("recipe-byol", T.Compose([
        T.RandomResizedCrop(224, interpolation=IM.BICUBIC), T.RandomHorizontalFlip(),
        T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
        T.RandomGrayscale(p=0.2), T.RandomApply([T.GaussianBlur(23)], p=0.1),
        T.RandomSolarize(128, p=0.2)])),
    ("recipe-deit", T.Compose([
        T.RandomResizedCrop(224, interpolation=IM.BICUBIC), T.RandomHorizontalFlip(),
        T.RandAugment(2, 9), T.ColorJitter(0.4, 0.4, 0.4), T.PILToTensor(),
        T.RandomErasing(0.25)])),
    ("recipe-deit-normalized", T.Compose([
        T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
        T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
        T.RandomErasing(0.5), T.RandomErasing(0.5, value="random")])),
    ("recipe-erasing-random-before-normalize", T.Compose([
        T.ToTensor(), T.RandomErasing(1.0, scale=(0.2, 0.33), value="random"),
        T.RandomErasing(0.5, value=0.2), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])),
    ("recipe-augmix", T.Compose([
        T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.AugMix(), T.PILToTensor()])),
    ("recipe-robust", T.Compose([
        T.RandomRotation(15), T.RandomAffine(0, translate=(0.1, 0.1), shear=5),
        T.RandomPerspective(0.3), T.RandomVerticalFlip(), T.CenterCrop(224)])),
]


def as_pixels(t):
    """A torchvision output (PIL or CHW uint8 tensor) as an HWC array; a
    float tensor stays CHW (as refurb's normalized output)."""
    if isinstance(t, torch.Tensor) and t.is_floating_point():
        return t.numpy()
    if isinstance(t, torch.Tensor):
        return t.permute(1, 2, 0).numpy()
    return np.asarray(t)


def ordinary(path):
    """A photo as torchvision's loader gives it, scaled to about 500x375."""
    img = Image.open(path).convert("RGB")
    s = 500.0 / max(img.size)
    if s < 1:
        img = img.resize((max(1, round(img.size[0] * s)), max(1, round(img.size[1] * s))),
                         Image.BILINEAR)
    return img


def tv_erasing(img, p=1.0, scale=(0.1, 0.1), ratio=(1.0, 1.0)):
    t = F.pil_to_tensor(img)
    return T.RandomErasing(p=p, scale=scale, ratio=ratio, value=0)(t).permute(1, 2, 0).numpy()


def erased_box(out, img):
    """Height and width of the box around the samples erasing changed."""
    ys, xs = np.nonzero((out != np.asarray(img)).any(axis=-1))
    return (0, 0) if len(ys) == 0 else (ys.max() - ys.min() + 1, xs.max() - xs.min() + 1)


def within1(a, b):
    if a.shape != b.shape:  # a different size (rotation expand=1) fails
        return 0.0, 255.0
    d = np.abs(a.astype(int) - b.astype(int))
    return float((d <= 1).mean()), float(d.mean())


def pixel_case(rfb, name, spec, tv, photos):
    pipe = rfb.parse(spec)
    worst, mae = 1.0, 0.0
    for path, img in photos:
        ours = rfb.run(pipe, np.asarray(img))
        if tv is None:  # the erased square of a collapsed RandomErasing
            theirs = tv_erasing(img)
            ok = erased_box(ours, img) == erased_box(theirs, img)
            frac, m = (1.0 if ok else 0.0), 0.0
        else:
            theirs = as_pixels(tv(img))
            frac, m = within1(ours, theirs)
        worst, mae = min(worst, frac), max(mae, m)
    rfb.dll.rfb_pipeline_free(pipe)
    ok = worst >= 0.99
    print("%-4s pixels %-18s within+-1 %.4f (worst photo)  mae %.3f  %s" %
          ("ok" if ok else "FAIL", name, worst, mae, spec))
    return ok


def find_window(small, big):
    """1 if small is exactly a window of big (found through its first row)."""
    h, w = small.shape[:2]
    for y in range(big.shape[0] - h + 1):
        for x in range(big.shape[1] - w + 1):
            if np.array_equal(big[y, x:x + w], small[0]) and \
                    np.array_equal(big[y:y + h, x:x + w], small):
                return True
    return False


def window_case(rfb, name, spec, size, padding, mode, photos, draws=3):
    pipe = rfb.parse(spec)
    ok = True
    for _, img in photos:
        big = np.asarray(padded_for_crop(img, size, padding, mode))
        for s in range(draws):
            ok = ok and find_window(rfb.run(pipe, np.asarray(img), sample=s), big)
    rfb.dll.rfb_pipeline_free(pipe)
    print("%-4s window %-18s a window of torchvision's padded image on every photo "
          "(%d draws each)  %s" % ("ok" if ok else "FAIL", name, draws, spec))
    return ok


def order_case(rfb, name, spec, ops, photos, draws=6):
    import itertools
    pipe = rfb.parse(spec)
    ok, seen = True, set()
    for _, img in photos:
        outs = [as_pixels(T.Compose([ops[i] for i in perm])(img))
                for perm in itertools.permutations(range(len(ops)))]
        for s in range(draws):
            ours = rfb.run(pipe, np.asarray(img), sample=s)
            hits = [k for k, o in enumerate(outs) if within1(ours, o)[0] >= 0.99]
            ok = ok and len(hits) > 0
            seen.update(hits[:1])
    rfb.dll.rfb_pipeline_free(pipe)
    print("%-4s order  %-18s every output one of torchvision's %d orders (%d seen)  %s"
          % ("ok" if ok else "FAIL", name, len(outs), len(seen), spec))
    return ok


def off_grid(chw, mean, std):
    """The values of channel 0 of a normalized CHW tensor that no pixel
    gives (what RandomErasing(value='random') wrote)."""
    v = chw[0].ravel().astype(np.float64)
    k = (v * std[0] + mean[0]) * 255
    return v[np.abs(k - np.rint(k)) > 1e-3]


def erased_values_case(rfb, img, draws):
    """ToTensor, RandomErasing(value='random'), Normalize: the erased
    values themselves, refurb's against torchvision's (KS)."""
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    spec = "erasing=p=1:scale=0.05-0.05:ratio=1-1:value=random,normalize=imagenet"
    tv = T.Compose([T.ToTensor(), T.RandomErasing(1.0, scale=(0.05, 0.05), ratio=(1, 1),
                                                  value="random"), T.Normalize(mean, std)])
    pipe = rfb.parse(spec)
    arr = np.asarray(img)
    ours = np.concatenate([off_grid(rfb.run(pipe, arr, seed=3, sample=i), mean, std)
                           for i in range(draws)])
    torch.manual_seed(5)
    theirs = np.concatenate([off_grid(tv(img).numpy(), mean, std) for _ in range(draws)])
    rfb.dll.rfb_pipeline_free(pipe)
    n = min(len(ours), len(theirs), 20000)
    rng = np.random.default_rng(1)
    a, b = rng.choice(ours, n, replace=False), rng.choice(theirs, n, replace=False)
    d, crit = ks(a, b), 1.949 * math.sqrt(2.0 / n)
    ok = d < crit and abs(a.mean() - b.mean()) < 0.05
    print("%-4s KS     %-18s D %.3f (critical %.3f, %d values each; mean %.3f vs %.3f, "
          "sd %.3f vs %.3f)  %s" % ("ok" if ok else "FAIL", "erased-values", d, crit, n,
                                     a.mean(), b.mean(), a.std(), b.std(), spec))
    return ok


def perspective_case(rfb, photos, rng):
    worst = 1.0
    for _, img in photos:
        arr = np.ascontiguousarray(np.asarray(img))
        h, w = arr.shape[:2]
        start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
        end = [[int(rng.integers(0, w // 4)), int(rng.integers(0, h // 4))],
               [int(rng.integers(w - w // 4, w)), int(rng.integers(0, h // 4))],
               [int(rng.integers(w - w // 4, w)), int(rng.integers(h - h // 4, h))],
               [int(rng.integers(0, w // 4)), int(rng.integers(h - h // 4, h))]]
        for interp, mode in ((0, IM.NEAREST), (1, IM.BILINEAR)):
            out = np.zeros_like(arr)
            src = RfbImage(arr.ctypes.data, w * 3, w, h, 3)
            dst = RfbImage(out.ctypes.data, w * 3, w, h, 3)
            s = (ctypes.c_int * 8)(*sum(start, []))
            e = (ctypes.c_int * 8)(*sum(end, []))
            fill = (ctypes.c_uint8 * 3)(0, 0, 0)
            if rfb.dll.rfb_perspective(ctypes.byref(src), ctypes.byref(dst), s, e, interp,
                                       fill, rfb.err):
                raise RuntimeError(rfb.message())
            theirs = np.asarray(F.perspective(img, start, end, mode, fill=0))
            worst = min(worst, within1(out, theirs)[0])
    ok = worst >= 0.99
    print("%-4s pixels %-18s within+-1 %.4f (worst photo, nearest and bilinear)" %
          ("ok" if ok else "FAIL", "perspective", worst))
    return ok


class AugmixSpec(ctypes.Structure):
    _fields_ = [("severity", ctypes.c_int), ("width", ctypes.c_int), ("depth", ctypes.c_int),
                ("alpha", ctypes.c_double), ("all_ops", ctypes.c_int), ("interp", ctypes.c_int),
                ("fill", ctypes.c_void_p)]


class AugmixStep(ctypes.Structure):
    _fields_ = [("index", ctypes.c_int), ("bin", ctypes.c_int), ("negative", ctypes.c_int)]


class AugmixChoice(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("m", ctypes.c_float * 2),
                ("weight", ctypes.c_float * 16), ("depth", ctypes.c_int * 16),
                ("step", (AugmixStep * 16) * 16)]


class AugmixScratch(ctypes.Structure):
    _fields_ = [("img", (ctypes.c_void_p * 2) * 2), ("mix", ctypes.c_void_p),
                ("mix_cap", ctypes.c_size_t)]


def augmix_case(rfb, photos, rng, count=6):
    """AugMix with its draws fixed (scripts/golden-augmix.py patches
    torchvision's; rfb_augmix_apply gets the same) on the photos: every
    op alone, then random chains and weights."""
    spec = importlib.util.spec_from_file_location(
        "golden_augmix", os.path.join(ROOT, "scripts", "golden-augmix.py"))
    ga = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ga)
    dll = rfb.dll
    dll.rfb_augmix_apply.argtypes = [ctypes.POINTER(AugmixSpec), ctypes.POINTER(AugmixChoice),
                                     ctypes.POINTER(RfbImage), ctypes.POINTER(RfbImage),
                                     ctypes.POINTER(AugmixScratch), ctypes.c_void_p]
    dll.rfb_augmix_scratch_free.argtypes = [ctypes.POINTER(AugmixScratch)]
    scratch = AugmixScratch()
    cases = [((0.0, 1.0), (1.0,), [[(i, b, n)]], interp, fill)
             for i in range(13) for b, n in ((9, 0), (4, 1))
             for interp, fill in (("bilinear", None), ("nearest", (10, 20, 30)))]
    for _ in range(count):
        width = int(rng.integers(1, 5))
        cases.append((rng.dirichlet([1, 1]).astype(np.float32).tolist(),
                      rng.dirichlet([1] * width).astype(np.float32).tolist(),
                      [[(int(rng.integers(13)), int(rng.integers(10)), int(rng.integers(2)))
                        for _ in range(int(rng.integers(1, 4)))] for _ in range(width)],
                      ("bilinear", "nearest")[int(rng.integers(2))], None))
    worst, exact = 1.0, 1.0
    for _, img in photos:
        arr = np.ascontiguousarray(np.asarray(img))
        h, w = arr.shape[:2]
        for m, d, chains, interp, fill in cases:
            theirs = np.asarray(ga.run(img, m, d, chains, interp, fill, True, -1))
            fill_c = (ctypes.c_uint8 * 3)(*fill) if fill else None
            sp = AugmixSpec(10, len(d), -1, 1.0, 1, 1 if interp == "bilinear" else 0,
                            ctypes.cast(fill_c, ctypes.c_void_p) if fill else None)
            c = AugmixChoice()
            c.width = len(d)
            c.m[0], c.m[1] = m
            for i, chain in enumerate(chains):
                c.weight[i] = float(np.float32(d[i]) * np.float32(m[1]))
                c.depth[i] = len(chain)
                for k, (index, b, n) in enumerate(chain):
                    c.step[i][k] = AugmixStep(index, b, n)
            out = np.zeros_like(arr)
            src = RfbImage(arr.ctypes.data, w * 3, w, h, 3)
            dst = RfbImage(out.ctypes.data, w * 3, w, h, 3)
            if dll.rfb_augmix_apply(ctypes.byref(sp), ctypes.byref(c), ctypes.byref(src),
                                    ctypes.byref(dst), ctypes.byref(scratch), rfb.err):
                raise RuntimeError(rfb.message())
            worst = min(worst, within1(out, theirs)[0])
            exact = min(exact, float((out == theirs).mean()))
    dll.rfb_augmix_scratch_free(ctypes.byref(scratch))
    ok = worst >= 0.99
    print("%-4s pixels %-18s within+-1 %.4f exact %.4f (worst case and photo, %d cases "
          "with torchvision's draws fixed)" % ("ok" if ok else "FAIL", "augmix-fixed", worst,
                                               exact, len(cases)))
    return ok


def dirichlet_case(rfb, draws=4000):
    """rfb_dirichlet_draw against numpy's Dirichlet: two-sample KS on
    every component, for alpha 0.3, 1 and 4 and 2 or 5 components."""
    dll = rfb.dll
    dll.rfb_rng_init.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32,
                                 ctypes.c_uint32, ctypes.c_uint32]
    dll.rfb_dirichlet_draw.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_double),
                                       ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    rng = ctypes.create_string_buffer(256)  # an rfb_rng (smaller than this)
    npr = np.random.default_rng(8)
    crit = 1.949 * math.sqrt(2.0 / draws)
    worst = 0.0
    for alpha in (0.3, 1.0, 4.0):
        for n in (2, 5):
            al = (ctypes.c_double * n)(*([alpha] * n))
            out = (ctypes.c_float * n)()
            ours = np.empty((draws, n))
            for i in range(draws):
                dll.rfb_rng_init(rng, 17, n, i, 0)
                dll.rfb_dirichlet_draw(rng, al, n, out)
                ours[i] = list(out)
            theirs = npr.dirichlet([alpha] * n, size=draws)
            worst = max(worst, max(ks(ours[:, k], theirs[:, k]) for k in range(n)))
    ok = worst < crit
    print("%-4s KS     %-18s D %.3f (worst component; critical %.3f, %d draws each, "
          "alpha 0.3/1/4, 2 and 5 components)" % ("ok" if ok else "FAIL", "dirichlet",
                                                  worst, crit, draws))
    return ok


def stats(arr):
    if arr.dtype.kind == "f":  # CHW floats
        arr = arr.transpose(1, 2, 0)
    a = arr.astype(np.float64)
    h, w = a.shape[:2]
    return a.mean(), a[:h // 2, :w // 2].mean()


def moved(out, arr):
    """How far an output of the input's shape moved: mean |out - in|
    (AugMix: how much of the image its Dirichlet weights keep)."""
    return (float(np.abs(out.astype(np.float64) - arr.astype(np.float64)).mean()),)


def ks_case(rfb, name, spec, tv, img, draws):
    pipe = rfb.parse(spec)
    arr = np.asarray(img)
    stat = stats
    if name.startswith("augmix"):
        stat = lambda out: stats(out) + moved(out, arr)  # noqa: E731
    ours = np.array([stat(rfb.run(pipe, arr, seed=7, sample=i)) for i in range(draws)])
    torch.manual_seed(11)
    if tv is None:
        theirs = np.array([stat(tv_erasing(img, 0.5, (0.02, 0.33), (0.3, 3.3)))
                           for _ in range(draws)])
    else:
        theirs = np.array([stat(as_pixels(tv(img))) for _ in range(draws)])
    rfb.dll.rfb_pipeline_free(pipe)
    crit = 1.949 * math.sqrt(2.0 / draws)  # alpha = 0.001
    d = [ks(ours[:, k], theirs[:, k]) for k in range(ours.shape[1])]
    ok = max(d) < crit
    print("%-4s KS     %-18s D %s (critical %.3f, %d draws each)  %s" %
          ("ok" if ok else "FAIL", name, " ".join("%.3f" % v for v in d), crit, draws, spec))
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--photos", type=int, default=8)
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--only")
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args()
    paths = a.paths
    if not paths:
        out = subprocess.run([os.path.join(ROOT, "scripts", "fetch-photos"), "--min-side",
                              "224"], stdout=subprocess.PIPE, text=True, check=True).stdout
        paths = out.split()
        step = max(1, len(paths) // a.photos)
        paths = paths[::step][:a.photos]
    photos = [(p, ordinary(p)) for p in paths]
    rfb = Refurb(load_library())
    failed = total = 0
    for name, spec, tv in PIXEL_CASES:
        if a.only and a.only not in name:
            continue
        total += 1
        failed += not pixel_case(rfb, name, spec, tv, photos)
    for name, spec, ops in ORDER_CASES:
        if a.only and a.only not in name:
            continue
        total += 1
        failed += not order_case(rfb, name, spec, ops, photos)
    for name, spec, size, padding, mode in WINDOW_CASES:
        if a.only and a.only not in name:
            continue
        total += 1
        failed += not window_case(rfb, name, spec, size, padding, mode, photos)
    if not a.only or "perspective" in a.only:
        total += 1
        failed += not perspective_case(rfb, photos, np.random.default_rng(5))
    if not a.only or "augmix" in a.only:
        total += 1
        failed += not augmix_case(rfb, photos, np.random.default_rng(21))
    if not a.only or "dirichlet" in a.only:
        total += 1
        failed += not dirichlet_case(rfb)
    for name, spec, tv in KS_CASES:
        if a.only and a.only not in name:
            continue
        total += 1
        failed += not ks_case(rfb, name, spec, tv, photos[0][1], a.draws)
    if not a.only or a.only in "erased-values":
        total += 1
        failed += not erased_values_case(rfb, photos[0][1], 20)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from refurb_stream import pipeline_from_torchvision
    for name, tv in RECIPE_PIXELS + RECIPE_KS:
        if a.only and a.only not in name:
            continue
        spec = pipeline_from_torchvision(tv)
        total += 1
        if (name, tv) in RECIPE_PIXELS:
            failed += not pixel_case(rfb, name, spec, tv, photos)
        else:
            failed += not ks_case(rfb, name, spec, tv, photos[0][1], a.draws)
    print("%d cases, %d failed (%d photos)" % (total, failed, len(photos)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
