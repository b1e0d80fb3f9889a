"""compare_torchvision.py ANN.txt INDEX.tsv STREAM EXPRESSION - refurb's
output for torchvision's transform EXPRESSION against torchvision's on
the same images.

Converts EXPRESSION with refurb_stream.pipeline_from_torchvision, runs
refurb-final -p SPEC -i ANN.txt -o STREAM (ANN.txt: refurb-partial's
annotated plan of an empty partial pipeline) and reads STREAM back;
INDEX.tsv is refurb-dump of the index (its root and paths).  Each sample's JPEG is
loaded as torchvision's default loader does (PIL, convert("RGB")) and run
through EXPRESSION (evaluated with T = torchvision.transforms, v2 =
torchvision.transforms.v2, tv_tensors, torch and InterpolationMode in
scope).  EXPRESSION's random ranges must be collapsed (p=1, (a, a)
ranges): the check is that of deterministic ops.

Checks, for every sample: the same shape (refurb's uint8 images are HWC
where torchvision's tensors are CHW: compared transposed) and dtype
(uint8 or float32); at least 99% of the values within one pixel step
(float outputs are mapped back to 0..255 through the stream header's
mean and std); the means of the two outputs within one pixel step.
Prints one line per sample (mean |diff| in pixel steps, share within
one step) and exits 1 on the first sample that fails.
"""
import os
import subprocess
import sys

import numpy as np
import torch
import torchvision
from PIL import Image
from torchvision import transforms as T
from torchvision.transforms import InterpolationMode

from refurb_stream import open_stream, pipeline_from_torchvision


def namespace():
    ns = {"T": T, "torch": torch, "InterpolationMode": InterpolationMode}
    from torchvision.transforms import v2
    from torchvision import tv_tensors
    ns.update(v2=v2, tv_tensors=tv_tensors)
    return ns


def read_index(path):
    root, paths = None, {}
    with open(path) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if cols[0] == "# root":
                root = cols[1]
            elif not cols[0].startswith("#"):
                paths[int(cols[0])] = os.path.join(root, cols[7])
    return paths


def to_pixels(x, header):
    """A float NCHW image (C,H,W) back to 0..255 steps through the header's
    normalization (refurb's: (v / 255 - mean) / std)."""
    mean = np.asarray(header.mean, np.float64).reshape(-1, 1, 1)
    std = np.asarray(header.std, np.float64).reshape(-1, 1, 1)
    return (x.astype(np.float64) * std + mean) * 255.0


def main(argv):
    ann, index, stream, expr = argv
    transform = eval(expr, namespace())  # noqa: S307 - the test's own recipe
    spec = pipeline_from_torchvision(transform)
    print("spec: %s" % spec)
    subprocess.run(["refurb-final", "-q", "-p", spec, "-i", ann, "-o", stream], check=True)
    paths = read_index(index)
    checked = 0
    with open_stream(stream, verify=True) as s:
        h = s.header
        for images, _labels, ids, _epoch, _step in s:
            for img, sid in zip(images, ids):
                with open(paths[int(sid)], "rb") as f:
                    pil = Image.open(f).convert("RGB")
                ref = transform(pil)
                if isinstance(ref, Image.Image):
                    ref = torch.from_numpy(np.asarray(ref).copy()).permute(2, 0, 1)
                ref = ref.as_subclass(torch.Tensor).numpy()
                if img.dtype == np.uint8:  # refurb: HWC; torchvision: CHW
                    img = img.transpose(2, 0, 1)
                if img.shape != ref.shape or img.dtype != ref.dtype:
                    print("sample %d: refurb %s %s, torchvision %s %s"
                          % (sid, img.shape, img.dtype, ref.shape, ref.dtype))
                    return 1
                if img.dtype == np.uint8:
                    a, b = img.astype(np.float64), ref.astype(np.float64)
                else:
                    a, b = to_pixels(img, h), to_pixels(ref, h)
                diff = np.abs(a - b)
                within = float(np.mean(diff <= 1.0 + 1e-3))
                dmean = abs(a.mean() - b.mean())
                print("sample %d: %s %s, mean |diff| %.4f, within 1: %.4f, "
                      "means %.2f %.2f" % (sid, img.dtype, "x".join(map(str, img.shape)),
                                           diff.mean(), within, a.mean(), b.mean()))
                if within < 0.99 or dmean > 1.0:
                    print("sample %d: FAILED" % sid)
                    return 1
                checked += 1
    print("%d samples checked (torch %s, torchvision %s)"
          % (checked, torch.__version__, torchvision.__version__))
    return 0 if checked else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
