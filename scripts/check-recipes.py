#!/usr/bin/python3
"""check-recipes.py - torchvision recipes through the converter and the
chain, against torchvision on the same photos.

Usage: scripts/check-recipes.py [--photos N | --dir DIR] [--ks | --ks-all]
                                [--draws K] [--epochs E] [--only TEXT]
                                [--collisions] [--cache-upto N]
                                [--allow-view-collisions]
                                [--tmp DIR] [RECIPE.py ...]

Each recipe (default: tests/data/recipes/*.py but _*.py, see its README)
defines `transform` or `views`.  For each one:

  convert  refurb_stream.pipeline_from_torchvision (views_from_torchvision
           and final_options for `views`); a recipe with REFUSED must be
           refused with a message that contains every text of REFUSED;
  chain    refurb-index, -evict (r = 2), -plan (batch 4), -partial (the
           leading filters that draw nothing and that every view shares,
           when the rest still fixes the size: else none), -final (the
           rest: -p SPEC [--views K], one -p per view, or one -g K:SPEC
           per group of views of one size) over E epochs
           (default 2) of the photos, read back with refurb_stream;
  compare  every stream image against torchvision's output of the same
           recipe on the same photo (PIL RGB, as ImageFolder loads it):
           shape and dtype; values inside the recipe's range and reaching
           the extremes torchvision's reach (within a tenth of the range);
           each image's per-channel mean and standard deviation paired
           with torchvision's image of the same photo and view: |mean of
           the differences| / its standard error below 4.5; every pixel
           within one level when the recipe draws nothing; each view
           group (views of one size, multi-crop) on its own;
  collisions  (--collisions) views of one sample identical or mirror
           images of each other, and one sample's view identical in two
           epochs, refurb's rate against torchvision's on the same photos
           (scripts/view_collisions.py); --cache-upto N caches the first
           N filters of every view instead of the split above (a split by
           hand, e.g. one that leaves only the flip final, which
           refurb-final refuses unless --allow-view-collisions; its
           views share the draws of the random filters cached, which
           refurb-final refuses unless --allow-shared-draws: --cache-upto
           passes it, caching them being its point);
  KS       (--ks: recipes with KS = True; --ks-all: every one) one photo,
           K draws (default 200) of refurb (epochs of a one-photo chain)
           and K of torchvision, for every view: two-sample
           Kolmogorov-Smirnov on two statistics of each output (its mean,
           the mean of its top-left quarter), D below the 0.001 critical
           value, as scripts/compare-filters.py does.

Photos: --dir DIR (JPEG and PNG files under it), else N (default 6) from
scripts/fetch-photos --min-side 224; a photo refurb-index leaves out (a
16-bit PNG) is named on a "skip PATH: reason" line and not compared.
Every stream image is compared with torchvision's output on the photo of
its sample id in the index.  --tmp DIR is made if missing.  --only keeps the recipes whose
file name contains TEXT.  Prints one line per check and a summary
"N recipes, F failed[: names] (P photos)"; exit status 1 if any check
fails.  Needs the programs of build/bin (BUILD=DIR for another build).
"""

# --help before the imports a machine may lack (torch, torchvision, PIL)
import sys  # noqa: E402
if sys.argv[1:2] in (["-h"], ["--help"]):
    print(__doc__.strip())
    raise SystemExit(0)
import argparse
import glob
import math
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from refurb_stream import open_stream  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import ks  # noqa: E402
from refurb_stream.convert import (ConvertError, _out_size, _view_list, final_options,  # noqa: E402
                                   pipeline_from_torchvision, views_from_torchvision)
from refurb_stream.multicrop import fixes_size, group_views, split_views as split  # noqa: E402
import view_collisions  # noqa: E402

# more refurb-final options (--allow-view-collisions, --allow-shared-draws)
FINAL_ARGS = []
# |z| of a per-channel mean or std between refurb's images and
# torchvision's: 4.5 is a two-sided p of 7e-6 per column
Z_MAX = 4.5
# filters that draw random numbers (with p=1 and collapsed ranges they
# still may; a recipe without them is compared pixel by pixel)
RANDOM = ("crop", "rrcrop", "flip", "vflip", "randaug", "autoaug", "trivialaug",
          "colorjitter", "grayscale", "gaussblur", "solarize", "posterize", "equalize",
          "autocontrast", "sharpness", "invert", "rotation", "affine", "perspective",
          "erasing", "apply", "augmix")


