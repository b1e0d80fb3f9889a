"""refurb_stream.convert - torchvision transforms to a refurb pipeline spec.

    >>> from torchvision import transforms as T
    >>> from refurb_stream import pipeline_from_torchvision
    >>> pipeline_from_torchvision(T.Compose([T.RandomResizedCrop(224),
    ...     T.RandomHorizontalFlip(), T.ToTensor(),
    ...     T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]))
    'rrcrop=224x224:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,flip=p=0.5,normalize=mean=0.485/0.456/0.406:std=0.229/0.224/0.225'

pipeline_from_torchvision(transform) takes a torchvision Compose, a list
of transforms or one transform, of torchvision.transforms (0.14 to 0.29)
or torchvision.transforms.v2 (0.16 to 0.29), and returns the refurb
pipeline text (refurb-pipeline(7)) that does the same on the images
torchvision's loader gives (PIL RGB).  A transform or an argument refurb
cannot express raises ConvertError naming both.  ToTensor / PILToTensor /
ToImage / ToDtype / ConvertImageDtype say what the tensor is; refurb
always works on uint8 pixels and hands them over as uint8 NHWC, or as
float32 NCHW when the pipeline ends in normalize (ToTensor alone becomes
normalize=mean=0:std=1, ToTensor then Normalize(m, s) becomes
normalize=mean=m:std=s; ToDtype(float32, scale=False) keeps 0..255, so
its Normalize(m, s) becomes normalize=mean=m/255:std=s/255).

Also read: torch.nn.Sequential of transforms, objects holding a Compose
in .transforms (torchvision's references presets), Pad followed by
RandomCrop (one crop with padding), ToPILImage (a no-op on the decoded
image), thresholds and fills written after ToTensor (on [0, 1]: scaled
by 255).  Refused: classes that are not torchvision's (whatever their
name), ops torchvision refuses on float tensors, anything after
Normalize but RandomErasing.  Geometric ops after ToTensor run as on the
PIL image (antialiased resize), as refurb always works on pixels.

views_from_torchvision(views) converts one transform per view
(self-supervised recipes) and final_options(specs) gives refurb-final's
arguments: one -p and --views K when all views are alike, one -p per
view when they differ, one -g K:SPEC per group of views of one size when
their sizes differ (multi-crop, refurb_stream.multicrop); views of
different normalizations are refused.

From a shell:  python3 -m refurb_stream convert 'T.Compose([...])'
               python3 -m refurb_stream convert --views '[view1, view2]'
               python3 -m refurb_stream convert --file recipe.py
(--file runs the file and converts its `transform`, or its `views`.)
(T and transforms are torchvision.transforms, v2 is torchvision.transforms.v2
and tv_tensors torchvision.tv_tensors where torchvision has them; every
v1 transform class and InterpolationMode are also in scope; '-' reads the
expression from stdin).

torchvision is not imported here: transforms are recognised by class
name and read through their attributes.  A v1 transform and its v2
namesake share one mapping: _Attrs gives v2's attributes the meaning v1
gives them (a per-type fill dict resolved for the image at that point,
RandomErasing's value None for 'random').
"""
import copy
import math
import sys

__all__ = ["ConvertError", "pipeline_from_torchvision", "views_from_torchvision",
           "final_options", "main"]


class ConvertError(ValueError):
    """A transform (or one of its arguments) refurb cannot express."""


