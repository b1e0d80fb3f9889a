"""Read refurb's batch stream (layout: man 5 refurb-stream) with numpy.

    from refurb_stream import open_stream
    with open_stream("/tmp/train.fifo") as stream:     # or a file object
        print(stream.header.classes)
        for images, labels, ids, epoch, step in stream:
            ...   # images: N,H,W,C uint8 (or N,C,H,W float32), a view;
                  # N,K,H,W,C with --views K; a list of one N,K_g,H_g,W_g,C
                  # array per view group with refurb-final -g (multi-crop)

    from refurb_stream import RefurbDataset          # imports torch
    ds = RefurbDataset("/tmp/train.fifo")            # refurb_stream.dataset
    for epoch in range(epochs):
        for images, labels in ds:                    # one epoch per `for`
            ...                                      # ds.epoch, ds.step, ds.state_dict()

    python3 -m refurb_stream check STREAM    # '-' = stdin; exit 0 ok, 1 bad

    from refurb_stream import launch    # a distributed rank's own chain
    with launch(index, cache_dir, partial, final, reuse=3, epochs=90,
                batch_size=64, seed=7) as chain:  # RANK, WORLD_SIZE from env
        for images, labels, ids, epoch, step in chain:
            ...   # the same number of steps on every rank (launch.py)

The stream is read in order, never seeked, so pipes and FIFOs work.  Every
frame header and every head (labels, ids, everything but pixels) is
checksummed; pixel checksums cost a numpy pass (about 0.4 GB/s), so they
are checked with verify=True and in check mode.  A stream that stops
before its END frame raises Truncated after its last complete batch.
A uint8 NHWC batch goes to the GPU as images.permute(0, 3, 1, 2).float().
"""
import collections
import os
import select
import stat
import struct
import sys

import numpy as np

MAGIC, VERSION = b"RFBSTRM", 3   # reads versions 1 to 3 (2: views, 3: view groups)
HEADER, BATCH, EPOCH_END, END, VIEW_GROUPS = 1, 2, 3, 4, 5
CRITICAL = 1
OPEN_END = 0xFFFFFFFF
REPEAT_ID = 0xFFFFFFFF   # a repeat in the place of an unreadable sample

Batch = collections.namedtuple("Batch", "images labels ids epoch step")
EpochEnd = collections.namedtuple("EpochEnd", "epoch batches images")
End = collections.namedtuple("End", "frames batches images epochs")


class Header:
    """The stream's HEADER frame (man 5 refurb-stream): what every batch is.
    groups: None, or (views, height, width) of every view group (version 3,
    the VIEW_GROUPS frame)."""

    FIELDS = ("dtype layout height width channels batch_size classes "
              "first_epoch last_epoch first_step shard_k shard_n epoch_images "
              "plan_seed augment_seed index_identity mean std partial_pipeline "
              "final_pipeline extra views").split()

    def __init__(self, *values, groups=None):
        if len(values) != len(self.FIELDS):
            raise TypeError("Header takes %d values, not %d" % (len(self.FIELDS), len(values)))
        for name, v in zip(self.FIELDS, values):
            setattr(self, name, v)
        self.groups = groups

    @property
    def image_bytes(self):
        """Bytes of one image of one view (of the first group)."""
        return self.height * self.width * self.channels * self.dtype.itemsize

    @property
    def sample_bytes(self):
        """Bytes of one sample: its image in every view."""
        return sum(_group_bytes(self)) if self.groups else self.image_bytes * self.views

    @property
    def version(self):
        """The stream format version these batches need."""
        return 3 if self.groups else 2 if self.views > 1 else 1

    def __repr__(self):
        return "Header(%s)" % ", ".join("%s=%r" % (n, getattr(self, n))
                                        for n in self.FIELDS + ["groups"])


def _group_bytes(h):
    """Bytes of one sample's images of each view group."""
    return [k * gh * gw * h.channels * h.dtype.itemsize for k, gh, gw in h.groups]


