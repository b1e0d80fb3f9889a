#!/usr/bin/env bats
# python/refurb_stream against streams written by the C library
# (build/tools/write_stream; its header comment gives the content).

load helpers
bats_require_minimum_version 1.5.0
# a failure anywhere in a pipeline fails it (tests/lint-bats)
set -o pipefail

setup() {
	need_numpy
	T="$BATS_TEST_TMPDIR"
	W="$BUILD_DIR/tools/write_stream"
	export PYTHONPATH="$TOP/python"
}

# verify FILE [write_stream options...]: every batch of FILE has the
# content write_stream gives it for those options.
verify() {
	"$PY" - "$@" <<'EOF'
import sys
import numpy as np
from refurb_stream import open_stream, Truncated

path, opts = sys.argv[1], sys.argv[2:]
f32, nchw, norm = "f32" in opts, "nchw" in opts, "--normalize" in opts
n_epoch = int(opts[opts.index("-n") + 1]) if "-n" in opts else 10
with open_stream(path, verify=True) as s:
    h = s.header
    assert h.classes == ["class%d" % k for k in range(len(h.classes))], h.classes
    assert h.partial_pipeline == "resize=16" and h.final_pipeline == "crop=8:6"
    assert h.extra == {"writer": "write_stream"}, h.extra
    assert h.index_identity == 0xabcdef and h.plan_seed == 7 and h.augment_seed == 8
    assert (h.mean is not None) == norm
    seen, last = 0, None
    for images, labels, ids, epoch, step in s:
        n = len(ids)
        assert images.shape == ((n, h.channels, h.height, h.width) if nchw
                                else (n, h.height, h.width, h.channels)), images.shape
        assert images.dtype == (np.float32 if f32 else np.uint8)
        assert images.ctypes.data % 64 == 0        # in place, aligned
        pos = step * h.batch_size + np.arange(n)
        assert (ids == (pos + 7 * epoch) % n_epoch).all(), ids
        assert (labels == ids % len(h.classes)).all()
        i = np.arange(images[0].size, dtype=np.uint64)
        nhwc = images.transpose(0, 2, 3, 1) if nchw else images
        for j in range(n):
            v = ((31 * int(ids[j]) + 7 * i) & 255).astype(np.float32 if f32 else np.uint8)
            if f32:
                v = v / np.float32(255) - np.float32(0.5 if norm else 0)
            assert (nhwc[j].ravel() == v).all(), (epoch, step, j)
        seen += n
        last = (epoch, step)
    assert s.ended
print(seen, last)
EOF
}

@test "round trip: uint8 NHWC, the default" {
	"$W" -o "$T/s"
	run verify "$T/s"
	[ "$status" -eq 0 ]
	[ "$output" = "20 (1, 2)" ]
}

@test "round trip: float32 NCHW normalized, gray, and every other mix" {
	"$W" -d f32 -l nchw --normalize -o "$T/s"
	run verify "$T/s" -d f32 -l nchw --normalize
	[ "$status" -eq 0 ]
	[ "$output" = "20 (1, 2)" ]
	"$W" -d f32 -C 1 -H 5 -W 7 -b 3 -n 11 -e 2-4 -o "$T/s"
	run verify "$T/s" -d f32 -n 11
	[ "$status" -eq 0 ]
	[ "$output" = "33 (4, 3)" ]
	"$W" -l nchw -C 1 -k 5 -b 16 -n 40 -o "$T/s"
	run verify "$T/s" -l nchw -n 40
	[ "$status" -eq 0 ]
	[ "$output" = "80 (1, 2)" ]
}

@test "read from a FIFO and from stdin (no seeking)" {
	mkfifo "$T/fifo"
	"$W" -n 50 -b 8 -o "$T/fifo" &
	run verify "$T/fifo" -n 50
	wait
	[ "$status" -eq 0 ]
	[ "$output" = "100 (1, 6)" ]
	run bash -c "set -o pipefail; '$W' -n 50 -b 8 | '$PY' -m refurb_stream check -"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok: 2 epochs, 14 batches, 100 images, 0 skipped frames, ended cleanly"* ]]
}

