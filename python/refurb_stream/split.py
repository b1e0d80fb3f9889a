"""refurb_stream.split - the split the converter proposes, explained.

    >>> s = propose_split(["rrcrop=224x224:scale=0.2-1:ratio=0.75-1.3333333333333333"
    ...                    ":interp=bilinear,flip=p=0.5"] * 2)
    >>> s.partial, s.finals[0][:11]
    ('resize=256', 'rrcrop=224x')

propose_split(specs) takes the pipeline text of every view (one spec for
a recipe of one view) and proposes where to cut them: the leading filters
that draw nothing (resize, centercrop, pad, gray, rgb), common to every
view, are cached once every r uses (refurb-partial -p); everything from
the first filter that draws is run on every use (refurb-final -p), so
that every use and every view gets fresh draws.  When every view starts
with a RandomResizedCrop and no resize is cached before it, the proposal
inserts one that is not in the recipe (resize=S, S = 8/7 of the largest
crop: 256 for 224) so that the cache holds small records; the crop is
then cut from the resized image, not from the photo, and explain() says
what that does to the crop's source resolution and what keeping the
recipe's resolution costs.

explain(split, ...) gives the text the converter prints: the two lines of
the split, the unique fraction at r and the views' collision probability
(from refurb-advise --size, which must be on PATH or in $REFURB_BIN), the
inserted layer and its alternative with its cost per image (measured by
refurb-advise on an index when one is given, else estimated from pixel
counts, and said so).
"""
import math
import os
import shutil
import subprocess

__all__ = ["Split", "propose_split", "explain", "split_options", "cached_note"]

# filters that draw nothing: their output depends only on the image
_FIXED = ("resize", "centercrop", "pad", "gray", "rgb")


class Split:
    """A proposed split: partial (text, "" for none), finals (one spec
    per view), inserted (the partial filter not in the recipe, or None)
    and crop (the rrcrop filter text it was inserted for, or None)."""

    def __init__(self, partial, finals, inserted=None, crop=None):
        self.partial, self.finals = partial, finals
        self.inserted, self.crop = inserted, crop


def _filters(spec):
    return [f for f in spec.split(",") if f]


def _args(text):
    """name, {key: value} of one filter's text (its first value under "")."""
    name, _, rest = text.partition("=")
    args = {}
    for i, a in enumerate(rest.split(":") if rest else []):
        k, eq, v = a.partition("=")
        args[k if eq else ("" if i == 0 else k)] = v if eq else k
    return name, args


def _crop_side(text):
    """The larger side of an rrcrop filter's output."""
    size = _args(text)[1].get("", "0")
    return max(int(v) for v in size.split("x"))


def propose_split(specs, image_size=(500, 375), insert_resize=True):
    """The Split of the views' specs (a list; one spec alone is taken as
    one view) for photos of about image_size (width, height); without
    insert_resize, no resize is inserted before a leading RandomResizedCrop
    (the decode is cached at the photo's resolution)."""
    if isinstance(specs, str):
        specs = [specs]
    views = [_filters(s) for s in specs]
    n = 0
    while (all(len(v) > n for v in views) and
           all(v[n] == views[0][n] for v in views) and
           _args(views[0][n])[0] in _FIXED):
        n += 1
    partial = views[0][:n]
    finals = [_fixed_size(",".join(v[n:]), spec) if n else ",".join(v[n:])
              for v, spec in zip(views, specs)]
    firsts = [v[n] if len(v) > n else "" for v in views]
    inserted = crop = None
    if (insert_resize and all(_args(f)[0] == "rrcrop" for f in firsts) and
            not any(_args(f)[0] == "resize" for f in partial)):
        side = max(_crop_side(f) for f in firsts)
        size = int(math.ceil(side * 8 / 7.0))
        if min(image_size) > size:  # photos larger than it: smaller records
            inserted, crop = "resize=%d" % size, firsts[0]
            partial = partial + [inserted]
    return Split(",".join(partial), finals, inserted, crop)


def _fixed_size(final, spec):
    """final, led by a center crop to the size the cached part gives when
    final alone does not fix its size (refurb-final needs one; on the
    cached image of that size the crop changes nothing)."""
    from refurb_stream.convert import _out_size
    from refurb_stream.multicrop import fixes_size
    size = _out_size(spec)
    if fixes_size(final) or size == "?":
        return final
    return ",".join(f for f in ("centercrop=" + size, final) if f)


