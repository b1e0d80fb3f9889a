#!/usr/bin/python3
"""golden-augmix.py - golden outputs for refurb's augmix filter.

Writes tests/data/golden/augmix/ (layout in golden_common.py): each case
is torchvision 0.14's transforms.AugMix run on a PIL test image with its
randomness fixed: AugMix._sample_dirichlet returns given weights and
torch.randint given values, in forward()'s order (per chain: the depth
when chain_depth <= 0, then per op its index, its magnitude bin when the
op has a table, its sign when the op is signed).  The manifest's params
hold the same choices for the C side (tests/unit/test_augmix.c gives
them to rfb_augmix_apply):

    m=M0/M1:d=D1/../DK:interp=nearest|bilinear:fill=none|V|R/G/B:
    ops=I.B.S+I.B.S/I.B.S...   (chains separated by '/', ops by '+':
                                op index in the AugMix space, bin, sign)

The "op" cases are single ops (one chain of depth 1, m = (0, 1), d = (1)):
the output is that op's tensor semantics exactly; the "mix" cases are
random chains and Dirichlet weights (numpy, seeded), which check the
float32 mix and its truncation.  A test passes with >= 99% of the
samples within +-1 of torchvision's.

Usage: scripts/golden-augmix.py [OUTDIR]   (default tests/data/golden)
Needs /usr/bin/python3 with numpy, torch 1.13, torchvision 0.14, PIL.
"""

# --help before the imports a machine may lack (torch, torchvision, PIL)
import sys  # noqa: E402
if sys.argv[1:2] in (["-h"], ["--help"]):
    print(__doc__.strip())
    raise SystemExit(0)
import os
import sys
from unittest import mock

import numpy as np
import torch
from torchvision import transforms as T
from torchvision.transforms import InterpolationMode as IM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import Suite  # noqa: E402

MODES = {"nearest": IM.NEAREST, "bilinear": IM.BILINEAR}


class FixedAugMix(T.AugMix):
    """AugMix whose two Dirichlet draws are given."""

    def __init__(self, m, d, **kw):
        super().__init__(**kw)
        self._draws = [torch.tensor([m], dtype=torch.float32),
                       torch.tensor([d], dtype=torch.float32)]

    def _sample_dirichlet(self, params):
        return self._draws.pop(0)


def space(all_ops):
    """[(name, has_table, signed)] in torchvision's order."""
    meta = T.AugMix(all_ops=all_ops)._augmentation_space(10, (32, 32))
    return [(k, v[0].ndim > 0, v[1]) for k, v in meta.items()]


def run(img, m, d, chains, interp, fill, all_ops, depth):
    """AugMix on img with the draws fixed; chains: [[(index, bin, neg)]]."""
    ops = space(all_ops)
    ints = []
    for chain in chains:
        if depth <= 0:
            ints.append(len(chain))
        for index, b, neg in chain:
            ints.append(index)
            if ops[index][1]:
                ints.append(b)
            if ops[index][2]:
                ints.append(neg)
    tv = FixedAugMix(m, d, severity=10, mixture_width=len(chains),
                     chain_depth=depth, all_ops=bool(all_ops),
                     interpolation=MODES[interp], fill=fill)
    values = list(ints)

    def fake_randint(*args, **kw):
        return torch.tensor([values.pop(0)])

    with mock.patch.object(torch, "randint", fake_randint):
        out = tv(img)
    assert not values and not tv._draws, "draws left over"
    return out


def f32(v):
    return repr(float(np.float32(v)))


def params(m, d, chains, interp, fill, all_ops):
    fs = "none" if fill is None else (
        str(fill) if isinstance(fill, int) else "/".join(str(v) for v in fill))
    return {"m": "/".join(f32(v) for v in m), "d": "/".join(f32(v) for v in d),
            "interp": interp, "fill": fs, "all_ops": str(int(all_ops)),
            "ops": "/".join("+".join("%d.%d.%d" % s for s in c) for c in chains)}


def add(suite, case, iname, m, d, chains, interp, fill, all_ops, depth):
    img = suite.inputs[iname]
    if img.mode == "L" and isinstance(fill, (list, tuple)):
        fill = fill[0]
    out = run(img, m, d, chains, interp, fill, all_ops, depth)
    suite.add(case, iname, "augmix", params(m, d, chains, interp, fill, all_ops),
              out)


def op_cases(suite):
    names = [n for n, _, _ in space(True)]
    for index, name in enumerate(names):
        geometric = index < 5
        for iname in ["rgb67x53", "gray41x29"] + (["rgb128x96"] if geometric else []):
            for k, (interp, fill) in enumerate(
                    [("nearest", None), ("bilinear", None), ("nearest", (10, 20, 30)),
                     ("bilinear", (10, 20, 30))] if geometric else [("nearest", None)]):
                for neg in (0, 1):
                    b = (3 * index + 5 + 4 * neg + k) % 10
                    case = "op_%s_%d_%s_%d_%s" % (name, b, "m" if neg else "p", k, iname)
                    add(suite, case, iname, (0.0, 1.0), (1.0,), [[(index, b, neg)]],
                        interp, fill, True, 1)


def mix_cases(suite, count=12):
    rng = np.random.default_rng(20261125)
    for k in range(count):
        all_ops = k % 4 != 3
        nops = 13 if all_ops else 9
        width = int(rng.integers(1, 5))
        chains = [[(int(rng.integers(nops)), int(rng.integers(3)), int(rng.integers(2)))
                   for _ in range(int(rng.integers(1, 4)))] for _ in range(width)]
        alpha = [0.5, 1.0, 2.0][k % 3]
        m = rng.dirichlet([alpha, alpha]).astype(np.float32)
        d = rng.dirichlet([alpha] * width).astype(np.float32)
        interp = "bilinear" if k % 2 == 0 else "nearest"
        fill = None if k % 3 != 2 else (200, 90, 15)
        for iname in ["rgb67x53", "rgb128x96", "gray41x29"]:
            add(suite, "mix%02d_%s" % (k, iname), iname, m.tolist(), d.tolist(), chains,
                interp, fill, all_ops, -1)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "golden")
    suite = Suite(root, "augmix")
    op_cases(suite)
    mix_cases(suite)
    suite.write()
    print("%d cases in %s" % (len(suite.rows), suite.dir))


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    main()