@test "extension frames are skipped, critical ones refused" {
	"$W" --extension -o "$T/s"
	run verify "$T/s"
	[ "$status" -eq 0 ]
	run "$PY" -m refurb_stream check "$T/s"
	[ "$status" -eq 0 ]
	[[ "$output" == *"1 skipped frames"* ]]
	"$W" --critical -o "$T/c"
	run "$PY" -m refurb_stream check "$T/c"
	[ "$status" -eq 1 ]
	[[ "$output" == *"refurb_stream: $T/c: frame 2 at byte 1024: unknown critical frame type 99"* ]]
}

@test "check: per-epoch summary table" {
	"$W" -n 10 -b 4 -k 3 -e 0-2 -o "$T/s"
	run "$PY" -m refurb_stream check "$T/s"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "stream $T/s: uint8 NHWC, 8x6x3, batch 4, 3 classes, epochs 0-2, shard 0/1" ]
	[ "${lines[1]}" = "epoch	batches	images	short	classes	per-class-min	per-class-max	duplicate-ids" ]
	[ "${lines[2]}" = "0	3	10	1	3	3	4	0" ]
	[ "${lines[4]}" = "2	3	10	1	3	3	4	0" ]
	[ "${lines[5]}" = "ok: 3 epochs, 9 batches, 30 images, 0 skipped frames, ended cleanly" ]
}

@test "check: a stream cut inside a frame is truncated, at every length" {
	"$W" -o "$T/s"
	size=$(stat -c %s "$T/s")
	for cut in 0 1 63 64 100 256 300 1000 $((size - 64)) $((size - 1)); do
		head -c "$cut" "$T/s" > "$T/t"
		run "$PY" -m refurb_stream check "$T/t"
		[ "$status" -eq 1 ] || { echo "cut $cut: status $status"; return 1; }
		[[ "$output" == *"refurb_stream: $T/t: "*"stream ends"* ]] ||
			[[ "$output" == *"empty stream"* ]] || { echo "cut $cut: $output"; return 1; }
	done
	# the reader yields the complete batches, then raises Truncated
	head -c 3000 "$T/s" > "$T/t"
	run "$PY" -c "
import refurb_stream as r
s = r.open_stream('$T/t'); n = 0
try:
    for b in s: n += 1
except r.Truncated as e: print(n, 'Truncated:', e)"
	[ "$status" -eq 0 ]
	[ "$output" = "3 Truncated: frame 5 at byte 2432: stream ends inside the frame (504 of 704 payload bytes)" ]
}

@test "check: a writer that died between frames (no END)" {
	"$W" --stop 4 -o "$T/s"
	# the table on stdout, the error on stderr: apart, so that their
	# order (stdout buffering, PYTHONUNBUFFERED) does not matter
	run --separate-stderr "$PY" -m refurb_stream check "$T/s"
	[ "$status" -eq 1 ]
	[ "${lines[3]}" = "1	1	4	0	3	1	2	0	(incomplete)" ]
	[[ "$stderr" == *"the chain stopped early: the stream ends after epoch 1 step 0 without its END frame (refurb-final or a program before it stopped: see their messages on the chain's stderr)"* ]]
}

@test "check: corrupt pixels, header, label; duplicate sample ids" {
	"$W" -o "$T/s"
	cp "$T/s" "$T/p"
	printf 'X' | dd of="$T/p" bs=1 seek=600 conv=notrunc 2>/dev/null
	run "$PY" -m refurb_stream check "$T/p"
	[ "$status" -eq 1 ]
	[[ "$output" == *"frame 1 at byte 256: payload checksum mismatch"* ]]
	# pixels are not checksummed when iterating without verify=True ...
	run "$PY" -c "
import refurb_stream as r
print(sum(len(b.ids) for b in r.open_stream('$T/p')))"
	[ "$status" -eq 0 ]
	[ "$output" = "20" ]
	# ... but labels and ids are
	cp "$T/s" "$T/l"
	printf '\x05' | dd of="$T/l" bs=1 seek=$((256 + 64 + 64)) conv=notrunc 2>/dev/null
	run "$PY" -c "
import refurb_stream as r
print(sum(len(b.ids) for b in r.open_stream('$T/l')))"
	[ "$status" -eq 1 ]
	[[ "$output" == *"frame head checksum mismatch"* ]]
	cp "$T/s" "$T/h"
	printf 'X' | dd of="$T/h" bs=1 seek=20 conv=notrunc 2>/dev/null
	run "$PY" -m refurb_stream check "$T/h"
	[ "$status" -eq 1 ]
	[[ "$output" == *"frame 0 at byte 0: frame header checksum mismatch"* ]]
	printf '\x04' | dd of="$T/h" bs=1 seek=7 conv=notrunc 2>/dev/null
	run "$PY" -m refurb_stream check "$T/h"
	[ "$status" -eq 1 ]
	[[ "$output" == *"format version 4, this reader reads 1 to 3"* ]]
	"$W" --duplicate -o "$T/d"
	run --separate-stderr "$PY" -m refurb_stream check "$T/d"
	[ "$status" -eq 1 ]
	[ "${lines[2]}" = "0	3	10	1	3	3	4	1" ]
	[[ "$stderr" == *"epoch 0: sample ids delivered more than once"* ]]
}