def cached_note(split):
    """The line that names the recipe's own cached part (not an inserted
    resize), or None: refurb-final's arguments are only the rest."""
    own = [f for f in _filters(split.partial) if f != split.inserted]
    if not own:
        return None
    return ("give refurb-partial -p '%s' (cached once every r uses; refurb-final's "
            "arguments are the rest)" % split.partial)


def _advise_bin():
    d = os.environ.get("REFURB_BIN")
    if d and os.access(os.path.join(d, "refurb-advise"), os.X_OK):
        return os.path.join(d, "refurb-advise")
    return shutil.which("refurb-advise")


def _advise_row(args, spec, partial_layers):
    """refurb-advise --tsv ARGS -p spec: the row whose first
    partial_layers layers are partial, at the largest r (a dict), or
    None when refurb-advise cannot be run."""
    prog = _advise_bin()
    if not prog:
        return None
    try:
        out = subprocess.run([prog, "-q", "--tsv"] + args + ["-p", spec],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    lines = [l for l in out.splitlines() if l and not l.startswith("#")]
    if not lines or "final_layers" not in lines[0].split("\t"):
        return None
    rows = [dict(zip(lines[0].split("\t"), l.split("\t"))) for l in lines[1:]]
    if not rows:
        return None
    total = max(int(r["final_layers"]) for r in rows)
    want = [r for r in rows if int(r["final_layers"]) == total - partial_layers]
    return want[-1] if want else None


def _layers(spec):
    """Layers of a spec's text (randaug=n=K is K)."""
    n = 0
    for f in _filters(spec):
        name, args = _args(f)
        n += int(args.get("n", 2)) if name == "randaug" else 1
    return n


def _full(split, view):
    return ",".join(p for p in (split.partial, split.finals[view]) if p)


def _model_lines(split, opts):
    """The unique fraction at r and the views' collisions, per group of
    views of one spec."""
    w, h = opts["image_size"]
    lines, done = [], set()
    for v, final in enumerate(split.finals):
        if final in done:
            continue
        done.add(final)
        k = split.finals.count(final)
        row = _advise_row(["--size", "%dx%d" % (w, h), "-e", str(opts["epochs"]),
                           "-R", str(opts["reuse"]), "--views", str(k)],
                          _full(split, v), _layers(split.partial))
        who = "" if k == len(split.finals) else (
            "views %s: " % ", ".join(str(i) for i, f in enumerate(split.finals)
                                     if f == final))
        if row is None:
            lines.append("%sunique fraction and view collisions: refurb-advise "
                         "(refurb's programs) is not on PATH nor in $REFURB_BIN" % who)
            continue
        coll = float(row["view_collision"])
        lines.append("%sunique fraction at r = %d after %d epochs: %s; %s" % (
            who, opts["reuse"], opts["epochs"], row["unique_fraction"],
            "view collisions (%d views alike): %.3g%%%s" % (
                k, coll * 100, " - over 1%: refurb-final refuses these views "
                "(--allow-view-collisions runs them)" if coll > 0.01 else "") if k > 1 else "one view: no view collisions"))
    return lines


def _crop_scale(crop):
    scale = _args(crop)[1].get("scale", "0.08-1")
    return float(scale.split("-")[0])


def _resolution_lines(split, opts):
    """What the inserted resize does to the crop, and the alternative."""
    w, h = opts["image_size"]
    size = int(split.inserted.split("=")[1])
    side, s = _crop_side(split.crop), _crop_scale(split.crop)
    short = min(w, h)
    small = math.sqrt(s * size * size * max(w, h) / short)   # on the resized image
    orig = math.sqrt(s * w * h)                              # on the photo
    keep = opts["source_size"] or short
    return [
        "inserted: %s (not in the recipe) before the RandomResizedCrop: the crop "
        "is cut from the image resized to %d px on its shorter side, not from the "
        "photo: a %g-scale crop (the recipe's smallest) is %.0f px of it, upsampled "
        "%.1fx to %d; on a %dx%d photo (--image-size) torchvision cuts it from %.0f "
        "px (%.1fx)" % (split.inserted, size, s, small, side / small, side, w, h,
                        orig, side / orig),
        "to keep the recipe's resolution: cache the decode at %d px (partial "
        "resize=%d, --source-size N names it; smaller photos are upscaled to it), "
        "the crop stays in the final part" % (keep, keep),
    ] + _cost_lines(split, opts, size, keep)


def _cost_lines(split, opts, size, keep):
    """The alternative's cost per image: measured on --index, else
    estimated from the pixels and said so."""
    if not opts.get("index"):
        ratio = (keep / float(size)) ** 2
        return ["  its cost, estimated from pixel counts (--index INDEX measures it): "
                "records %.1fx larger (raw %.0f KB vs %.0f KB per image at %dx%d), and "
                "the crop resamples from up to %.1fx the pixels" % (
                    ratio, keep * keep * 4 / 3 * 3 / 1e3, size * size * 4 / 3 * 3 / 1e3,
                    opts["image_size"][0], opts["image_size"][1], ratio)]
    rows = []
    for partial in (split.partial, split.partial.replace(split.inserted, "resize=%d" % keep)):
        row = _advise_row(["-n", str(opts["sample"]), "--repeat", "3", "-e",
                           str(opts["epochs"]), "-R", str(opts["reuse"]), "--views",
                           str(len(split.finals)), opts["index"]],
                          ",".join(p for p in (partial, split.finals[0]) if p),
                          _layers(partial))
        rows.append(row)
    if None in rows:
        return ["  its cost: refurb-advise could not time %s (is it on PATH?)"
                % opts["index"]]
    ms = [1e3 / float(r["img_per_cpu_s"]) for r in rows]
    return ["  its cost, measured (refurb-advise -n %d --repeat 3 on %s, the whole "
            "chain's CPU time per sample at r = %d): %.2f ms per image against %.2f "
            "ms, cache %.1f MB against %.1f MB" % (
                opts["sample"], opts["index"], opts["reuse"], ms[1], ms[0],
                float(rows[1]["cache_bytes"]) / 1e6, float(rows[0]["cache_bytes"]) / 1e6)]


def explain(split, reuse=3, epochs=100, image_size=(500, 375), source_size=None,
            index=None, sample=20):
    """The lines that explain split (a list of text lines)."""
    reuse = max(1, min(reuse, epochs))  # r above the epochs is never reached
    opts = dict(reuse=reuse, epochs=epochs, image_size=image_size,
                source_size=source_size, index=index, sample=sample)
    finals = sorted(set(split.finals), key=split.finals.index)
    lines = ["cached once every %d uses (refurb-partial -p): %s" % (
        reuse, split.partial or "nothing (the decode alone)")]
    for f in finals:
        who = "" if len(finals) == 1 else " view%s %s" % (
            "s" if split.finals.count(f) > 1 else "",
            ", ".join(str(i) for i, g in enumerate(split.finals) if g == f))
        lines.append("run on every use%s (refurb-final -p): %s" % (who, f or "nothing"))
    lines += _model_lines(split, opts)
    if split.inserted:
        lines += _resolution_lines(split, opts)
    lines.append("(refurb-advise -p SPEC INDEX times the splits and r on your images)")
    return lines


_OPTIONS = {"--reuse": "reuse", "--epochs": "epochs", "--image-size": "image_size",
            "--source-size": "source_size", "--index": "index"}


def split_options(args):
    """(the other args, the explanation's options) of the converter's
    command line: --reuse R, --epochs E, --image-size WxH, --source-size
    N, --index INDEX take a value; --explain forces the explanation,
    -q/--quiet silences it (by default: when stderr is a terminal).
    Raises ValueError for a bad value."""
    opts = dict(reuse=3, epochs=100, image_size=(500, 375), source_size=None,
                index=None, explain=None)
    rest, i = [], 0
    while i < len(args):
        a = args[i]
        if a == "--explain":
            opts["explain"] = True
        elif a in ("-q", "--quiet"):
            opts["explain"] = False
        elif a in _OPTIONS:
            if i + 1 == len(args):
                raise ValueError("%s needs a value" % a)
            opts[_OPTIONS[a]] = _option_value(a, args[i + 1])
            i += 1
        else:
            rest.append(a)
        i += 1
    return rest, opts


def _option_value(name, text):
    if name == "--index":
        return text
    if name == "--image-size":
        try:
            w, h = (int(v) for v in text.split("x"))
        except ValueError:
            w = h = 0
        if w < 1 or h < 1:
            raise ValueError("--image-size: %r is not WxH (e.g. 500x375)" % text)
        return (w, h)
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise ValueError("%s: %r is not a whole number >= 1" % (name, text))
    return v