def load_recipe(path):
    d = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, d)
    try:
        ns = runpy.run_path(path)
    finally:
        sys.path.remove(d)
    if "views" in ns:
        views = _view_list(ns["views"])
    elif "transform" in ns:
        views = [ns["transform"]]
    else:
        raise SystemExit("%s: defines neither transform nor views" % path)
    return ns, views, "views" in ns


def bindir():
    return os.path.join(ROOT, os.environ.get("BUILD", "build"), "bin")


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    if p.returncode:
        raise RuntimeError("%s: exit %d: %s" % (os.path.basename(cmd[0]), p.returncode,
                                                p.stderr.decode().strip()))
    return p.stdout


def chain(photos, partial, options, epochs, work, seed=7):
    """All images of the chain's stream: {(sample id, epoch): array (K, ...)}."""
    tree = os.path.join(work, "tree")
    if not os.path.isdir(tree):
        for i, p in enumerate(photos):
            os.makedirs(os.path.join(tree, "c%d" % (i % 2)), exist_ok=True)
            os.symlink(p, os.path.join(tree, "c%d" % (i % 2),
                                       "%04d%s" % (i, os.path.splitext(p)[1].lower())))
    b = bindir()
    idx, ev = os.path.join(work, "t.idx"), os.path.join(work, "t.evict")
    cache = os.path.join(work, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    run([b + "/refurb-index", "-q", "-o", idx, tree])
    run([b + "/refurb-evict", "-q", "-r", "2", "-s", str(seed), "-o", ev, idx])
    plan = run([b + "/refurb-plan", "-q", "-b", "4", "-e", "0-%d" % (epochs - 1), ev])
    ann = run([b + "/refurb-partial", "-q", "-j", "1", "-c", cache, "-p", partial, idx],
              input=plan)
    stream = os.path.join(work, "s")
    run([b + "/refurb-final", "-q", "-j", "2", "-o", stream] + options + FINAL_ARGS, input=ann)
    names = indexed_paths(idx, tree)
    out = {}
    with open_stream(stream, verify=True) as s:
        for batch in s:
            for j, sid in enumerate(batch.ids):
                out[(int(sid), batch.epoch)] = sample_views(s.header, batch.images, j)
    return out, names


def sample_views(header, images, j):
    """The views of the sample at place j of a batch, in view order: an
    array (K, ...) of one size, or a list with view groups."""
    if header.groups:
        return [g[j, k] for g in images for k in range(g.shape[1])]
    return images[j] if header.views > 1 else images[j][None]


def indexed_paths(idx, root):
    """{sample id: path} of the index: the stream's ids are the index's,
    whatever files of the tree it left out."""
    paths = {}
    for line in run([bindir() + "/refurb-dump", idx]).decode().splitlines():
        if line and not line.startswith("#"):
            f = line.split("\t")
            paths[int(f[0])] = os.path.join(root, f[7])
    return paths


def photo_names(text, work):
    """text with the chain's tree paths (links) replaced by the photos'."""
    tree = os.path.join(work, "tree")
    for link in glob.glob(os.path.join(tree, "*", "*")):
        text = text.replace(link, os.readlink(link))
    return text


def readable(photos, tmp):
    """The photos refurb-index reads, and one line per photo it leaves
    out (a format refurb refuses, such as a 16-bit PNG): torchvision
    would compare them with nothing."""
    work = tempfile.mkdtemp(prefix="photos-", dir=tmp)
    try:
        lst, idx = os.path.join(work, "list"), os.path.join(work, "idx")
        with open(lst, "w") as f:
            f.writelines("%s\t0\n" % p for p in photos)
        p = subprocess.run([bindir() + "/refurb-index", "-o", idx, "--list", lst],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode and not os.path.exists(idx):
            raise SystemExit("check-recipes: refurb-index: " + p.stderr.strip())
        kept = set(indexed_paths(idx, "/").values())
        for line in p.stderr.splitlines():
            if line.startswith("refurb-index: /"):
                print("skip %s" % line[len("refurb-index: "):], flush=True)
        return [q for q in photos if os.path.join("/", os.path.relpath(q, "/")) in kept]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def tv_array(x):
    """torchvision's output as refurb lays it out: uint8 HWC, float CHW."""
    if isinstance(x, torch.Tensor):
        if x.is_floating_point():
            return x.numpy().astype(np.float32)
        return x.permute(1, 2, 0).numpy()
    a = np.asarray(x)
    return a[:, :, None] if a.ndim == 2 else a


def value_range(spec):
    """Per-channel (lo, hi) of the spec's output; None when unbounded."""
    filters = spec.split(",")
    if any(f.startswith("erasing=") and "value=random" in f for f in filters):
        return None  # erased with normal random values
    for f in filters:
        if f.startswith("normalize="):
            args = dict(a.split("=", 1) for a in f.split("=", 1)[1].split(":"))
            mean = [float(v) for v in args["mean"].split("/")]
            std = [float(v) for v in args["std"].split("/")]
            if len(mean) == 1:
                mean = mean * 3
            if len(std) == 1:
                std = std * 3
            lo = [(0 - m) / s for m, s in zip(mean, std)]
            hi = [(1 - m) / s for m, s in zip(mean, std)]
            return np.array(lo), np.array(hi)
    return np.zeros(3), np.full(3, 255.0)


def channel_stats(arrs, floats):
    """Each image's per-channel mean and standard deviation: (n, 2C)."""
    rows = []
    for a in arrs:
        a = a.astype(np.float64)
        if floats:
            a = a.transpose(1, 2, 0)
        a = a.reshape(-1, a.shape[-1])
        rows.append(np.concatenate([a.mean(axis=0), a.std(axis=0)]))
    return np.array(rows)


def z_scores(a, b, floor):
    """Row i of a and of b are the same photo and view (other random
    draws): |mean of the differences| of every column over its standard
    error (a floor keeps constant columns from dividing by 0)."""
    d = a - b
    se = d.std(axis=0, ddof=1) / math.sqrt(len(d)) + floor
    return np.abs(d.mean(axis=0)) / se


def compare(name, spec, ours, theirs, report):
    """Shapes, dtypes, range and per-channel mean/std of two lists."""
    ok = True
    shapes = {a.shape for a in ours}
    tshapes = {a.shape for a in theirs}
    if shapes != tshapes:
        report("FAIL", name, "shape: refurb %s, torchvision %s" % (sorted(shapes),
                                                                    sorted(tshapes)))
        return False
    dt, tdt = {a.dtype for a in ours}, {a.dtype for a in theirs}
    if dt != tdt:
        report("FAIL", name, "dtype: refurb %s, torchvision %s" % (dt, tdt))
        return False
    floats = ours[0].dtype == np.float32
    rng = value_range(spec)
    lo = min(float(a.min()) for a in ours)
    hi = max(float(a.max()) for a in ours)
    if rng is not None:
        span = float(np.max(rng[1] - rng[0]))
        eps = 1e-4 * span
        if lo < float(np.min(rng[0])) - eps or hi > float(np.max(rng[1])) + eps:
            report("FAIL", name, "range: refurb %.4g..%.4g outside %.4g..%.4g" %
                   (lo, hi, np.min(rng[0]), np.max(rng[1])))
            ok = False
    else:
        span = 4.0
    # the extremes the images reach: torchvision's within a tenth of the
    # range (not when erasing draws normal values: their extremes are random)
    tlo = min(float(x.min()) for x in theirs)
    thi = max(float(x.max()) for x in theirs)
    if rng is not None and (abs(lo - tlo) > 0.1 * span or abs(hi - thi) > 0.1 * span):
        report("FAIL", name, "values reach %.4g..%.4g, torchvision's %.4g..%.4g" %
               (lo, hi, tlo, thi))
        ok = False
    a, b = channel_stats(ours, floats), channel_stats(theirs, floats)
    z = z_scores(a, b, 0.002 * span)
    bad = float(z.max()) > Z_MAX
    c = a.shape[1] // 2
    report("FAIL" if bad else "ok", name,
           "%s %s range %.3g..%.3g; channel means %s vs %s, stds %s vs %s "
           "(n %d pairs, max z %.2f of %.1f)" %
           (sorted(shapes)[0], ours[0].dtype, lo, hi, fmt(a.mean(0)[:c]), fmt(b.mean(0)[:c]),
            fmt(a.mean(0)[c:]), fmt(b.mean(0)[c:]), len(a), float(z.max()), Z_MAX))
    return ok and not bad


def exact(name, ours, theirs, report):
    """A recipe that draws nothing: the same pixels as torchvision's."""
    worst = 1.0
    for a, b in zip(ours, theirs):
        d = np.abs(a.astype(np.float64) - b.astype(np.float64))
        tol = 1.0 if a.dtype == np.uint8 else 1.0 / 255 / 0.2  # 1 level after normalize
        worst = min(worst, float((d <= tol + 1e-6).mean()))
    report("ok" if worst >= 0.99 else "FAIL", name,
           "pixels: %.4f within one level (worst image)" % worst)
    return worst >= 0.99


def fmt(v):
    return "/".join("%.3g" % x for x in v)


def quarter_stats(arr, floats):
    a = arr.astype(np.float64)
    if floats:
        a = a.transpose(1, 2, 0)
    h, w = a.shape[:2]
    return a.mean(), a[:h // 2, :w // 2].mean()


def ks_check(name, photo, partial, options, views, draws, work, report):
    """K draws of each view of one photo, refurb's against torchvision's."""
    out, _ = chain([photo], partial, options, draws, work)
    img = Image.open(photo).convert("RGB")
    torch.manual_seed(11)
    crit = 1.949 * math.sqrt(2.0 / draws)  # alpha = 0.001
    ok = True
    for v, tv in enumerate(views):
        ours = [out[(0, e)][v] for e in range(draws)]
        floats = ours[0].dtype == np.float32
        a = np.array([quarter_stats(x, floats) for x in ours])
        b = np.array([quarter_stats(tv_array(tv(img)), floats) for _ in range(draws)])
        d = [ks(a[:, j], b[:, j]) for j in range(2)]
        good = max(d) < crit
        ok = ok and good
        report("ok" if good else "FAIL", name,
               "KS view %d: D %.3f %.3f (critical %.3f, %d draws each)" %
               (v, d[0], d[1], crit, draws))
    return ok


def compare_groups(name, specs, ours, theirs, report):
    """compare() on every view group (views of one size) on its own."""
    groups = group_views(specs)
    if len(groups) == 1:
        return compare(name, specs[0], ours, theirs, report)
    ok, first, nviews = True, 0, len(specs)
    for g, (k, group) in enumerate(groups):
        pick = [i for i in range(len(ours)) if first <= i % nviews < first + k]
        ok = compare("%s[%d]" % (name, g), group[0], [ours[i] for i in pick],
                     [theirs[i] for i in pick], report) and ok
        first += k
    return ok


def cache_upto(specs, n):
    """(partial, finals) with the first n filters of every view cached
    (--cache-upto: a split chosen by hand; the views must share them)."""
    views = [s.split(",") for s in specs]
    if any(v[:n] != views[0][:n] or len(v) <= n for v in views):
        raise SystemExit("check-recipes: --cache-upto %d: the views do not share their "
                         "first %d filters" % (n, n))
    # a final part that does not fix the size (flip alone) starts with a
    # center crop to the size the cached part made: a no-op that tells
    # refurb-final its output size
    finals = [",".join(v[n:]) if fixes_size(",".join(v[n:])) else
              "centercrop=%s,%s" % (_out_size(s), ",".join(v[n:])) for v, s in zip(views, specs)]
    return ",".join(views[0][:n]), finals


def check_recipe(path, photos, a, report):
    name = os.path.basename(path)[:-3]
    ns, views, multi = load_recipe(path)
    refused = ns.get("REFUSED")
    try:
        if multi:
            specs = views_from_torchvision(views)
        else:
            specs = [pipeline_from_torchvision(views[0])]
    except ConvertError as e:
        msg = str(e)
        if refused is None:
            report("FAIL", name, "refused: %s" % msg)
            return False
        missing = [t for t in refused if t not in msg]
        report("FAIL" if missing else "ok", name, "refused (%s): %s%s" % (
            ns.get("REASON", "?"), msg, "; missing %r" % missing if missing else ""))
        return not missing
    if refused is not None:
        report("FAIL", name, "converted, but REFUSED %r expected: %s" % (refused, specs))
        return False
    partial, finals = split(specs) if not a.cache_upto else cache_upto(specs, a.cache_upto)
    options = final_options(finals)
    report("ok", name, "partial %r, refurb-final %s" % (partial, " ".join(
        "'%s'" % o if "=" in o else o for o in options)))
    work = tempfile.mkdtemp(prefix="recipe-", dir=a.tmp)
    try:
        try:
            out, names = chain(photos, partial, options, a.epochs, work)
        except RuntimeError as e:
            report("FAIL", name, "chain: %s" % photo_names(str(e), work))
            return False
        ours, theirs, tv_samples = [], [], {}
        torch.manual_seed(3)
        for (sid, epoch), imgs in sorted(out.items()):
            img = Image.open(names[sid]).convert("RGB")
            tv_samples[(sid, epoch)] = [tv_array(tv(img)) for tv in views]
            ours += [np.ascontiguousarray(imgs[v]) for v in range(len(views))]
            theirs += tv_samples[(sid, epoch)]
        ok = compare_groups(name, specs, ours, theirs, report)
        if ok and not any(f.split("=")[0] in RANDOM for s in specs for f in s.split(",")):
            ok = exact(name, ours, theirs, report)
        if a.collisions:
            ok = view_collisions.check(name, out, tv_samples, report) and ok
        if a.ks_all or (a.ks and ns.get("KS")):
            ok = ks_check(name, photos[0], partial, options, views, a.draws,
                          os.path.join(work, "ks"), report) and ok
            shutil.rmtree(os.path.join(work, "ks"), ignore_errors=True)
        return ok
    finally:
        shutil.rmtree(work, ignore_errors=True)


def photo_list(a):
    if a.dir:
        found = sorted(p for p in glob.glob(os.path.join(a.dir, "**", "*"), recursive=True)
                       if p.lower().endswith((".jpg", ".jpeg", ".png")))
        if not found:
            raise SystemExit("check-recipes: %s: no JPEG or PNG files" % a.dir)
        return [os.path.abspath(p) for p in found]
    out = subprocess.run([os.path.join(ROOT, "scripts", "fetch-photos"), "--min-side", "224"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    step = max(1, len(out) // a.photos)
    return out[::step][:a.photos]


def main():
    # recipes written for older torchvision (an int interpolation) warn
    warnings.filterwarnings("ignore", category=UserWarning, module="torchvision")
    ap = argparse.ArgumentParser(description="torchvision recipes through the converter "
                                 "and the chain, against torchvision")
    ap.add_argument("--photos", type=int, default=6)
    ap.add_argument("--dir")
    ap.add_argument("--ks", action="store_true", help="KS on the recipes with KS = True")
    ap.add_argument("--ks-all", action="store_true", help="KS on every recipe")
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--only")
    ap.add_argument("--collisions", action="store_true",
                    help="count identical and mirrored views (scripts/view_collisions.py)")
    ap.add_argument("--cache-upto", type=int, default=0,
                    help="cache the first N filters of every view (a split by hand)")
    ap.add_argument("--allow-view-collisions", action="store_true",
                    help="refurb-final runs views it predicts to collide (to count them)")
    ap.add_argument("--tmp", default=None)
    ap.add_argument("recipes", nargs="*")
    a = ap.parse_args()
    if a.allow_view_collisions:
        FINAL_ARGS.append("--allow-view-collisions")
    if a.cache_upto:
        # the split by hand caches random filters the views then share
        FINAL_ARGS.append("--allow-shared-draws")
    recipes = a.recipes or sorted(
        p for p in glob.glob(os.path.join(ROOT, "tests", "data", "recipes", "*.py"))
        if not os.path.basename(p).startswith("_"))
    if a.only:
        recipes = [r for r in recipes if a.only in os.path.basename(r)]
    if a.tmp:
        os.makedirs(a.tmp, exist_ok=True)
    photos = readable(photo_list(a), a.tmp)
    if not photos:
        raise SystemExit("check-recipes: refurb-index reads none of the photos")
    failed = []

    def report(status, name, text):
        print("%-4s %-20s %s" % (status, name, text), flush=True)

    for r in recipes:
        if not check_recipe(r, photos, a, report):
            failed.append(os.path.basename(r))
    print("%d recipes, %d failed%s (%d photos)" % (
        len(recipes), len(failed), ": " + " ".join(failed) if failed else "", len(photos)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
