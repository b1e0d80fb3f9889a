"""RefurbDataset: a batch stream as the PyTorch dataset a training loop
expects (imports torch; the stream itself is read by refurb_stream).

    ds = RefurbDataset("/tmp/train.fifo")
    for epoch in range(epochs):
        for images, labels in ds:          # exactly one epoch per `for`
            ...                            # images uint8 N,H,W,C; labels int64
                                           # (multi-crop, refurb-final -g: a list
                                           # of N,K_g,H_g,W_g,C, one per group)
            checkpoint = {"model": ..., "data": ds.state_dict()}

Each `for` over the dataset (or over DataLoader(ds, batch_size=None))
yields the batches of one epoch of the stream and stops at its end; the
next `for` goes on with the next epoch of the same stream.  A `for` left
with `break` is taken up where it stopped.  A `for` after the stream's
last epoch raises StreamError (the plan has no more epochs), never an
empty epoch.

len(ds) is the number of steps of a full epoch; ds.epoch and ds.step are
those of the batch last yielded (the stream's epoch and step fields).
ds.state_dict() is the point to resume from, the batch after the last one
yielded, and the identity of the plan (ds.identity(): everything that
changes the batches, by name, from the stream's header); give it back with
load_state_dict() to a dataset on the stream of the chain restarted with
`refurb-plan --start EPOCH:STEP` (ds.resume_command() prints the option)
and the dataset checks that the stream is of the same plan (StreamError
naming what differs: "with r=3, this stream has r=2") and starts there
(a stream that starts earlier is skipped up to it).

The stream is read in the process that iterates: DataLoader's
num_workers must be 0 (the chain's programs already run in parallel), and
its batch_size None (the stream's frames are the batches; a default
DataLoader would add a batch dimension of 1): both are refused otherwise
(the batch_size through the Batch type the dataset yields, which
DataLoader's default_collate rebuilds; a collate_fn of your own is not
checked).
"""
import collections

import numpy as np
import torch
import torch.utils.data

from refurb_stream import OPEN_END, StreamError, identity, open_stream


class Batch(collections.namedtuple("Batch", "images labels")):
    """A batch as RefurbDataset yields it: (images, labels), labels 1-D.

    A DataLoader with a batch_size (its default is 1) would batch the
    batches again: its default_collate rebuilds this type from stacked
    fields, labels then 2-D, and that is refused here with the fix.  (A
    collate_fn of your own is not checked; the dataset cannot see the
    DataLoader's arguments without torch's private classes.)
    """
    __slots__ = ()

    def __new__(cls, images, labels):
        if labels.dim() != 1:
            raise ValueError(
                "RefurbDataset yields whole batches: use "
                "DataLoader(ds, batch_size=None) (the default batch_size=1 "
                "would add a batch dimension), or iterate over ds itself")
        return super().__new__(cls, images, labels)


