"""view_collisions.py - how often a recipe's views of one sample are the
same image (scripts/check-recipes.py --collisions).

Two views of a sample that are identical, or mirror images of each other,
give a contrastive or self-distillation loss nothing to learn: that is
what a split whose final part draws too little (flip alone: every pair
identical or mirrored) does to a self-supervised recipe.  The same image
in two epochs of one sample and view is what refurbishing trades for its
speed (a cached record reused r times), and what the final part must keep
rare.

Counted on the images of a stream, {(sample id, epoch): [views]}, and on
torchvision's images of the same photos, drawn as many times:

  within   pairs of views of one sample and epoch, of one shape, that are
           identical or mirror images (flipped left-right);
  across   pairs of epochs of one sample and view whose images are
           identical.

A recipe passes when refurb's rate of each is at most torchvision's plus
THRESHOLD (1%, refurb-advise's bound on a view collision probability).
"""
import itertools

import numpy as np

THRESHOLD = 0.01


def _mirror(a, floats):
    """a flipped left-right: HWC uint8 (axis 1), CHW float32 (axis 2)."""
    return a[:, :, ::-1] if floats else a[:, ::-1]


def within(views):
    """(identical, mirrored, pairs) among the views of one sample."""
    same = mirrored = pairs = 0
    for a, b in itertools.combinations(views, 2):
        if a.shape != b.shape:
            continue
        pairs += 1
        if np.array_equal(a, b):
            same += 1
        elif np.array_equal(a, _mirror(b, a.dtype == np.float32)):
            mirrored += 1
    return same, mirrored, pairs


def across(samples):
    """(identical, pairs) of one sample's view in two epochs."""
    by_sample = {}
    for (sid, epoch), views in samples.items():
        by_sample.setdefault(sid, []).append(views)
    same = pairs = 0
    for epochs in by_sample.values():
        for x, y in itertools.combinations(epochs, 2):
            for a, b in zip(x, y):
                pairs += 1
                same += bool(np.array_equal(a, b))
    return same, pairs


def rates(samples):
    """{'within': (collisions, pairs, identical), 'across': (identical,
    pairs, identical)}."""
    w = [within(v) for v in samples.values()]
    same, pairs = across(samples)
    return {"within": (sum(x[0] + x[1] for x in w), sum(x[2] for x in w),
                       sum(x[0] for x in w)),
            "across": (same, pairs, same)}


def check(name, ours, theirs, report):
    """Report refurb's collision rates against torchvision's; True if
    neither exceeds torchvision's by more than THRESHOLD."""
    ok = True
    mine, tv = rates(ours), rates(theirs)
    for kind, what in (("within", "views of one sample identical or mirrored"),
                       ("across", "epochs of one sample and view identical")):
        (n, p, same), (tn, tp, _) = mine[kind], tv[kind]
        if not p:
            continue
        r, tr = n / p, (tn / tp if tp else 0.0)
        good = r <= tr + THRESHOLD
        ok = ok and good
        split = " (%d identical)" % same if kind == "within" and n else ""
        report("ok" if good else "FAIL", name,
               "collisions %s: %s: %d of %d pairs (%.1f%%)%s, torchvision %d of %d (%.1f%%)"
               % (kind, what, n, p, 100 * r, split, tn, tp, 100 * tr))
    return ok


if __name__ == "__main__":   # a module of check-recipes.py; --help says so
    import sys
    print("usage: import view_collisions (scripts/check-recipes.py --collisions)\n" + __doc__)
    sys.exit(0 if sys.argv[1:] in (["--help"], ["-h"]) else 2)