@test "check: usage and unreadable files" {
	run "$PY" -m refurb_stream
	[ "$status" -eq 2 ]
	[[ "$output" == "usage: python3 -m refurb_stream check STREAM"* ]]
	run "$PY" -m refurb_stream check "$T/none"
	[ "$status" -eq 1 ]
	[ "$output" = "refurb_stream: $T/none: No such file or directory" ]
	echo "hello world, not a stream at all, but long enough for a frame header" > "$T/x"
	run "$PY" -m refurb_stream check "$T/x"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bad magic (not a refurb batch stream)"* ]]
}

@test "python3 -m refurb_stream: --help answers the usage of every command, exit 0; a bad command is a usage error" {
	for h in --help -h "check --help"; do
		run -0 --separate-stderr "$PY" -m refurb_stream $h
		[ "${lines[0]}" = "usage: python3 -m refurb_stream check STREAM   (STREAM '-' = stdin)" ]
		[[ "${lines[1]}" == "       python3 -m refurb_stream convert EXPRESSION"* ]] || false
		[ -z "$stderr" ]
	done
	run -2 --separate-stderr "$PY" -m refurb_stream frobnicate
	[ "${stderr_lines[0]}" = "refurb_stream: unknown command 'frobnicate' (check or convert; see --help)" ]
	[ -z "$output" ]
}

@test "python3 -m refurb_stream.convert runs the converter, as python3 -m refurb_stream convert does" {
	"$PY" -c 'import torchvision' 2>/dev/null || skip "torchvision is not installed for $PY"
	run -0 --separate-stderr "$PY" -m refurb_stream.convert 'T.RandomHorizontalFlip()'
	[ "$output" = "flip=p=0.5" ]
	[ -z "$stderr" ]
	run -0 "$PY" -m refurb_stream.convert --help
	[[ "${lines[0]}" == "usage: python3 -m refurb_stream convert EXPRESSION"* ]] || false
	run -2 --separate-stderr "$PY" -m refurb_stream convert --bogus 'T.RandomHorizontalFlip()'
	[ "$stderr" = "refurb_stream convert: unknown option --bogus (see --help)" ]
}

@test "RefurbDataset: batches and samples as tensors, without copies; one epoch per for" {
	"$PY" -c 'import torch' 2>/dev/null ||
		skip "torch is not installed (python3-torch): RefurbDataset not tested"
	"$W" -n 10 -b 4 -o "$T/s"
	run "$PY" - "$T/s" <<'EOF'
import sys, torch
from refurb_stream import RefurbDataset
ds = RefurbDataset(sys.argv[1])
loader = torch.utils.data.DataLoader(ds, batch_size=None)
shapes = [(tuple(x.shape), x.dtype, y.dtype, x.data_ptr() % 64) for x, y in loader]
print(len(shapes), len(ds), shapes[0], shapes[2][0], ds.epoch, ds.step)
shapes = [tuple(x.shape) for x, y in loader]        # the next for: the next epoch
print(len(shapes), ds.epoch, ds.step)
samples = list(RefurbDataset(sys.argv[1], samples=True))
print(len(samples), tuple(samples[0][0].shape), int(samples[0][1]), samples[0][1].dtype)
loader = torch.utils.data.DataLoader(RefurbDataset(sys.argv[1]), batch_size=None, num_workers=2)
try:
    list(loader)
except RuntimeError as e:
    print("refused:", "num_workers=0" in str(e))
EOF
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "3 3 ((4, 8, 6, 3), torch.uint8, torch.int64, 0) (2, 8, 6, 3) 0 2" ]
	[ "${lines[1]}" = "3 1 2" ]
	[ "${lines[2]}" = "10 (8, 6, 3) 0 torch.int64" ]
	[ "${lines[3]}" = "refused: True" ]
}