class RefurbDataset(torch.utils.data.IterableDataset):
    """The batches of a refurb batch stream, one epoch per iteration.

    source: a path (a FIFO or a file; '-' for stdin) or a binary file
    object.  Yields (images, labels): images a uint8 N,H,W,C tensor (or
    float32 N,C,H,W when the final pipeline normalizes) sharing the
    stream's buffer, labels int64; N,K,... with K views (--views K); a
    list of one N,K_g,... tensor per view group with refurb-final -g
    (multi-crop; refurb_stream.multicrop.dino_crops() makes DINO's list
    of crops of it).  samples=True yields (image, label) pairs instead
    (a list of the groups' K_g,... tensors with view groups).
    verify=True checks the pixel checksums too.
    """

    def __init__(self, source, samples=False, verify=False):
        super().__init__()
        self.source, self.samples, self.verify = source, samples, verify
        self._stream = None
        self._frames = None
        self.epoch = self.step = None
        self._next = None          # (epoch, step) of the next batch
        self._skip_to = None       # load_state_dict on a longer stream
        self.repeats = 0           # places given to repeats (unreadable images)

    # ---- the stream ---------------------------------------------------------

    @property
    def stream(self):
        """The open refurb_stream.Stream (opened on first use)."""
        if self._stream is None:
            try:
                self._stream = open_stream(self.source, self.verify)
            except StreamError as e:
                raise type(e)("%s: %s" % (getattr(self.source, "name", self.source), e)) from None
            self._frames = self._stream.frames()
            h = self._stream.header
            self._next = (h.first_epoch, h.first_step)
        return self._stream

    @property
    def header(self):
        return self.stream.header

    def __len__(self):
        h = self.header
        return -(-h.epoch_images // h.batch_size)

    def close(self):
        if self._stream is not None:
            self._stream.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- iteration ----------------------------------------------------------

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        if info is not None:
            raise RuntimeError("RefurbDataset reads its stream in the process that "
                               "iterates: use DataLoader(ds, batch_size=None, "
                               "num_workers=0); the chain's programs already run "
                               "in parallel")
        s = self.stream
        if s.ended:
            raise StreamError(
                "%s: the stream has ended: its plan's last epoch was %d; plan more "
                "epochs (refurb-plan -e) to train longer" % (s.name, s.header.last_epoch))
        return self._epoch()

    def _epoch(self):
        from refurb_stream import BATCH, EPOCH_END, END
        while True:
            try:
                kind, c = next(self._frames, (None, None))
            except StreamError as e:        # name the stream, as the programs do
                raise type(e)("%s: %s" % (self._stream.name, e)) from None
            if kind is None or kind == END:
                if self._next[1] == 0:      # at an epoch's start: none is left
                    raise StreamError(
                        "%s: the stream has ended: its plan's last epoch was %d; plan "
                        "more epochs (refurb-plan -e) to train longer"
                        % (self._stream.name, self._stream.header.last_epoch))
                return
            if kind == EPOCH_END:
                self._next = (c.epoch + 1, 0)
                if self._skip_to is None:
                    return
                if self._next >= self._skip_to:   # skipped up to an epoch's start
                    self._skip_to = None
                continue
            if kind != BATCH:
                continue
            self._next = (c.epoch, c.step + 1)
            if self._skip_to is not None:
                if (c.epoch, c.step) < self._skip_to:
                    continue
                self._skip_to = None
            if not len(c.ids):
                continue
            self.epoch, self.step = c.epoch, c.step
            self.repeats += int((c.ids == 0xFFFFFFFF).sum())
            grouped = isinstance(c.images, list)   # view groups: one array each
            images = [torch.from_numpy(a) for a in c.images] if grouped \
                else torch.from_numpy(c.images)
            labels = torch.from_numpy(c.labels.astype(np.int64))
            if self.samples and grouped:
                yield from zip((list(x) for x in zip(*images)), labels)
            elif self.samples:
                yield from zip(images, labels)
            else:
                yield Batch(images, labels)

    # ---- checkpoints --------------------------------------------------------

    def _legacy_identity(self):
        """The identity checkpoints of refurb 0.1's first reader kept: a
        hash that left out r, the schedule, the shuffle... (see identity)."""
        return identity.legacy_identity(self.header)

    def identity(self):
        """The plan identity: everything that changes the batches, by
        name (refurb_stream.identity.plan_identity, refurb-stream(5),
        Extra text).  Not the thread counts, the codec or the cache's
        path."""
        return identity.plan_identity(self.header)

    def _position(self):
        """(epoch, step) of the next batch, a finished epoch as (epoch+1, 0)."""
        self.stream
        return identity.position(self.header, *self._next)

    def state_dict(self):
        """{'epoch', 'step', 'plan', 'identity'}: where to resume (the
        batch after the last one yielded), and the plan it belongs to
        (identity(), and 'plan' a hash of it)."""
        return identity.checkpoint(self.header, *self._position())

    def load_state_dict(self, state):
        """Check that this stream resumes at state's point of the same plan
        (StreamError naming what differs); batches before it (a stream
        started earlier) are skipped."""
        self._check_plan(state)
        want, here = (state["epoch"], state["step"]), self._position()
        if here > want:
            raise StreamError(
                "%s: the stream starts at epoch %d step %d, after the checkpoint's "
                "epoch %d step %d: restart the chain with refurb-plan --start %d:%d"
                % ((self.stream.name,) + here + want + want))
        h = self.header
        if h.last_epoch != OPEN_END and want[0] > h.last_epoch:
            raise StreamError("%s: the checkpoint is at epoch %d, the stream ends "
                              "with epoch %d" % ((self.stream.name,) + want + (h.last_epoch,)))
        self._skip_to = want if here < want else None

    def _check_plan(self, state):
        """StreamError unless state was taken on this stream's plan."""
        identity.check_plan(self.stream.name, self.header, state, stacklevel=4)

    def resume_command(self):
        """The refurb-plan option that restarts the chain where
        state_dict() says."""
        return "--start %d:%d" % self._position()