def _pixel_bytes(h, n):
    """Bytes of a batch's pixel data: version 3 pads every group to 64."""
    if not h.groups:
        return n * h.sample_bytes
    return sum(-(-n * b // 64) * 64 for b in _group_bytes(h))


class StreamError(Exception):
    """A stream that is not a valid refurb batch stream."""


class Truncated(StreamError):
    """The stream stops inside a frame or before its END frame."""


class ChainStopped(Truncated):
    """The stream stops between frames before its END frame: the chain
    writing it stopped early (its programs' messages say why)."""


# ---- CRC-32C -------------------------------------------------------------
# Pure Python for small buffers; for large ones, 4-byte words of many
# interleaved lanes in parallel with numpy, combined by GF(2) shift
# operators (what zlib's crc32_combine does).

def _make_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t.append(c)
    return t


_T = _make_table()


def _crc_raw(reg, data):
    t = _T
    for b in bytes(data):
        reg = t[(reg ^ b) & 0xFF] ^ (reg >> 8)
    return reg


def _apply(op, x):
    r = 0
    for i in range(32):
        if x >> i & 1:
            r ^= op[i]
    return r


_shift_ops = [[_crc_raw(1 << i, b"\0") for i in range(32)]]  # 2**k bytes
_shift_tabs = {}


def _shift_op(k):
    while len(_shift_ops) <= k:
        op = _shift_ops[-1]
        _shift_ops.append([_apply(op, c) for c in op])
    return _shift_ops[k]


def _shift(x, nbytes):
    """The register x after nbytes zero bytes."""
    k = 0
    while nbytes:
        if nbytes & 1:
            x = _apply(_shift_op(k), x)
        nbytes >>= 1
        k += 1
    return x


def _shift_tab(k):
    """Four 256-entry tables applying the 2**k-byte shift to arrays."""
    if k not in _shift_tabs:
        op, v = _shift_op(k), np.arange(256, dtype=np.uint32)
        tabs = []
        for byte in range(4):
            t = np.zeros(256, np.uint32)
            for bit in range(8):
                t ^= np.where(v >> bit & 1, np.uint32(op[8 * byte + bit]),
                              np.uint32(0)).astype(np.uint32)
            tabs.append(t)
        _shift_tabs[k] = tabs
    return _shift_tabs[k]


def _apply_tab(t, x):
    return t[0][x & 0xFF] ^ t[1][x >> 8 & 0xFF] ^ t[2][x >> 16 & 0xFF] ^ t[3][x >> 24]


def _crc_lanes(a):
    """Raw CRC (register from 0) of uint8 array a, len(a) >= 4096."""
    lg = min(14, (len(a) // 256).bit_length() - 1)       # 2**lg lanes
    row = 4 << lg
    rows = -(-len(a) // row)
    if rows * row != len(a):               # leading zeros change nothing
        a = np.concatenate([np.zeros(rows * row - len(a), np.uint8), a])
    w = a.view("<u4").reshape(rows, 1 << lg)
    step, last = _shift_tab(lg + 2), _shift_tab(2)
    c = np.zeros(1 << lg, np.uint32)
    for t in range(rows - 1):
        c = _apply_tab(step, c ^ w[t])
    c = _apply_tab(last, c ^ w[rows - 1])
    for level in range(lg):                # lane j still owes 4(M-1-j) bytes
        c = _apply_tab(_shift_tab(level + 2), c[0::2]) ^ c[1::2]
    return int(c[0])


def crc32c(data, crc=0):
    """CRC-32C of data (bytes-like or uint8 array), continuing crc."""
    a = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else data
    reg = _shift(crc ^ 0xFFFFFFFF, len(a))
    raw = _crc_raw(0, a.tobytes()) if len(a) < 4096 else _crc_lanes(a)
    return (reg ^ raw) ^ 0xFFFFFFFF


# ---- the reader ------------------------------------------------------------

_FIXED = struct.Struct("<IBBH10I4Q3f3f4I")  # HEADER payload bytes 0-119


def _text(raw, what):
    """A HEADER text as str: refurb-stream(5) says texts are UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise StreamError("bad HEADER: the %s text is not UTF-8 (byte %d is 0x%02x)"
                          % (what, e.start, raw[e.start])) from None


def _parse_header(p):
    if len(p) < 128:
        raise StreamError("HEADER payload too short")
    (version, dtype, layout, flags, h, w, c, b, k, e0, e1, s0, sk, sn,
     epoch_images, seed, aug, ident, *rest) = _FIXED.unpack_from(p)
    mean, std, lens = rest[0:3], rest[3:6], rest[6:10]
    if version not in (1, 2, 3) or 128 + sum(lens) != len(p):
        raise StreamError("bad HEADER (version %d, sections %s)" % (version, lens))
    views = struct.unpack_from("<I", p, 120)[0] if version >= 2 else 1
    if not (2 if version >= 2 else 1) <= views <= 64:
        raise StreamError("bad HEADER (version %d with %d views)" % (version, views))
    if dtype not in (1, 2) or layout not in (1, 2) or c not in (1, 3) \
            or 0 in (h, w, b, k) or e0 > e1 or sk >= sn:
        raise StreamError("bad HEADER values")
    texts, at = [], 128
    for n in lens:
        texts.append(bytes(p[at:at + n]))
        at += n
    names = texts[2].split(b"\0")
    if len(names) != k + 1 or names[-1] != b"" or any(b"\0" in t for t in texts[:2] + texts[3:]):
        raise StreamError("bad HEADER texts or class names")
    partial, final, extra = (_text(t, what) for t, what in
                             ((texts[0], "partial pipeline"), (texts[1], "final pipeline"),
                              (texts[3], "extra")))
    extra = dict(line.partition("=")[::2] for line in extra.split("\n") if line)
    return Header(np.dtype(np.uint8 if dtype == 1 else "<f4"), "NHWC" if layout == 1 else "NCHW",
                  h, w, c, b, [n.decode("utf-8", "surrogateescape") for n in names[:-1]], e0, e1, s0, sk, sn,
                  epoch_images, seed, aug, ident, mean[:c] if flags & 1 else None,
                  std[:c] if flags & 1 else None, partial, final, extra,
                  views)


def _parse_groups(p, h):
    """The Header h with the view groups of a VIEW_GROUPS payload
    (refurb-stream(5), version 3)."""
    g = struct.unpack_from("<I", p)[0] if len(p) >= 8 else 0
    if not 2 <= g <= 8 or len(p) != 8 + 16 * g:
        raise StreamError("VIEW_GROUPS frame of %d bytes for %d groups (2 to 8)" % (len(p), g))
    groups = [struct.unpack_from("<III", p, 8 + 16 * i) for i in range(g)]
    if any(0 in x or x[1] > 65535 or x[2] > 65535 for x in groups) or \
            sum(x[0] for x in groups) != h.views or groups[0][1:] != (h.height, h.width):
        raise StreamError("VIEW_GROUPS %s do not match the HEADER (%d views of %dx%d first)"
                          % (groups, h.views, h.height, h.width))
    h.groups = groups
    return h


class Stream:
    """Frames of a batch stream; iterating yields its Batches."""

    def __init__(self, f, name="(stream)", verify=False, own=False):
        self.f, self.name, self.verify, self._own = f, name, verify, own
        self.offset = self.frames_read = self.skipped = 0
        self.ended = False
        self.header = None
        kind, header = self._next_frame()
        if kind != HEADER:
            raise StreamError(self._where() + "the stream does not start with a HEADER frame")
        self.header = header
        if self._version == 3:       # the view groups come next
            kind, groups = self._next_frame()
            if kind != VIEW_GROUPS:
                raise StreamError(self._where() + "a version 3 stream without its "
                                  "VIEW_GROUPS frame after the HEADER")
            self.header = header = groups
        self._epoch, self._step = header.first_epoch, header.first_step
        self._global = None
        self._short = False
        self._counts = [0, 0, 0, 0]   # epoch batches, epoch images, batches, images
        self._epoch_left = 0          # samples the epoch's batches left out
        self.left_out = 0             # samples left out by the writer, in all
        self._epochs = 0

    def _last_batch(self):
        """Where the last batch read was, as text."""
        if self._step == 0:
            return "before any batch" if self._epochs == 0 and self._counts[2] == 0 \
                else "after the end of epoch %d" % (self._epoch - 1)
        return "after epoch %d step %d" % (self._epoch, self._step - 1)

    def _where(self):
        return "frame %d at byte %d: " % (self.frames_read, self._at)

    def _read(self, n):
        """n bytes into a fresh 64-byte aligned uint8 array."""
        raw = np.empty(n + 64, np.uint8)
        off = -raw.ctypes.data % 64
        buf = raw[off:off + n]
        view, got = memoryview(buf), 0
        while got < n:
            k = self.f.readinto(view[got:]) if hasattr(self.f, "readinto") else None
            if k is None:
                chunk = self.f.read(n - got)
                view[got:got + len(chunk)] = chunk
                k = len(chunk)
            if not k:
                break
            got += k
        self.offset += got
        return buf, got

    def _next_frame(self):
        """(type, decoded content) of the next known frame, or (None, None) at a clean end."""
        while True:
            self._at = self.offset
            fh, got = self._read(64)
            if got == 0:
                if self.ended:
                    return None, None
                if self.header is None:
                    raise ChainStopped(self._where() + "empty stream: nothing was written "
                                       "to it (did the chain fail? see its messages)")
                raise ChainStopped(self._where() + "the chain stopped early: the stream "
                                   "ends %s without its END frame "
                                   "(refurb-final or a program before it stopped: see "
                                   "their messages on the chain's stderr)"
                                   % self._last_batch())
            if self.ended:
                raise StreamError(self._where() + "data after the END frame")
            if got < 64:
                raise Truncated(self._where() + "stream ends inside a frame header")
            if bytes(fh[:7]) != MAGIC:
                raise StreamError(self._where() + "bad magic (not a refurb batch stream)")
            if not 1 <= fh[7] <= VERSION:
                raise StreamError(self._where() + "format version %d, this reader reads 1 to %d"
                                  % (fh[7], VERSION))
            if self.header is not None and fh[7] != self._version:
                raise StreamError(self._where() + "a version %d frame in a version %d stream"
                                  % (fh[7], self._version))
            if crc32c(fh[:60]) != struct.unpack_from("<I", fh, 60)[0]:
                raise StreamError(self._where() + "frame header checksum mismatch")
            kind, flags, plen, seq, qlen, qcrc, pcrc = struct.unpack_from("<IIQQIII", fh, 8)
            if seq != self.frames_read or qlen > plen:
                raise StreamError(self._where() + "bad frame number or head length")
            if self.header is None and kind != HEADER:
                raise StreamError(self._where() + "the stream does not start with a HEADER frame")
            groups = kind == VIEW_GROUPS and self.header is not None and self._version == 3
            if groups and self.frames_read != 1:
                raise StreamError(self._where() + "VIEW_GROUPS frame that is not "
                                  "right after the HEADER")
            if kind not in (HEADER, BATCH, EPOCH_END, END) and not groups and flags & CRITICAL:
                raise StreamError(self._where() + "unknown critical frame type %d" % kind)
            self._check_length(kind, plen)
            p = self._payload(plen, qlen, qcrc, pcrc, kind == BATCH)
            self.frames_read += 1
            if kind == HEADER:
                h = _parse_header(p)
                self._version = struct.unpack_from("<I", p)[0]
                return kind, h
            if groups:
                return kind, _parse_groups(p, self.header)
            if kind == BATCH:
                return kind, self._batch(p, qlen)
            if kind == EPOCH_END:
                return kind, self._epoch_end(EpochEnd(*struct.unpack_from("<IIQ", p)))
            if kind == END:
                return kind, self._end(End(*struct.unpack_from("<QQQI", p)))
            self.skipped += 1

    def _check_length(self, kind, plen):
        h, fixed = self.header, {EPOCH_END: 16, END: 32}
        if kind == HEADER and h is not None:
            raise StreamError(self._where() + "second HEADER frame")
        if kind in fixed and plen != fixed[kind]:
            raise StreamError(self._where() + "bad payload length %d" % plen)
        if kind == BATCH and h.version == 2 and self._version == 3:
            raise StreamError(self._where() + "BATCH frame before the VIEW_GROUPS frame")
        if kind == VIEW_GROUPS and plen > 8 + 16 * 8:
            raise StreamError(self._where() + "VIEW_GROUPS frame of %d bytes" % plen)
        if kind == BATCH:
            most = (64 + 8 * h.batch_size + 63) // 64 * 64 + _pixel_bytes(h, h.batch_size)
            if plen > most:
                raise StreamError(self._where() + "BATCH frame of %d bytes, at most %d" % (plen, most))
        if plen > 1 << 32 or (kind == HEADER and plen > 128 + (3 << 20) + 1000000 * 1025):
            raise StreamError(self._where() + "frame of %d bytes exceeds the limit" % plen)

    def _payload(self, plen, qlen, qcrc, pcrc, bulk):
        pad = -plen % 64
        buf, got = self._read(plen + pad)
        if got < plen + pad:
            raise Truncated(self._where() + "stream ends inside the frame (%d of %d payload bytes)"
                            % (min(got, plen), plen))
        if buf[plen:].any():
            raise StreamError(self._where() + "nonzero padding after the payload")
        head = crc32c(buf[:qlen])
        if head != qcrc or ((not bulk or self.verify) and crc32c(buf[qlen:plen], head) != pcrc):
            raise StreamError(self._where() + "%s checksum mismatch" % ("frame head" if head != qcrc else "payload"))
        return buf[:plen]

    def _batch(self, p, qlen):
        h = self.header
        epoch, step, glob, n, dtype, layout, hh, ww, cc, left = struct.unpack_from("<IIQIBBxxIIII", p)
        shape = (dtype, layout, hh, ww, cc)
        if shape != (1 if h.dtype == np.uint8 else 2, 1 if h.layout == "NHWC" else 2,
                     h.height, h.width, h.channels) or not 0 < n + left <= h.batch_size or \
                qlen != (64 + 8 * n + 63) // 64 * 64 or len(p) != qlen + _pixel_bytes(h, n):
            raise StreamError(self._where() + "BATCH frame does not match the HEADER")
        labels, ids = p[64:64 + 4 * n].view("<u4"), p[64 + 4 * n:64 + 8 * n].view("<u4")
        self._sequence(self._batch_rule(epoch, step, glob, labels))
        self._step, self._global, self._short = step + 1, glob + 1, n + left < h.batch_size
        self._counts = [c + d for c, d in zip(self._counts, (1, n, 1, n))]
        self._epoch_left += left
        self.left_out += left
        if h.groups:
            return Batch(self._groups(p[qlen:], n), labels, ids, epoch, step)
        shape = (hh, ww, cc) if h.layout == "NHWC" else (cc, hh, ww)
        # several views: (n, K, ...) with the K views of a sample together
        shape = (n,) + ((h.views,) if h.views > 1 else ()) + shape
        return Batch(p[qlen:].view(h.dtype).reshape(shape), labels, ids, epoch, step)

    def _groups(self, px, n):
        """Version 3: one (n, K_g, ...) array per view group, in place."""
        h, out, at = self.header, [], 0
        for (k, gh, gw), size in zip(h.groups, _group_bytes(h)):
            end, nxt = at + n * size, at + -(-n * size // 64) * 64
            if px[end:nxt].any():
                raise StreamError(self._where() + "nonzero padding after a view group")
            shape = (gh, gw, h.channels) if h.layout == "NHWC" else (h.channels, gh, gw)
            out.append(px[at:end].view(h.dtype).reshape((n, k) + shape))
            at = nxt
        return out

    def _sequence(self, why):
        if why:
            raise StreamError(self._where() + why)

    def _batch_rule(self, epoch, step, glob, labels):
        """What is wrong with a batch there, or None (refurb-stream(5) SEQUENCE RULES)."""
        if self._epoch > self.header.last_epoch or epoch != self._epoch:
            return "batch of epoch %d, expected epoch %d" % (epoch, self._epoch)
        if step != self._step:
            return "epoch %d: step %d, expected step %d" % (epoch, step, self._step)
        if self._short:
            return "epoch %d: batch after a short batch" % epoch
        if self._global is not None and glob != self._global:
            return "global step %d, expected %d" % (glob, self._global)
        if len(labels) and labels.max() >= len(self.header.classes):
            k = len(self.header.classes)
            return "label %d, the stream has %d class%s" % (labels.max(), k, "" if k == 1 else "es")
        return None

    def _epoch_end(self, e):
        h, c = self.header, self._counts
        resumed = e.epoch == h.first_epoch and h.first_step > 0
        planned = e.images + self._epoch_left   # samples left out are accounted for
        if self._epoch > h.last_epoch or e.epoch != self._epoch:
            self._sequence("EPOCH_END of epoch %d, expected epoch %d" % (e.epoch, self._epoch))
        if (e.batches, e.images) != tuple(c[:2]):
            self._sequence("EPOCH_END counts %d batches and %d images, the stream has %d and %d"
                           % (e.batches, e.images, c[0], c[1]))
        if h.epoch_images and (planned > h.epoch_images if resumed else planned != h.epoch_images):
            self._sequence("epoch %d has %d images and %d left out, the HEADER says %d per epoch"
                           % (e.epoch, e.images, self._epoch_left, h.epoch_images))
        self._epoch, self._step, self._short, self._counts[:2] = self._epoch + 1, 0, False, [0, 0]
        self._epoch_left = 0
        self._epochs += 1
        return e

    def _end(self, e):
        h, c = self.header, self._counts
        if c[0] or (h.last_epoch != OPEN_END and self._epoch <= h.last_epoch):
            self._sequence("END frame before the end of epoch %d" % self._epoch)
        if e != End(self.frames_read - 1, c[2], c[3], self._epochs):
            self._sequence("END frame counts differ from the stream's")
        self.ended = True
        return e

    def frames(self):
        """Yield (type, content) of every known frame after the HEADER."""
        while True:
            kind, content = self._next_frame()
            if kind is None:
                return
            yield kind, content

    def __iter__(self):
        # a batch whose every sample was left out has no images: not yielded
        return (c for k, c in self.frames() if k == BATCH and len(c.ids))

    def close(self):
        if self._own:
            self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# seconds before a reader waiting for its FIFO's writer says so
WAIT_WARNING_S = float(os.environ.get("REFURB_STREAM_WAIT", "5"))


def _open_fifo(path):
    """Open a FIFO for reading, saying on stderr when it has no writer
    after WAIT_WARNING_S seconds (the chain is not started, or failed
    before its output).  A blocking open would wait without a word: open
    without blocking, then poll for the writer's first bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(WAIT_WARNING_S * 1000):
            print("refurb_stream: %s: waiting for the chain to open it (start the "
                  "refurb chain with -o %s beside the trainer)" % (path, path),
                  file=sys.stderr, flush=True)
            poller.poll()
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def open_stream(source, verify=False):
    """A Stream on a path ('-' = stdin) or a binary file object."""
    if isinstance(source, str):
        if source == "-":
            return Stream(sys.stdin.buffer, "(stdin)", verify)
        try:
            fifo = stat.S_ISFIFO(os.stat(source).st_mode)
        except OSError:
            fifo = False
        f = _open_fifo(source) if fifo else open(source, "rb", buffering=0)
        try:
            return Stream(f, source, verify, own=True)
        except BaseException:
            f.close()
            raise
    return Stream(source, getattr(source, "name", "(stream)"), verify)


# imported when first used: torch for RefurbDataset; the converter's module
# stays unimported so that python3 -m refurb_stream.convert runs it cleanly
_LAZY = {"RefurbDataset": "dataset", "ConvertError": "convert",
         "final_options": "convert", "pipeline_from_torchvision": "convert",
         "views_from_torchvision": "convert"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(name)
    import importlib
    value = getattr(importlib.import_module("refurb_stream." + _LAZY[name]), name)
    globals()[name] = value
    return value

# ---- check mode ------------------------------------------------------------

class _EpochStats:
    def __init__(self, epoch, classes):
        self.epoch, self.batches, self.images, self.short = epoch, 0, 0, 0
        self.hist, self.ids, self.incomplete = np.zeros(classes, np.int64), [], False

    def add(self, b, batch_size):
        self.batches, self.images = self.batches + 1, self.images + len(b.ids)
        self.short += len(b.ids) < batch_size
        np.add.at(self.hist, b.labels, 1)
        self.ids.append(b.ids.copy())

    def row(self):
        ids = np.concatenate(self.ids) if self.ids else np.zeros(0, np.uint32)
        ids = ids[ids != REPEAT_ID]           # repeats of unreadable samples
        self.duplicates = len(ids) - len(np.unique(ids))
        return "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d%s" % (
            self.epoch, self.batches, self.images, self.short, (self.hist > 0).sum(),
            self.hist.min(), self.hist.max(), self.duplicates, "\t(incomplete)" if self.incomplete else "")


def check(source, out=sys.stdout):
    """Validate a whole stream (pixel checksums included) and print a
    per-epoch summary.  Returns the exit status: 0 valid, 1 not."""
    stream, epochs, current, error = None, [], None, None
    try:
        stream = open_stream(source, verify=True)
        h = stream.header
        print("stream %s: %s %s, %dx%dx%d, batch %d, %d class%s, epochs %d-%s, shard %d/%d"
              % (stream.name, h.dtype, h.layout, h.height, h.width, h.channels, h.batch_size,
                 len(h.classes), "" if len(h.classes) == 1 else "es", h.first_epoch, "open" if h.last_epoch == OPEN_END else h.last_epoch,
                 h.shard_k, h.shard_n), file=out)
        if h.groups:
            print("view groups: %s" % ", ".join("%d x %dx%d" % g for g in h.groups), file=out)
        for kind, c in stream.frames():
            if kind == BATCH:
                current = current or _EpochStats(c.epoch, len(h.classes))
                current.add(c, h.batch_size)
            elif kind == EPOCH_END:
                epochs.append(current or _EpochStats(c.epoch, len(h.classes)))
                current = None
    except StreamError as e:
        error = "%s: %s" % (stream.name if stream else "(stdin)" if source == "-" else source, e)
        if current:
            current.incomplete = True
            epochs.append(current)
    if stream:
        print("epoch\tbatches\timages\tshort\tclasses\tper-class-min\tper-class-max\tduplicate-ids",
              file=out)
        for e in epochs:
            print(e.row(), file=out)
        dups = [str(e.epoch) for e in epochs if e.duplicates]
        if dups and not error:
            error = "%s: epoch %s: sample ids delivered more than once" % (stream.name, ", ".join(dups))
    if error:
        out.flush()  # the table before the error, however stdout is buffered
        print("refurb_stream: " + error, file=sys.stderr)
        return 1
    print("ok: %d epochs, %d batches, %d images, %d skipped frames, ended cleanly"
          % (len(epochs), stream._counts[2], stream._counts[3], stream.skipped), file=out)
    return 0


USAGE = ("usage: python3 -m refurb_stream check STREAM   (STREAM '-' = stdin)\n"
         "       python3 -m refurb_stream convert EXPRESSION   (convert --help: its options)")


def main(argv):
    """python3 -m refurb_stream check STREAM (convert: __main__.py)."""
    args = argv[1:]
    if args in (["-h"], ["--help"], ["check", "-h"], ["check", "--help"]):
        print(USAGE)
        return 0
    if args and not args[0].startswith("-") and args[0] != "check":
        print("refurb_stream: unknown command %r (check or convert; see --help)" % args[0],
              file=sys.stderr)
        return 2
    if len(args) != 2:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        return check(argv[2])
    except OSError as e:
        print("refurb_stream: %s: %s" % (argv[2], e.strerror or e), file=sys.stderr)
        return 1



# the launcher of a distributed rank's chain (refurb_stream/launch.py)
from .launch import (ChainError, RankChain, RanksDisagree,  # noqa: E402,F401
                     check_ranks_agree, launch, rank_from_env)
