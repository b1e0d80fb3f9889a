"""refurb_stream.multicrop - self-supervised recipes whose views differ in
size (multi-crop: DINO, iBOT, DINOv2, SwAV) as one refurb chain.

    from refurb_stream.multicrop import recipe_from_torchvision, dino_crops
    r = recipe_from_torchvision(DataAugmentationDINO((0.4, 1.), (0.05, 0.4), 8))
    r.partial      # refurb-partial's -p: what every view shares ('' = the decode)
    r.final_args   # refurb-final's: ['-g', '2:GLOBAL1;GLOBAL2', '-g', '8:LOCAL']
    for images, labels in RefurbDataset(fifo):   # images: [N,2,224,224,C], [N,8,96,96,C]
        crops = dino_crops(images)               # DINO's list of 10 crops, N,... each

The views of a recipe are taken whole: a list of transforms, one per
view, or the objects self-supervised code builds (DataAugmentationDINO's
global_transfo1, global_transfo2 and local_crops_number times
local_transfo; MoCo's and SimCLR's wrappers of base_transform).  Each
view is converted with pipeline_from_torchvision; consecutive views of
one output size form a view group (refurb-final -g K:SPEC[;SPEC...]),
each group one array of the reader's batches, (N, K_g, H_g, W_g, C).
The partial pipeline is what every view starts with and draws nothing
(a resize, a center crop, a pad): the record cached once and read once
for all views (the split of refurb_stream.split, which the converter
explains); a recipe whose views start with RandomResizedCrop caches the
decoded image as it is ('' partial), so the crops are taken from the
full-resolution photo as torchvision takes them.

From a shell, python3 -m refurb_stream convert --views EXPR prints
refurb-final's arguments (-g per group when the sizes differ).
"""
import collections

from refurb_stream.convert import ConvertError, _out_size

__all__ = ["Recipe", "recipe_from_torchvision", "group_views", "final_args",
           "split_views", "fixes_size", "dino_crops"]

# filters after which refurb-final knows the output size
FIXING = ("crop", "centercrop", "rrcrop")
MAX_GROUPS, MAX_VIEWS = 8, 64

Recipe = collections.namedtuple("Recipe", "partial finals groups final_args")
Recipe.__doc__ = """partial: refurb-partial's spec; finals: every view's final spec;
groups: [(K, [K specs])] in view order; final_args: refurb-final's arguments."""


def group_views(specs):
    """[(K, [specs])]: consecutive views of one output size, in order."""
    groups = []
    for s in specs:
        if groups and _out_size(groups[-1][0]) == _out_size(s):
            groups[-1].append(s)
        else:
            groups.append([s])
    if len(groups) > MAX_GROUPS:
        raise ConvertError("views: %d groups of views of one size (refurb-final takes "
                           "at most %d): order the views by size" % (len(groups), MAX_GROUPS))
    return [(len(g), g) for g in groups]


def final_args(specs):
    """refurb-final's arguments for the final specs of every view: -p
    (and --views K) for one size, one -g K:SPEC (or K:SPEC1;...;SPECK
    when its views differ) per group of views of one size."""
    if not 1 <= len(specs) <= MAX_VIEWS:
        raise ConvertError("views: %d views (refurb-final takes 1 to %d)" % (len(specs), MAX_VIEWS))
    groups = group_views(specs)
    if len(groups) == 1:
        if all(s == specs[0] for s in specs):
            return ["-p", specs[0]] + (["--views", str(len(specs))] if len(specs) > 1 else [])
        return [a for s in specs for a in ("-p", s)]
    out = []
    for k, g in groups:
        out += ["-g", "%d:%s" % (k, g[0] if all(s == g[0] for s in g) else ";".join(g))]
    return out


def split_views(specs):
    """(partial, finals): the leading filters that draw nothing and that
    every view shares are cached by refurb-partial; each view's rest is
    its final spec, led by a center crop to the cached size when it would
    not fix its size alone.  The converter's split (refurb_stream.split)
    without its inserted resize: views that start with RandomResizedCrop
    cache the decode."""
    from refurb_stream.split import propose_split
    s = propose_split(specs, insert_resize=False)
    return s.partial, s.finals


def fixes_size(spec):
    """Whether spec's output has one size whatever its input's (a crop,
    or a resize to HxW): what refurb-final needs of a final spec."""
    return any(f.split("=")[0] in FIXING or (f.startswith("resize=") and
               "x" in f.split(":")[0]) for f in spec.split(","))


def recipe_from_torchvision(views):
    """The Recipe of a self-supervised recipe's views (see the module's
    doc).  Raises ConvertError naming the view and the transform refurb
    cannot express, or views that do not end in one Normalize."""
    from refurb_stream.convert import views_from_torchvision
    partial, finals = split_views(views_from_torchvision(views))
    return Recipe(partial, finals, [(k, g) for k, g in group_views(finals)],
                  final_args(finals))


def dino_crops(images):
    """DINO's list of crops from a batch of view groups: every group's
    views in order, each N,... (images: the list RefurbDataset or
    open_stream yields, N,K_g,... arrays or tensors)."""
    return [g[:, k] for g in images for k in range(g.shape[1])]