def _num(x):
    """Shortest text of a number that refurb's parser reads back."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


def _range(r):
    return "%s-%s" % (_num(r[0]), _num(r[1]))


def _pixels(n, what, name="size", low=1):
    """n, a whole number of pixels low..65535 (refurb's largest side)."""
    if isinstance(n, bool) or not isinstance(n, (int, float)) or \
            not math.isfinite(n) or n != int(n) or not low <= n <= 65535:
        raise ConvertError("%s: %s %r is not a whole number of pixels %d..65535"
                           % (what, name, n, low))
    return int(n)


def _size(size, what):
    if isinstance(size, int):
        return "%dx%d" % (_pixels(size, what), _pixels(size, what))
    size = list(size)
    if len(size) == 1:
        return "%dx%d" % (_pixels(size[0], what), _pixels(size[0], what))
    if len(size) == 2:
        return "%dx%d" % (_pixels(size[0], what), _pixels(size[1], what))
    raise ConvertError("%s: size %r is not N or (H, W)" % (what, size))


def _interp(t, what, attr="interpolation"):
    mode = getattr(t, attr)
    name = getattr(mode, "value", mode)
    if isinstance(name, int):  # a PIL constant
        name = {0: "nearest", 2: "bilinear", 3: "bicubic"}.get(name, str(name))
    if name not in ("nearest", "bilinear", "bicubic"):
        raise ConvertError("%s: interpolation %s is not nearest, bilinear or bicubic "
                           "(the modes refurb's filters have): use "
                           "InterpolationMode.BICUBIC (the closest to %s) or BILINEAR"
                           % (what, name, name))
    return name


def _fill(fill, what, name="fill"):
    """fill=... text (None: "")."""
    if fill is None:
        return ""
    vals = [fill] if isinstance(fill, (int, float)) else list(fill)
    if len(vals) not in (1, 3) or any(float(v) != int(v) or not 0 <= v <= 255
                                      for v in vals):
        raise ConvertError("%s: %s %r must be 1 or 3 integers 0..255" % (what, name, fill))
    return ":%s=%s" % (name, "/".join(str(int(v)) for v in vals))


class _State:
    """What the data is at this point of the torchvision pipeline."""

    def __init__(self):
        self.kind = "pil"        # pil | uint8 (PILToTensor) | float (ToTensor)
        self.image = "pil"       # the type torchvision dispatches on: pil | Image | Tensor
        self.float_max = 1.0     # a float tensor's value of pixel 255 (255 after
                                 # ToDtype(float32, scale=False))
        self.normalized = False
        self.filters = []        # (text, layers)
        self.random_erased = False  # RandomErasing(value='random') before Normalize


def _key_name(key):
    """The image type a key of v2's per-type dicts (fill, dtype) names."""
    if isinstance(key, str):
        return key  # "others"
    mod, name = getattr(key, "__module__", ""), getattr(key, "__name__", "")
    if (mod, name) == ("PIL.Image", "Image"):
        return "pil"
    if (mod, name) == ("torch", "Tensor"):
        return "Tensor"
    if name == "Image" and mod.split(".")[:2] in (["torchvision", "tv_tensors"],
                                                  ["torchvision", "datapoints"]):
        return "Image"
    return mod + "." + name


def _per_type(value, st):
    """The entry of a v2 per-type dict for the image at this point: its
    exact type's, else "others", else None (as v2's _get_fill looks up)."""
    if not isinstance(value, dict):
        return value
    entries = {_key_name(k): v for k, v in value.items()}
    return entries.get(st.image, entries.get("others"))


def _is_v2(t):
    t = t._t if isinstance(t, _Attrs) else t
    return type(t).__module__.startswith("torchvision.transforms.v2")


class _Attrs:
    """A transform's attributes as v1 spells them, for this image (the
    few that v2 keeps otherwise; the others are read as they are)."""

    def __init__(self, t, st):
        self._t, self._st = t, st

    def __getattr__(self, name):
        value = getattr(self._t, name)
        if name == "fill":
            return _per_type(value, self._st)
        if name == "value" and value is None and _is_v2(self._t):
            return "random"  # v2's RandomErasing keeps value='random' as None
        if (name == "padding" and value is not None and _is_v2(self._t)
                and type(self._t).__name__ == "RandomCrop"):
            left, right, top, bottom = value  # v2 keeps F.pad's order
            return [left, top, right, bottom]
        return value


def _p(t):
    return _num(t.p)


def _colorjitter(t, what):
    parts = []
    for name in ("brightness", "contrast", "saturation", "hue"):
        r = getattr(t, name)
        if r is not None:
            parts.append("%s=%s" % (name, _range(r)))
    return "colorjitter" + ("=" + ":".join(parts) if parts else "")


def _degrees(t):
    return "degrees=%s" % _range(t.degrees)


def _center(t, what):
    """:center=X/Y text (None: "")."""
    if t.center is None:
        return ""
    c = list(t.center)
    if len(c) != 2:
        raise ConvertError("%s: center=%r is not (x, y)" % (what, t.center))
    return ":center=%s/%s" % (_num(c[0]), _num(c[1]))


def _rotation(t, what):
    return "rotation=%s:interp=%s%s%s%s" % (_degrees(t), _interp(t, what),
                                            _fill(t.fill or 0, what),
                                            ":expand=1" if t.expand else "",
                                            _center(t, what))


def _affine(t, what):
    text = "affine=%s" % _degrees(t)
    if t.translate is not None:
        text += ":translate=%s/%s" % (_num(t.translate[0]), _num(t.translate[1]))
    if t.scale is not None:
        text += ":scale=%s" % _range(t.scale)
    if t.shear is not None:
        s = list(t.shear)
        text += ":shear=" + "/".join(_range(s[i:i + 2]) for i in range(0, len(s), 2))
    return text + ":interp=%s%s%s" % (_interp(t, what), _fill(t.fill or 0, what),
                                      _center(t, what))


_PAD_MODES = ("constant", "edge", "reflect", "symmetric")


def _padding(padding, what):
    """pad=... text of torchvision's padding (int, or 1, 2 or 4 ints >= 0)."""
    pad = [padding] if isinstance(padding, int) else list(padding)
    if len(pad) not in (1, 2, 4):
        raise ConvertError("%s: padding %r is not 1, 2 or 4 values" % (what, padding))
    if any(int(v) != v or v < 0 for v in pad):
        raise ConvertError("%s: padding %r: refurb pads by whole pixels >= 0 "
                           "(a negative padding crops: use centercrop or crop)"
                           % (what, padding))
    for v in pad:
        _pixels(v, what, "padding", 0)
    return "pad=" + "/".join(str(int(v)) for v in pad)


def _pad_mode(t, what):
    if t.padding_mode not in _PAD_MODES:
        raise ConvertError("%s: padding_mode=%r is not one of %s"
                           % (what, t.padding_mode, ", ".join(_PAD_MODES)))
    return "" if t.padding_mode == "constant" else ":padding_mode=" + t.padding_mode


def _crop(t, what):
    text = "crop=%s" % _size(t.size, what)
    if t.padding is not None:
        text += ":" + _padding(t.padding, what)
    if t.padding_mode == "constant":
        text += _fill(t.fill, what) if t.fill else ""
    if t.pad_if_needed:
        text += ":pad_if_needed=1"
    return text + _pad_mode(t, what)


def _pad(t, what):
    text = _padding(t.padding, what)
    if t.padding_mode == "constant":
        text += _fill(t.fill, what) if t.fill else ""
    return text + _pad_mode(t, what)


def _on_tensor(name, t, what):
    """Refuse what torchvision's tensor kernels (after ToImage, PILToTensor
    or ToTensor) do otherwise than its PIL ones, which refurb's filters
    reproduce; measured on torchvision 0.29 (tests/convert-v2.bats)."""
    why = None
    if name in ("Resize", "RandomResizedCrop"):
        if _interp(t, what) == "nearest":
            why = ("interpolation nearest on a tensor picks other source pixels "
                   "than PIL's nearest (refurb's)")
        elif getattr(t, "antialias", None) is not True:
            why = ("antialias=%s on a tensor is torch's interpolation without "
                   "antialiasing, not refurb's resize (PIL's, antialiased): use "
                   "antialias=True" % getattr(t, "antialias", None))
    elif name == "ColorJitter" and t.hue is not None and tuple(t.hue) != (0, 0):
        why = ("hue=%r on a tensor is torchvision's float HSV conversion, not "
               "PIL's 8-bit one (refurb's)" % (tuple(t.hue),))
    elif name == "RandomPerspective":
        why = "on a tensor torchvision's perspective samples other pixels than PIL's (refurb's)"
    elif name in ("RandomRotation", "RandomAffine") and _interp(t, what) == "bicubic":
        why = "interpolation bicubic on a tensor (torchvision refuses it)"
    if why:
        raise ConvertError("%s: %s; put it before ToImage/PILToTensor/ToTensor, "
                           "where torchvision works on the PIL image" % (what, why))


def _resize(t, what):
    if t.size is None:
        raise ConvertError("%s: size=None (the longer side to max_size): refurb "
                           "resizes by the shorter side or to H x W: use Resize(N) "
                           "(the shorter side N), Resize(N, max_size=M) (the longer "
                           "one at most M) or Resize((H, W))" % what)
    if isinstance(t.size, int) or len(list(t.size)) == 1:
        n = t.size if isinstance(t.size, int) else list(t.size)[0]
        text = "resize=%d" % _pixels(n, what)
    else:
        text = "resize=%s" % _size(t.size, what)
    if t.max_size is not None:
        text += ":max_size=%d" % _pixels(t.max_size, what, "max_size")
    return text + ":interp=%s" % _interp(t, what)


def _augment_fill(t, what):
    return _fill(t.fill, what) if t.fill is not None else ""


def _bins(t, what):
    """num_magnitude_bins of RandAugment / TrivialAugmentWide, checked:
    with 1 bin torchvision's Posterize divides by num_magnitude_bins - 1."""
    if not 2 <= t.num_magnitude_bins <= 1001:
        raise ConvertError("%s: num_magnitude_bins=%r (torchvision's Posterize "
                           "divides by num_magnitude_bins - 1; refurb takes 2 to "
                           "1001): use 2 or more (31 is torchvision's default)"
                           % (what, t.num_magnitude_bins))
    return t.num_magnitude_bins


def _randaug(t, what):
    if t.num_ops == 0:
        return None  # torchvision draws no op: the image as it is
    bins = _bins(t, what)
    if not 0 <= t.magnitude < bins:
        raise ConvertError("%s: magnitude=%r with num_magnitude_bins=%d (torchvision "
                           "indexes the bins by magnitude and fails on the first image "
                           "with an IndexError): use a magnitude of 0 to %d, or more bins"
                           % (what, t.magnitude, bins, bins - 1))
    if not 1 <= t.num_ops <= 16:
        raise ConvertError("%s: num_ops=%r (refurb takes 0 to 16): use fewer ops"
                           % (what, t.num_ops))
    return "randaug=n=%d:m=%d:bins=%d:interp=%s%s" % (
        t.num_ops, t.magnitude, t.num_magnitude_bins, _interp(t, what),
        _augment_fill(t, what))


def _autoaug(t, what):
    policy = getattr(t.policy, "value", str(t.policy)).lower()
    if policy not in ("imagenet", "cifar10", "svhn"):
        raise ConvertError("%s: policy %s" % (what, t.policy))
    return "autoaug=policy=%s:interp=%s%s" % (policy, _interp(t, what),
                                             _augment_fill(t, what))


def _blur(t, what):
    kx, ky = t.kernel_size
    return "gaussblur=kernel_size=%dx%d:sigma=%s" % (ky, kx, _range(t.sigma))


def _perspective(t, what):
    return "perspective=distortion_scale=%s:p=%s:interp=%s%s" % (
        _num(t.distortion_scale), _p(t), _interp(t, what), _fill(t.fill or 0, what))


def _augmix(t, what):
    """AugMix: every argument; bicubic and what refurb bounds are named."""
    interp = _interp(t, what)
    if interp == "bicubic":
        raise ConvertError("%s: interpolation bicubic (AugMix works on a tensor: "
                           "nearest or bilinear; torchvision refuses it too)" % what)
    if not 1 <= int(t.severity) <= 10:
        raise ConvertError("%s: severity=%r (1..10)" % (what, t.severity))
    if not 1 <= int(t.mixture_width) <= 16:
        raise ConvertError("%s: mixture_width=%r (refurb takes 1..16)"
                           % (what, t.mixture_width))
    if int(t.chain_depth) > 16:
        raise ConvertError("%s: chain_depth=%r (refurb takes up to 16, or <= 0 "
                           "for 1..3 at random)" % (what, t.chain_depth))
    if not float(t.alpha) > 0:
        raise ConvertError("%s: alpha=%r (Dirichlet needs alpha > 0)" % (what, t.alpha))
    depth = int(t.chain_depth) if int(t.chain_depth) > 0 else -1
    fill = _fill(t.fill, what) if t.fill is not None else ":fill=none"
    return "augmix=severity=%d:width=%d:depth=%d:alpha=%s:all_ops=%d:interp=%s%s" % (
        int(t.severity), int(t.mixture_width), depth, _num(t.alpha),
        1 if t.all_ops else 0, interp, fill)


# class name -> function(transform, what) giving the filter text; these
# work on pixels and keep to any position before normalize
_SIMPLE = {
    "Resize": _resize,
    "CenterCrop": lambda t, w: "centercrop=%s" % _size(t.size, w),
    "RandomCrop": _crop,
    "Pad": _pad,
    "RandomResizedCrop": lambda t, w: "rrcrop=%s:scale=%s:ratio=%s:interp=%s" % (
        _size(t.size, w), _range(t.scale), _range(t.ratio), _interp(t, w)),
    "RandomHorizontalFlip": lambda t, w: "flip=p=%s" % _p(t),
    "RandomVerticalFlip": lambda t, w: "vflip=p=%s" % _p(t),
    "RandAugment": _randaug,
    "AutoAugment": _autoaug,
    "TrivialAugmentWide": lambda t, w: "trivialaug=bins=%d:interp=%s%s" % (
        _bins(t, w), _interp(t, w), _augment_fill(t, w)),
    "ColorJitter": _colorjitter,
    "RandomGrayscale": lambda t, w: "grayscale=p=%s" % _p(t),
    "GaussianBlur": _blur,
    # a threshold below 0 inverts every pixel, as 0 does (refurb takes 0 and up)
    "RandomSolarize": lambda t, w: "solarize=threshold=%s:p=%s" % (
        _num(max(t.threshold, 0)), _p(t)),
    "RandomPosterize": lambda t, w: "posterize=bits=%d:p=%s" % (t.bits, _p(t)),
    "RandomEqualize": lambda t, w: "equalize=p=%s" % _p(t),
    "RandomAutocontrast": lambda t, w: "autocontrast=p=%s" % _p(t),
    "RandomAdjustSharpness": lambda t, w: "sharpness=factor=%s:p=%s" % (
        _num(t.sharpness_factor), _p(t)),
    "RandomInvert": lambda t, w: "invert=p=%s" % _p(t),
    "RandomRotation": _rotation,
    "RandomAffine": _affine,
    "RandomPerspective": _perspective,
    "AugMix": _augmix,
}

# filters that change the image's size or channels (RandomOrder cannot
# gate them in refurb; RandomApply and RandomChoice can, but Grayscale)
_RESHAPING = ("Resize", "CenterCrop", "RandomCrop", "RandomResizedCrop", "Grayscale", "Pad")


def _erasing(t, what, st):
    if st.kind == "pil" and not _is_v2(t):
        raise ConvertError("%s: needs a tensor (torchvision refuses PIL images); "
                           "put it after ToTensor or PILToTensor" % what)
    vals = [t.value] if isinstance(t.value, (int, float)) else t.value
    head = "erasing=p=%s:scale=%s:ratio=%s" % (_p(t), _range(t.scale), _range(t.ratio))
    if st.normalized:  # on the float tensor, after normalize
        if isinstance(vals, str):
            return head + ":value=random"
        if len(vals) not in (1, 3):
            raise ConvertError("%s: value=%r needs 1 or 3 values" % (what, t.value))
        return head + ":value=" + "/".join(_num(v) for v in vals)
    if isinstance(vals, str):
        if st.kind != "float":
            raise ConvertError("%s: value=%r on a uint8 tensor (torchvision casts the "
                               "normal values to uint8): put ToTensor before it, or "
                               "erase with a whole value" % (what, t.value))
        st.random_erased = True  # drawn at normalize: only erasing until then
        return head + ":value=random"
    vals = list(vals)
    scale = 255.0 / st.float_max if st.kind == "float" else 1.0
    px = [v * scale for v in vals]
    if any(abs(v - round(v)) > 1e-6 or not 0 <= v <= 255 for v in px):
        raise ConvertError("%s: value=%r is not a whole pixel value (0..255%s): "
                           "refurb erases pixels before Normalize; give whole pixel "
                           "values, or put RandomErasing after Normalize, where it "
                           "erases the float tensor with any value (value=0 there is "
                           "the colour of Normalize's mean)"
                           % (what, t.value, ", as v * 255 after ToTensor"
                              if st.kind == "float" and st.float_max == 1 else ""))
    return head + _fill([round(v) for v in px], what, "value")


def _layers(text):
    """Layers a filter text expands to (randaug=n=K is K layers)."""
    if text.startswith("randaug="):
        for arg in text.split("=", 1)[1].split(":"):
            if arg.startswith("n="):
                return int(arg[2:])
        return 2
    return 1


def _add(st, text, what=None):
    what = what or text.split("=")[0]
    if st.normalized:
        raise ConvertError("%s after Normalize (refurb normalizes last, its filters "
                           "work on the pixels): put it before Normalize"
                           % what)
    if st.random_erased:
        raise ConvertError("%s after RandomErasing(value='random') (refurb draws its "
                           "values at Normalize: only RandomErasing may come between, "
                           "move it before)" % what)
    st.filters.append((text, _layers(text)))


def _transforms_of(t):
    return list(getattr(t, "transforms", t))


def _torchvision(t):
    """Whether t is an object of torchvision's (not a class of the same name)."""
    return type(t).__module__.split(".")[0] == "torchvision"


def _convert_list(items, st, where):
    items = list(items)
    i = 0
    while i < len(items):
        t = items[i]
        nxt = items[i + 1] if i + 1 < len(items) else None
        if _is(t, "Pad") and _is(nxt, "RandomCrop") and nxt.padding is None:
            # Pad then RandomCrop is RandomCrop with padding: crop= pads
            crop = copy.copy(nxt)
            crop.padding, crop.fill, crop.padding_mode = t.padding, t.fill, t.padding_mode
            _convert(crop, st, "%s[%d..%d]" % (where, i, i + 1))
            i += 2
            continue
        _convert(t, st, "%s[%d]" % (where, i))
        i += 1


def _is(t, name):
    return t is not None and type(t).__name__ == name and _torchvision(t)


def _to_pil(t, st, what):
    """ToPILImage: a no-op on the decoded image; after ToTensor /
    PILToTensor it gives the uint8 pixels back."""
    if st.normalized:
        raise ConvertError("%s: after Normalize (refurb normalizes last)" % what)
    if t.mode not in (None, "RGB", "L"):
        raise ConvertError("%s: mode=%r (refurb keeps RGB or L images)" % (what, t.mode))
    st.kind, st.image, st.float_max = "pil", "pil", 1.0


# torchvision refuses these on a float tensor (ToTensor before them)
_UINT8_ONLY = ("RandomPosterize", "RandomEqualize", "RandAugment", "AutoAugment",
               "TrivialAugmentWide")


def _float_tensor(t, name, what, st):
    """A transform after ToTensor sees floats in [0, 1] (0..255 after
    ToDtype(float32, scale=False)); refurb works on the uint8 pixels they
    came from: thresholds and fills scale to pixel values.  Returns a
    copy: the user's transform is kept as it was."""
    t = copy.copy(t)
    scale = 255.0 / st.float_max
    if name in _UINT8_ONLY:
        raise ConvertError("%s: torchvision refuses a float tensor here (it needs "
                           "uint8: put it before ToTensor)" % what)
    if name == "RandomSolarize":
        t.threshold = t.threshold * scale
    fill = _per_type(getattr(t, "fill", None), st)
    if fill:
        vals = [fill] if isinstance(fill, (int, float)) else list(fill)
        t.fill = [round(v * scale, 6) for v in vals]
    return t


# transforms of batches, and of boxes, masks and key points: named apart
_BATCH = ("CutMix", "MixUp")
_DETECTION = ("SanitizeBoundingBoxes", "ClampBoundingBoxes", "ConvertBoundingBoxFormat",
              "SanitizeKeyPoints", "ClampKeyPoints", "SetClampingMode", "RandomIoUCrop")


def _not_finite(value):
    """Whether value (a number, or numbers in lists, tuples, dicts or a
    tensor) holds a NaN or an infinity."""
    if isinstance(value, bool) or isinstance(value, str):
        return False
    if isinstance(value, (int, float)):
        return not math.isfinite(value)
    if isinstance(value, dict):
        value = list(value.values())
    elif hasattr(value, "tolist") and callable(value.tolist):  # a tensor
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return any(_not_finite(v) for v in value)
    return False


# the bounds refurb's filters give an argument, per transform: (low, high,
# low included); torchvision checks some of them only when it runs
_BOUNDS = {
    ("RandomResizedCrop", "scale"): (0.0, 1.0, False),
    ("RandomResizedCrop", "ratio"): (0.0, 1e6, False),
    ("RandomErasing", "scale"): (0.0, 1.0, False),
    ("RandomErasing", "ratio"): (0.0, 1e6, False),
    ("GaussianBlur", "sigma"): (0.0, math.inf, False),
    ("RandomPosterize", "bits"): (0, 8, True),
}


def _check_args(t, name, what):
    """Refuse, naming the transform and the argument, what refurb's
    parser would refuse in the text written for it: a NaN or infinite
    number, a probability p outside 0..1, and the bounds of _BOUNDS
    (torchvision keeps its arguments as attributes of the same names)."""
    args = {k: v for k, v in sorted(vars(t).items()) if not k.startswith("_")}
    for arg, value in args.items():
        if _not_finite(value):
            # a list whether torchvision keeps a tuple or a list (0.14 / 0.2x)
            shown = list(value) if isinstance(value, tuple) else value
            raise ConvertError("%s: %s=%r is not a finite number (refurb's filters "
                               "take finite values)" % (what, arg, shown))
    p = args.get("p")
    if isinstance(p, (int, float)) and not isinstance(p, bool) and not 0 <= p <= 1:
        raise ConvertError("%s: p=%r is not a probability 0..1" % (what, p))
    for (kind, arg), (low, high, closed) in _BOUNDS.items():
        if kind != name or args.get(arg) is None:
            continue
        value = args[arg]
        vals = list(value) if isinstance(value, (list, tuple)) else [value]
        ok = all((low <= v if closed else low < v) and v <= high for v in vals)
        if not ok or vals != sorted(vals):
            raise ConvertError("%s: %s=%r: refurb takes %s %s %s <= %s%s" % (
                what, arg, value, _num(low), "<=" if closed else "<", arg,
                _num(high), " (low <= high)" if len(vals) > 1 else ""))
    if name == "Normalize" and not _not_finite(args.get("std")):
        std = args.get("std")
        std = std.tolist() if hasattr(std, "tolist") else std
        if any(v == 0 for v in ([std] if isinstance(std, (int, float)) else std)):
            raise ConvertError("%s: std=%r has a 0 (torchvision divides by it)"
                               % (what, args.get("std")))


def _is_tv_class(cls):
    return cls.__module__.split(".")[0] == "torchvision"


def _torchvision_base(t, what):
    """The name of the torchvision class that t, an object of a user's
    class, is a subclass of and behaves as (its own classes only set it
    up: DINO's GaussianBlur(RandomApply)), or None when no torchvision
    class is among its bases.  Raises ConvertError when a class below
    that base has its own __call__ or forward."""
    mro = type(t).__mro__
    base = next((c for c in mro if _is_tv_class(c)), None)
    if base is None:
        return None
    for cls in mro[:mro.index(base)]:
        own = [m for m in ("__call__", "forward") if m in vars(cls)]
        if own:
            raise ConvertError("%s: a subclass of torchvision's %s with its own %s: "
                               "refurb cannot know what it does; use torchvision's "
                               "transform" % (what, base.__name__, own[0]))
    return base.__name__


def _convert(t, st, where):
    name = type(t).__name__
    what = "%s (%s)" % (name, where)
    tv = _torchvision(t)
    if not tv and not isinstance(t, (list, tuple)):
        base = _torchvision_base(t, what)
        name, tv = (base, True) if base else (name, False)
    if st.kind == "float" and name in _SIMPLE and tv:
        t = _float_tensor(t, name, what, st)
    if isinstance(t, (list, tuple)) or (name == "Compose" and tv) or \
            (name == "Sequential" and type(t).__module__.startswith("torch.nn")):
        _convert_list(_transforms_of(t), st, where)
    elif not tv and hasattr(t, "transforms"):
        # a wrapper holding a Compose, as torchvision's references presets
        # (ClassificationPresetTrain: self.transforms = Compose([...]))
        _convert(t.transforms, st, "%s.transforms" % where)
    elif not tv:
        raise ConvertError("%s: not torchvision's %s (a class of module %s): refurb "
                           "cannot know what its __call__ does; use torchvision's "
                           "transform" % (what, name, type(t).__module__))
    elif _check_args(t, name, what):
        pass
    elif name in _SIMPLE:
        if st.kind == "float" and name == "AugMix":
            raise ConvertError("%s: on a float tensor (after ToTensor) torchvision "
                               "mixes without rounding to uint8; put it before "
                               "ToTensor" % what)
        if st.kind != "pil":
            _on_tensor(name, _Attrs(t, st), what)
        text = _SIMPLE[name](_Attrs(t, st), what)
        if text is not None:  # None: the transform leaves the image as it is
            _add(st, text, what)
    elif name == "Grayscale":
        _add(st, "gray", what)
        if t.num_output_channels == 3:
            _add(st, "rgb", what)
    elif name == "RandomApply":
        _random_apply(t, st, what, where)
    elif name in ("RandomChoice", "RandomOrder"):
        _random_choice(t, st, what, where, name)
    elif name == "RandomErasing":
        st.filters.append((_erasing(_Attrs(t, st), what, st), 1))  # also after Normalize
    elif name in ("PILToTensor", "ToTensor", "ToImage", "ToPureTensor"):
        _to_tensor(t, st, what, name)
    elif name == "ToPILImage":
        _to_pil(t, st, what)
    elif name == "ConvertImageDtype":
        _to_dtype(t.dtype, True, st, what)
    elif name == "ToDtype":
        _to_dtype(_per_type(t.dtype, st), t.scale, st, what)
    elif name == "Normalize":
        _normalize(t, st, what)
    elif name == "Identity":
        pass
    elif name in _BATCH:
        raise ConvertError("%s: %s mixes the images and labels of a batch: apply it "
                           "to each batch in the training loop (images, labels = "
                           "v2.%s(num_classes=N)(images, labels) on the reader's "
                           "batches), not in a per-image pipeline" % (what, name, name))
    elif name in _DETECTION:
        raise ConvertError("%s: %s works on bounding boxes, masks or key points "
                           "(detection, segmentation): refurb's pipelines feed "
                           "classification images and labels only" % (what, name))
    elif name == "Lambda":
        raise ConvertError("%s: refurb has no filter for Lambda (its Python function "
                           "cannot run in refurb's C chain): apply the function to the "
                           "reader's batches in the training loop, or write it with "
                           "the transforms refurb has (refurb-pipeline(7))" % what)
    else:
        raise ConvertError("%s: refurb has no filter for %s: leave it out, or apply "
                           "it to the reader's batches in the training loop "
                           "(refurb-pipeline(7) lists the filters)" % (what, name))


def _to_tensor(t, st, what, name):
    """ToImage, PILToTensor, ToTensor (a PIL image becomes a tensor) and
    ToPureTensor (a tv_tensors.Image becomes a plain tensor)."""
    if name == "ToPureTensor":
        if st.kind != "pil":
            st.image = "Tensor"
        return
    if st.kind != "pil":
        if name == "ToImage":
            st.image = "Image"
        elif not _is_v2(t):  # v2 passes tensors through, v1 refuses them
            raise ConvertError("%s: needs a PIL image (the image is already a tensor)"
                               % what)
        return
    st.kind = "float" if name == "ToTensor" else "uint8"
    st.float_max = 1.0
    st.image = "Image" if name == "ToImage" else "Tensor"


def _to_dtype(dtype, scale, st, what):
    """ToDtype(dtype, scale) / ConvertImageDtype(dtype) (= scale=True) on
    the image; a PIL image and dtype None pass through (as in v2)."""
    name = str(dtype).replace("torch.", "")
    if dtype is None or st.kind == "pil":
        return
    if name == "uint8":
        if st.kind == "uint8":
            return
        if st.normalized or bool(scale) == (st.float_max == 255.0):
            raise ConvertError("%s: uint8 with scale=%s from a %s float tensor: "
                               "refurb cannot express it"
                               % (what, scale, "normalized" if st.normalized
                                  else "0..%s" % _num(st.float_max)))
        st.kind, st.float_max = "uint8", 1.0  # both keep every pixel value
        return
    if name != "float32":
        raise ConvertError("%s: dtype %s: refurb hands over uint8 or float32 "
                           "(ToDtype(torch.float32, scale=True) for [0, 1])"
                           % (what, name))
    if st.kind == "uint8":
        st.kind, st.float_max = "float", 1.0 if scale else 255.0


_TYPE_CHANGING = ("Normalize", "ToTensor", "PILToTensor", "ToImage", "ToPureTensor",
                  "ToDtype", "ConvertImageDtype")


_GATES = {"RandomApply": "apply", "RandomChoice": "choice", "RandomOrder": "order"}


def _gated(t, st, what, where, sub, i, gate):
    """The filters of sub, the i-th transform gated by gate (RandomApply,
    RandomChoice or RandomOrder), as a _State."""
    inner = _State()
    inner.kind, inner.image, inner.float_max = st.kind, st.image, st.float_max
    inner.normalized = st.normalized
    sub_name = type(sub).__name__
    if sub_name in _GATES or sub_name == "Grayscale" or sub_name in _TYPE_CHANGING:
        raise ConvertError("%s: cannot gate %s (refurb's %s gates only filters "
                           "that keep the image's channels and type)"
                           % (what, sub_name, _GATES[gate]))
    if gate == "RandomOrder" and (sub_name in _RESHAPING or (
            sub_name == "RandomRotation" and sub.expand)):
        raise ConvertError("%s: cannot gate %s%s (refurb's order gates only filters "
                           "that keep the image's size, channels and type)"
                           % (what, sub_name, "(expand=True)" if sub_name ==
                              "RandomRotation" else ""))
    _convert(sub, inner, "%s.transforms[%d]" % (where, i))
    return inner


def _random_choice(t, st, what, where, name):
    """RandomChoice / RandomOrder: choice=n=K[:p=...][:layers=...] or
    order=n=K[:layers=...], then each transform's filters."""
    options = [_gated(t, st, what, where, sub, i, name)
               for i, sub in enumerate(_transforms_of(t.transforms))]
    if any(o.random_erased for o in options):
        raise ConvertError("%s: cannot hold RandomErasing(value='random') before "
                           "Normalize (its values are drawn at Normalize)" % what)
    if not options:
        raise ConvertError("%s: no transforms" % what)
    if len(options) > 16:
        raise ConvertError("%s: %d transforms (refurb's %s takes at most 16)"
                           % (what, len(options), _GATES[name]))
    if any(not o.filters for o in options):
        raise ConvertError("%s: a transform that does nothing in refurb (%s) "
                           "cannot be an option" % (what, "ToTensor or PILToTensor"))
    text = "%s=n=%d" % (_GATES[name], len(options))
    p = getattr(t, "p", None)
    if p is not None:
        p = list(p)
        if len(p) != len(options) or any(v < 0 for v in p) or not sum(p) > 0:
            raise ConvertError("%s: p=%r needs a weight >= 0 per transform, not all 0"
                               % (what, p))
        text += ":p=" + "/".join(_num(v) for v in p)
    if any(len(o.filters) != 1 for o in options):
        text += ":layers=" + "/".join(str(sum(k for _, k in o.filters)) for o in options)
    _add(st, text, what)
    for o in options:
        st.filters.extend(o.filters)


def _random_apply(t, st, what, where):
    inner = _State()
    inner.kind, inner.image, inner.float_max = st.kind, st.image, st.float_max
    inner.normalized = st.normalized
    for i, sub in enumerate(_transforms_of(t.transforms)):
        gated = _gated(t, st, what, where, sub, i, "RandomApply")
        inner.filters.extend(gated.filters)
        inner.random_erased |= gated.random_erased
    n = sum(k for _, k in inner.filters)
    if n == 0:
        return
    _add(st, "apply=p=%s:n=%d" % (_p(t), n), what)
    st.random_erased |= inner.random_erased
    st.filters.extend(inner.filters)


def _normalize(t, st, what):
    if st.kind != "float":
        raise ConvertError("%s: needs a float tensor (ToTensor, or ToImage then "
                           "ToDtype(torch.float32, scale=True), first)" % what)
    if st.normalized:
        raise ConvertError("%s: a second Normalize" % what)
    mean = [t.mean] if isinstance(t.mean, (int, float)) else list(t.mean)
    std = [t.std] if isinstance(t.std, (int, float)) else list(t.std)
    if len(mean) not in (1, 3) or len(std) not in (1, 3):
        raise ConvertError("%s: mean and std need 1 or 3 values" % what)
    f = st.float_max  # (v * f / 255 - m) / s = (v / 255 - m / f) / (s / f)
    st.filters.append(("normalize=mean=%s:std=%s" % ("/".join(_num(v / f) for v in mean),
                                                     "/".join(_num(v / f) for v in std)), 1))
    st.normalized = True
    st.random_erased = False


def pipeline_from_torchvision(transform):
    """The refurb pipeline text of a torchvision Compose, list or transform.

    Raises ConvertError (a ValueError) naming the transform, its position
    and the argument refurb cannot express.
    """
    st = _State()
    _convert(transform, st, "transforms")
    if st.kind == "float" and not st.normalized:  # ToTensor's [0, 1] floats, or 0..255
        st.filters.append(("normalize=mean=0:std=%s" % _num(1 / st.float_max), 1))
    return ",".join(text for text, _ in st.filters)


def _after(views, name):
    """A function that puts views' transform `name` (DINOv2's geometric
    augmentations, run before each view's own transforms) first, if
    views has it."""
    first = getattr(views, name, None)
    return (lambda t: t) if first is None else (lambda t: [first, t])


def _view_list(views):
    """The transforms of views: a list, a wrapper of one base transform
    (MoCo's TwoCropsTransform(base_transform), MoCo v3's of base_transform1
    and base_transform2, SimCLR's
    ContrastiveLearningViewGenerator(base_transform, n_views)), or DINO's
    DataAugmentationDINO (global_transfo1, global_transfo2, local_transfo
    times local_crops_number; iBOT's DataAugmentationiBOT: global_transfo2
    global_crops_number - 1 times, no local_transfo without local crops;
    DINOv2's, whose geometric_augmentation_global and _local run first)."""
    if not isinstance(views, (list, tuple)) and hasattr(views, "base_transform"):
        return [views.base_transform] * int(getattr(views, "n_views", 2))
    if not isinstance(views, (list, tuple)) and hasattr(views, "base_transform1"):
        # MoCo v3's TwoCropsTransform(base_transform1, base_transform2)
        return [views.base_transform1, views.base_transform2]
    if not isinstance(views, (list, tuple)) and hasattr(views, "global_transfo1"):
        # DINO's DataAugmentationDINO: two global crops, then the local ones
        n_global = int(getattr(views, "global_crops_number", 2))
        n_local = int(getattr(views, "local_crops_number", 0))
        glob = _after(views, "geometric_augmentation_global")
        local = [_after(views, "geometric_augmentation_local")(views.local_transfo)] \
            if n_local > 0 else []
        return ([glob(views.global_transfo1)] +
                [glob(views.global_transfo2)] * (n_global - 1) + local * n_local)
    if not isinstance(views, (list, tuple)):
        raise ConvertError("views: %s is not a list of transforms (nor a wrapper "
                           "with base_transform)" % type(views).__name__)
    return list(views)


def views_from_torchvision(views):
    """The final pipeline of every view: a list of K specs.

    views is a list of transforms, one per view (or an object with
    base_transform and n_views, as MoCo's and SimCLR's wrappers).
    refurb-final runs them as K views of every sample (final_options()
    gives its arguments).  Views may differ (BYOL's and DINO's asymmetric
    views) and differ in size (DINO's local crops: view groups, see
    refurb_stream.multicrop) but must end alike (the same Normalize, or
    none): a stream has one dtype and normalization.  Raises
    ConvertError naming the view and the transform otherwise.
    """
    views = _view_list(views)
    if not 1 <= len(views) <= 64:
        raise ConvertError("views: %d views (refurb-final takes 1 to 64)" % len(views))
    specs = []
    for v, t in enumerate(views):
        try:
            specs.append(pipeline_from_torchvision(t))
        except ConvertError as e:
            raise ConvertError("views[%d]: %s" % (v, e)) from None
    norm0 = _ending(specs[0])
    for v, spec in enumerate(specs[1:], 1):
        if _ending(spec) != norm0:
            raise ConvertError("views[%d] ends in %s, views[0] in %s: every view of a "
                               "stream needs the same Normalize (or none)"
                               % (v, _ending(spec) or "no normalize", norm0 or "no normalize"))
    return specs


def final_options(specs):
    """refurb-final's arguments for the views of views_from_torchvision:
    ['-p', spec, '--views', 'K'] when every view is the same recipe, one
    '-p' per view when they differ, ['-g', 'K:SPEC', ...] per group of
    views of one size when their sizes differ (refurb_stream.multicrop)."""
    from refurb_stream.multicrop import final_args
    return final_args(specs)


def _out_size(spec):
    """HxW of a spec's output: its last crop, or resize to HxW ("?" if none)."""
    size = "?"
    for f in spec.split(","):
        name, _, args = f.partition("=")
        first = args.split(":")[0]
        if name in ("crop", "centercrop", "rrcrop") or (name == "resize" and "x" in first):
            size = first
    return size


def _ending(spec):
    """The spec's normalize filter, or None."""
    for f in spec.split(","):
        if f.startswith("normalize="):
            return f
    return None


def _namespace():
    import torch
    import torchvision
    from torchvision import transforms

    ns = {"T": transforms, "transforms": transforms, "torch": torch,
          "torchvision": torchvision}
    try:  # interpolation=Image.BICUBIC, as older recipes write it
        from PIL import Image
        ns["Image"] = Image
    except ImportError:
        pass
    for name in dir(transforms):
        if not name.startswith("_"):
            ns[name] = getattr(transforms, name)
    try:  # torchvision >= 0.16 (0.15's v2 is a beta)
        from torchvision.transforms import v2
        from torchvision import tv_tensors
        ns.update(v2=v2, tv_tensors=tv_tensors)
    except ImportError:
        pass
    return ns


USAGE = ("usage: python3 -m refurb_stream convert EXPRESSION   (EXPRESSION '-' = stdin)\n"
         "       python3 -m refurb_stream convert --views EXPRESSION\n"
         "       python3 -m refurb_stream convert --file RECIPE.py\n"
         "  --views: EXPRESSION is a list of transforms, one per view (or a\n"
         "  DataAugmentationDINO-like object); prints refurb-final's -p (and\n"
         "  --views) arguments, or one -g K:SPEC per group of views of one size\n"
         "  --file: runs RECIPE.py and converts what it names transform (the\n"
         "  spec) or views (refurb-final's arguments)\n"
         "  The split it proposes (cached / run on every use), its unique fraction\n"
         "  and view collisions are explained on stderr when stderr is a terminal\n"
         "  (options before EXPRESSION):\n"
         "  --explain forces it, -q silences it; --reuse R (3), --epochs E (100),\n"
         "  --image-size WxH (500x375), --source-size N, --index INDEX (measure\n"
         "  the costs) shape it (refurb(7), THE SPLIT EXPLAINED)")


def _from_file(path):
    """(object, is_views) of a recipe file's `views` or `transform`."""
    import os
    import runpy
    d = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, d)  # its own helper modules beside it
    try:
        ns = runpy.run_path(path)
    finally:
        sys.path.remove(d)
    if "views" in ns:
        return ns["views"], True
    if "transform" in ns:
        return ns["transform"], False
    raise ValueError("%s defines neither transform nor views" % path)