@test "RefurbDataset: the training loop over epochs, the end of the plan, a default DataLoader refused" {
	"$PY" -c 'import torch' 2>/dev/null ||
		skip "torch is not installed (python3-torch): RefurbDataset not tested"
	mkfifo "$T/fifo"
	"$W" -n 10 -b 4 -e 0-2 -o "$T/fifo" &
	run "$PY" - "$T/fifo" "$T/s" <<'EOF'
import sys, torch
from refurb_stream import RefurbDataset, StreamError
ds = RefurbDataset(sys.argv[1])
for epoch in range(3):
    steps = [(ds.epoch, ds.step, len(x)) for x, y in ds]
    print(epoch, steps, ds.state_dict()["epoch"], ds.state_dict()["step"])
try:
    for x, y in ds:
        print("a batch after the end")
except StreamError as e:
    print("end:", str(e).endswith("the stream has ended: its plan's last epoch was 2; plan more epochs (refurb-plan -e) to train longer"))
EOF
	wait
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "0 [(0, 0, 4), (0, 1, 4), (0, 2, 2)] 1 0" ]
	[ "${lines[1]}" = "1 [(1, 0, 4), (1, 1, 4), (1, 2, 2)] 2 0" ]
	[ "${lines[2]}" = "2 [(2, 0, 4), (2, 1, 4), (2, 2, 2)] 3 0" ]
	[ "${lines[3]}" = "end: True" ]
	"$W" -n 10 -b 4 -e 0-2 -o "$T/s"
	run "$PY" - "$T/s" <<'EOF'
import sys, torch
from refurb_stream import RefurbDataset
try:
    for x, y in torch.utils.data.DataLoader(RefurbDataset(sys.argv[1])):
        pass
except ValueError as e:
    print("default DataLoader:", "DataLoader(ds, batch_size=None)" in str(e))
EOF
	[ "$status" -eq 0 ]
	[ "$output" = "default DataLoader: True" ]
}

@test "RefurbDataset: state_dict after a break, load_state_dict skips to it, another plan refused" {
	"$PY" -c 'import torch' 2>/dev/null ||
		skip "torch is not installed (python3-torch): RefurbDataset not tested"
	"$W" -n 10 -b 4 -e 0-2 -o "$T/s"
	"$W" -n 10 -b 5 -e 0-2 -o "$T/other"
	"$W" -n 10 -b 4 -e 0-2 -s 1 -o "$T/resumed"
	run "$PY" - "$T/s" "$T/other" "$T/resumed" <<'EOF'
import sys
from refurb_stream import RefurbDataset, StreamError
ds = RefurbDataset(sys.argv[1])
for x, y in ds:
    break
sd = ds.state_dict()
print(sorted(sd), sd["epoch"], sd["step"], len(sd["plan"]), ds.resume_command())
rest = [(ds.epoch, ds.step) for x, y in ds]        # the rest of the epoch
print(rest)
again = RefurbDataset(sys.argv[1])
again.load_state_dict(sd)
print([(again.epoch, again.step) for x, y in again])
again = RefurbDataset(sys.argv[1])
again.load_state_dict({**sd, "epoch": 2, "step": 0})
print([(again.epoch, again.step) for x, y in again])
try:
    RefurbDataset(sys.argv[2]).load_state_dict(sd)
except StreamError as e:
    print("other plan:", str(e).split(": ", 1)[1])
resumed = RefurbDataset(sys.argv[3])              # a chain started at 0:1
resumed.load_state_dict(sd)
print([(resumed.epoch, resumed.step) for x, y in resumed], resumed.state_dict() == {**sd, "epoch": 1, "step": 0})
try:
    RefurbDataset(sys.argv[3]).load_state_dict({**sd, "step": 0})
except StreamError as e:
    print(str(e).split(": ", 1)[1])
EOF
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "['epoch', 'identity', 'plan', 'step'] 0 1 16 --start 0:1" ]
	[ "${lines[1]}" = "[(0, 1), (0, 2)]" ]
	[ "${lines[2]}" = "[(0, 1), (0, 2)]" ]
	[ "${lines[3]}" = "[(2, 0), (2, 1), (2, 2)]" ]
	[ "${lines[4]}" = "other plan: the checkpoint was made on another plan: with batch-size=4, this stream has batch-size=5; restart the chain with the options of the checkpoint's run" ]
	[ "${lines[5]}" = "[(0, 1), (0, 2)] True" ]
	[ "${lines[6]}" = "the stream starts at epoch 0 step 1, after the checkpoint's epoch 0 step 0: restart the chain with refurb-plan --start 0:0" ]
}

