"""The plan identity of a batch stream (refurb-stream(5), Extra text):
everything that changes the batches, by name, from the stream's header,
and the check of a checkpoint against it.  RefurbDataset.state_dict()
and launch()'s RankChain.state_dict() keep it; load_state_dict() and
launch(state=...) check it.  Imports neither torch nor numpy.
"""
import hashlib
import json
import warnings

from refurb_stream import StreamError

# identity components the HEADER's extra text gives (refurb-stream(5)):
# (key in the stream, name in the identity and its messages)
EXTRA_IDENTITY = (("schedule", "schedule"), ("reuse", "r"), ("policy", "policy"),
                  ("evict-seed", "evict-seed"), ("shuffle", "shuffle"),
                  ("balance", "balance"), ("drop-last", "drop-last"), ("even", "even"),
                  ("partial-seed", "partial-seed"),
                  ("partial-max-pixels", "partial-max-pixels"))
# the order in which differences are named: the programs' order
_IDENTITY_ORDER = ("index", "schedule", "r", "policy", "evict-seed", "shard", "plan-seed",
                   "shuffle", "balance", "costs", "drop-last", "even", "batch-size",
                   "epoch-images", "partial-seed", "partial-max-pixels", "partial-pipeline",
                   "final-seed", "final-pipeline", "views", "shape", "dtype", "layout",
                   "normalize")


def _order(key):
    """Sort key of an identity component (unknown ones last)."""
    return (_IDENTITY_ORDER.index(key) if key in _IDENTITY_ORDER else len(_IDENTITY_ORDER), key)


def digest(identity):
    """16 hex digits of an identity (the checkpoint's 'plan')."""
    text = json.dumps(identity, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def legacy_identity(h):
    """The identity checkpoints of refurb 0.1's first reader kept for
    header h: a hash that left out r, the schedule, the shuffle... (see
    plan_identity)."""
    text = "%016x:%d:%d:%d/%d:%d:%d:%s|%s" % (
        h.index_identity, h.plan_seed, h.augment_seed, h.shard_k, h.shard_n,
        h.batch_size, h.epoch_images, h.partial_pipeline, h.final_pipeline)
    if h.views > 1:
        text += "|views=%d" % h.views
    if h.groups:     # -g: the views' groups and sizes
        text += "|groups=" + ",".join("%d:%dx%d" % g for g in h.groups)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def plan_identity(h):
    """The plan identity of header h: the index, the schedule (r,
    policy, eviction seed, shard), the plan (seed, shuffle, balance,
    drop-last, even, batch size), both pipelines with their seeds, the
    partial's pixel cap (an image over it is left out), the views and
    the output (shape, dtype, layout, normalization).  Not the thread
    counts, the codec or the cache's path.  A value is None when the
    stream does not say (written by an older refurb-final)."""
    x = h.extra
    norm = "none" if h.mean is None else "mean=%s std=%s" % (
        "/".join("%.9g" % v for v in h.mean), "/".join("%.9g" % v for v in h.std))
    ident = {"index": "%016x" % h.index_identity, "shard": "%d/%d" % (h.shard_k, h.shard_n),
             "plan-seed": h.plan_seed, "batch-size": h.batch_size,
             "epoch-images": h.epoch_images, "partial-pipeline": h.partial_pipeline,
             "final-seed": h.augment_seed, "final-pipeline": h.final_pipeline,
             "views": h.views, "shape": "%dx%dx%d" % (h.height, h.width, h.channels),
             "dtype": str(h.dtype), "layout": h.layout, "normalize": norm}
    if h.groups:                     # refurb-final -g: K x HxW per group
        ident["view-groups"] = ",".join("%d x %dx%d" % g for g in h.groups)
    for key, name in EXTRA_IDENTITY:
        ident[name] = x.get(key)
    if x.get("balance") == "cost":   # a plan balanced by cost depends on the cost file
        ident["costs"] = x.get("costs")
    return ident


def position(h, epoch, step):
    """(epoch, step) in the stream of header h, a step past its epoch's
    last batch as (epoch + 1, 0): where a reader that has read up to
    step - 1 resumes."""
    if step >= -(-h.epoch_images // h.batch_size):
        return epoch + 1, 0
    return epoch, step


def checkpoint(h, epoch, step):
    """A checkpoint of the stream of header h at (epoch, step):
    {'epoch', 'step', 'plan', 'identity'}."""
    ident = plan_identity(h)
    return {"epoch": epoch, "step": step, "plan": digest(ident), "identity": ident}


def check_plan(name, h, state, stacklevel=3):
    """StreamError (naming the stream name and what differs) unless the
    checkpoint state was taken on the plan of header h; a warning for
    what one of them does not say."""
    mine, theirs = plan_identity(h), state.get("identity")
    if theirs is None:              # a checkpoint of an older reader
        if state.get("plan") != legacy_identity(h):
            raise StreamError("%s: the checkpoint was made on another plan (%s), this "
                              "stream is %s" % (name, state.get("plan"), legacy_identity(h)))
        warnings.warn("%s: the checkpoint was taken by an older refurb_stream, whose "
                      "plan identity leaves out %s: they could not be checked"
                      % (name, ", ".join(n for _, n in EXTRA_IDENTITY)),
                      stacklevel=stacklevel)
        return
    differ, unknown = [], []
    for key in sorted(set(mine) | set(theirs), key=_order):
        a, b = theirs.get(key), mine.get(key)
        if a is None or b is None:
            if a != b:
                unknown.append(key)
        elif a != b:
            differ.append("with %s=%s, this stream has %s=%s" % (key, a, key, b))
    if differ:
        raise StreamError("%s: the checkpoint was made on another plan: %s; restart "
                          "the chain with the options of the checkpoint's run"
                          % (name, "; ".join(differ)))
    if unknown:
        warnings.warn("%s: %s not known for %s (written by an older refurb-final): "
                      "not checked" % (name, ", ".join(unknown),
                                       "this stream" if any(mine.get(k) is None
                                                            for k in unknown)
                                       else "the checkpoint"), stacklevel=stacklevel)