def _explain_split(split, views, opts):
    """The split, explained on stderr when it is a terminal or --explain
    asks (refurb_stream.split); else, for views, one line naming the
    cached part that refurb-final's arguments leave out (-q: nothing)."""
    from refurb_stream.split import cached_note, explain
    if opts["explain"] is False:
        return
    if opts["explain"] is None and not sys.stderr.isatty():
        note = cached_note(split) if views else None
        lines = [note] if note else []
    else:
        lines = explain(split, opts["reuse"], opts["epochs"], opts["image_size"],
                        opts["source_size"], opts["index"])
    for line in lines:
        print("refurb_stream convert: %s" % line, file=sys.stderr)


def main(args):
    """python3 -m refurb_stream convert EXPRESSION: print the pipeline."""
    from refurb_stream.split import split_options
    if args and args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    try:
        args, split_opts = split_options(args)
    except ValueError as e:
        print("refurb_stream convert: %s\n%s" % (e, USAGE), file=sys.stderr)
        return 2
    unknown = [a for a in args if a.startswith("--") and a not in ("--views", "--file")]
    if unknown:
        print("refurb_stream convert: unknown option %s (see --help)" % unknown[0],
              file=sys.stderr)
        return 2
    mode = args[0] if args and args[0] in ("--views", "--file") else None
    if mode:
        args = args[1:]
    if len(args) != 1:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        if mode == "--file":
            transform, views = _from_file(args[0])
        else:
            text = sys.stdin.read() if args[0] == "-" else args[0]
            transform = eval(text, _namespace())  # noqa: S307 - the user's own code
            views = mode == "--views"
    except Exception as e:  # noqa: BLE001 - any error of the user's code
        print("refurb_stream convert: cannot %s: %s: %s"
              % ("run " + args[0] if mode == "--file" else "evaluate the expression",
                 type(e).__name__, e), file=sys.stderr)
        return 2
    from refurb_stream.split import propose_split
    try:
        if views:
            import shlex
            split = propose_split(views_from_torchvision(transform), split_opts["image_size"])
            # the final part of the split explained, to run on its cached part
            print(" ".join(shlex.quote(a) for a in final_options(split.finals)))
        else:
            spec = pipeline_from_torchvision(transform)
            split = propose_split([spec], split_opts["image_size"])
            print(spec)
    except ConvertError as e:
        print("refurb_stream convert: %s" % e, file=sys.stderr)
        return 1
    sys.stdout.flush()
    _explain_split(split, views, split_opts)
    return 0


if __name__ == "__main__":  # python3 -m refurb_stream.convert, as ... -m refurb_stream convert
    sys.exit(main(sys.argv[1:]))