@test "a class directory whose name is not UTF-8 reads back as ImageFolder names it (surrogateescape)" {
	make_dataset "$T/ds0" 6 2
	mkdir "$T/ds"
	mv "$T/ds0/class000" "$T/ds/caf$(printf '\351')"
	mv "$T/ds0/class001" "$T/ds/b"
	refurb-index -q -o "$T/t.idx" "$T/ds"
	refurb-evict -q -r 1 -o "$T/t.evict" "$T/t.idx"
	refurb-plan -q -b 3 -e 0-0 "$T/t.evict" |
		refurb-partial -q -c "$T/c" -p resize=32 "$T/t.idx" |
		refurb-final -q -p crop=24 > "$T/s.bin"
	run "$PY" -c '
import os, sys
from refurb_stream import open_stream
want = sorted(e.name for e in os.scandir(sys.argv[2]) if e.is_dir())  # ImageFolder
with open_stream(sys.argv[1]) as s:
    print(s.header.classes == want, [c.encode("utf-8", "surrogateescape") for c in s.header.classes])
' "$T/s.bin" "$T/ds"
	[ "$status" -eq 0 ]
	[ "$output" = "True [b'b', b'caf\\xe9']" ]
}

@test "a cache path that is not UTF-8 is escaped in the HEADER (%XX); the stream checks" {
	make_dataset "$T/ds" 6 2
	refurb-index -q -o "$T/t.idx" "$T/ds"
	refurb-evict -q -r 2 -o "$T/t.evict" "$T/t.idx"
	refurb-plan -q -b 3 -e 0-1 "$T/t.evict" |
		refurb-partial -q -c "$T/$(printf 'cache_\377%%\t')" -p resize=32 "$T/t.idx" |
		refurb-final -q -p crop=24 > "$T/s.bin"
	run -0 "$PY" -m refurb_stream check "$T/s.bin"
	[[ "$output" == *"ended cleanly"* ]]
	run -0 "$PY" -c '
import sys
from refurb_stream import open_stream
with open_stream(sys.argv[1]) as s:
    print(s.header.extra["cache"])
' "$T/s.bin"
	[ "$output" = "$T/cache_%FF%25%09" ]
	run -0 refurb-dump "$T/s.bin"
}

# not_utf8 IN OUT: IN with the first byte of its HEADER's extra text
# replaced by 0xff, its checksums made right again
not_utf8() {
	"$PY" - "$1" "$2" <<'EOF'
import struct, sys
from refurb_stream import crc32c
b = bytearray(open(sys.argv[1], "rb").read())
plen = struct.unpack_from("<Q", b, 16)[0]
p = 64
lp, lf, lc, lx = struct.unpack_from("<4I", b, p + 104)
b[p + 128 + lp + lf + lc] = 0xff
struct.pack_into("<II", b, 36, crc32c(b[p:p + plen]), crc32c(b[p:p + plen]))
struct.pack_into("<I", b, 60, crc32c(b[:60]))
open(sys.argv[2], "wb").write(b)
EOF
}

@test "a HEADER text that is not UTF-8 is a StreamError (check: exit 1, no traceback), refurb-dump refuses it" {
	"$W" -o "$T/s"
	not_utf8 "$T/s" "$T/bad"
	run --separate-stderr "$PY" -m refurb_stream check "$T/bad"
	[ "$status" -eq 1 ]
	[[ "$stderr" == "refurb_stream: $T/bad: bad HEADER: the extra text is not UTF-8 (byte 0 is 0xff)" ]]
	run ! "$PY" -c '
import sys
from refurb_stream import open_stream, StreamError
try:
    open_stream(sys.argv[1])
except StreamError as e:
    print("StreamError:", e)
    sys.exit(1)
' "$T/bad"
	[ "$output" = "StreamError: bad HEADER: the extra text is not UTF-8 (byte 0 is 0xff)" ]
	run -1 refurb-dump "$T/bad"
	[[ "$output" == *"the extra text is not UTF-8 (byte 0 is 0xff)"* ]]
}
