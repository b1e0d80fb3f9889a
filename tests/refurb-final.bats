#!/usr/bin/env bats
# refurb-final: the stream a trainer reads, its determinism, healing of bad
# records, memory, one io_submit per batch, bad input.
# tests/run: serial (memory and FIFO timing windows)

load helpers
bats_require_minimum_version 1.5.0
# a failure anywhere in a pipeline fails it (tests/lint-bats)
set -o pipefail

SPEC='resize=64,randaug=n=2:m=9'
FINAL='crop=56,flip'

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	make_train 60 3
	refurb-plan -q -b 8 -e 0-4 train.evict > plan.txt
	refurb-partial -q -c cache -p "$SPEC" train.idx < plan.txt > ann.txt
}

setup() {
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
}

# same_batches A B: the two streams hold the same batches (pixels, ids,
# labels, epochs, steps); their headers may differ (cache paths)
same_batches() {
	/usr/bin/python3 -c '
import sys
sys.path.insert(0, sys.argv[3])
from refurb_stream import open_stream
a = [(b.epoch, b.step, b.images.tobytes(), b.ids.tobytes(), b.labels.tobytes()) for b in open_stream(sys.argv[1])]
b = [(b.epoch, b.step, b.images.tobytes(), b.ids.tobytes(), b.labels.tobytes()) for b in open_stream(sys.argv[2])]
sys.exit(0 if a == b and a else 1)
' "$1" "$2" "$TOP/python"
}

# labels and ids of every batch, one line each: "epoch step id:label ..."
batches() {
	/usr/bin/python3 -c '
import sys
sys.path.insert(0, sys.argv[2])
from refurb_stream import open_stream
for b in open_stream(sys.argv[1]):
    print(b.epoch, b.step, " ".join("%d:%d" % (i, l) for i, l in zip(b.ids, b.labels)))
' "$1" "$TOP/python"
}

@test "--help, --version, usage errors" {
	run refurb-final --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Usage: refurb-final"* ]]
	run refurb-final --version
	[ "$status" -eq 0 ]
	run refurb-final < ann.txt
	expect_fail 2 "refurb-final: no final pipeline"
	run refurb-final -p "$FINAL" extra < ann.txt
	expect_fail 2 "refurb-final: unexpected argument 'extra'"
	run refurb-final -p "$FINAL" --prefetch 0 < ann.txt
	expect_fail 2 "refurb-final: --prefetch: 0 is out of range"
}

@test "pipeline spec error: exit 2 quoting the spec" {
	run refurb-final -p 'crop=56,wobble' -o "$T/s" < ann.txt
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "refurb-final: "*"wobble"* ]]
}

@test "a crop larger than the records: exit 1, the image named, the two ways out" {
	run refurb-final -q -p crop=80 -o "$T/out" -i ann.txt
	[ "$status" -eq 1 ]
	[[ "$output" == *"refurb-final: $BATS_FILE_TMPDIR/"*": crop 80x80 larger than the (padded) image"* ]]
	[[ "$output" == *"resize to at least the crop size first, or give the crop pad_if_needed=1"* ]]
	run refurb-final -q -p crop=80:pad_if_needed=1 -o "$T/out" -i ann.txt
	[ "$status" -eq 0 ]
}

@test "a final pipeline without a fixed output size is refused" {
	run refurb-final -p 'flip' -o "$T/s" < ann.txt
	[ "$status" -eq 2 ]
	[[ "$output" == *"size"* ]]
}

@test "round trip through the Python reader: labels and ids as planned" {
	need_numpy
	refurb-final -q -p "$FINAL" -o "$T/s" < ann.txt
	run env PYTHONPATH="$TOP/python" /usr/bin/python3 -m refurb_stream check "$T/s"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok: 5 epochs, 40 batches, 300 images"* ]]
	batches "$T/s" > "$T/got"
	# expected: the plan's ids in order, labels from the index
	refurb-dump train.idx | grep -v '^#' | cut -f1,2 > "$T/labels"
	grep '^B' plan.txt | awk 'NR == FNR { l[$1] = $2; next }
		{ s = $2 " " $3; for (i = 6; i <= NF; i++) { split($i, a, ":"); s = s " " a[1] ":" l[a[1]] } print s }' \
		"$T/labels" - > "$T/want"
	diff "$T/want" "$T/got"
}

@test "the images are the cached records after the final pipeline" {
	need_numpy
	refurb-final -q -p 'centercrop=56' -o "$T/s" < ann.txt
	# first sample of the last epoch's first batch: the cache holds the
	# record that batch used (the newest of the sample)
	id=$(grep '^B 4 0 ' plan.txt | cut -d' ' -f6 | cut -d: -f1)
	refurb-dump -x "$id" -o "$T/rec.ppm" cache
	/usr/bin/python3 - "$T/s" "$T/rec.ppm" "$TOP/python" <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[3])
from refurb_stream import open_stream
b = [b for b in open_stream(sys.argv[1]) if (b.epoch, b.step) == (4, 0)][0]
data = open(sys.argv[2], "rb").read()
parts = data.split(b"\n", 3)
w, h = map(int, parts[1].split())
rec = np.frombuffer(parts[3], np.uint8).reshape(h, w, 3)
top, left = int(round((h - 56) / 2.0)), int(round((w - 56) / 2.0))
assert (b.images[0] == rec[top:top + 56, left:left + 56]).all()
PY
}

@test "byte-identical for -j 1 and -j 2, any prefetch" {
	refurb-final -q -j 1 --prefetch 1 -p "$FINAL" -o "$T/a" < ann.txt
	refurb-final -q -j 2 --prefetch 4 -p "$FINAL" -o "$T/b" < ann.txt
	cmp "$T/a" "$T/b"
}

@test "stop and resume: the resumed stream has the same batches" {
	need_numpy
	refurb-final -q -p "$FINAL" -o "$T/full" < ann.txt
	# a copy: a writer that opens the shared cache deletes the segments
	# that ann.txt's later epochs refer to (nobody reads it then)
	cp -r cache "$T/c"
	refurb-plan -q -b 8 -e 2-4 train.evict |
		refurb-partial -q -c "$T/c" -p "$SPEC" train.idx |
		refurb-final -q -p "$FINAL" -o "$T/tail"
	/usr/bin/python3 - "$T/full" "$T/tail" "$TOP/python" <<'PY'
import sys
sys.path.insert(0, sys.argv[3])
from refurb_stream import open_stream
full = {(b.epoch, b.step): (b.images.tobytes(), b.ids.tobytes()) for b in open_stream(sys.argv[1])}
n = 0
for b in open_stream(sys.argv[2]):
    assert full[(b.epoch, b.step)] == (b.images.tobytes(), b.ids.tobytes()), (b.epoch, b.step)
    n += 1
assert n == 24, n
PY
}

@test "a corrupted record is healed: same stream, counted" {
	need_numpy
	cp -r cache "$T/c"
	refurb-final -q -p "$FINAL" -o "$T/good" < ann.txt
	# flip a byte in the payload of the first record of every segment
	for s in "$T"/c/*.seg; do printf 'X' | dd of="$s" bs=1 seek=200 conv=notrunc 2>/dev/null; done
	run sh -c "refurb-final -c '$T/c' -p '$FINAL' -o '$T/healed' < ann.txt"
	[ "$status" -eq 0 ]
	[[ "$output" == *"record recomputed from its image"* ]]
	[[ "$output" =~ records\ recomputed\ [1-9] ]]
	same_batches "$T/good" "$T/healed"
	run sh -c "refurb-final --strict -c '$T/c' -p '$FINAL' -o '$T/x' < ann.txt"
	[ "$status" -eq 1 ]
	[[ "$output" == *"checksum"* ]]
}

@test "a healed record names its segment file, or the cache directory when the segment's path is too long for the message" {
	need_numpy
	cp -r cache "$T/c"
	printf 'X' | dd of="$T/c/00000000.seg" bs=1 seek=200 conv=notrunc 2>/dev/null
	run sh -c "refurb-final -c '$T/c' -p '$FINAL' -o '$T/healed' < ann.txt"
	[ "$status" -eq 0 ]
	[[ "$output" == *"record recomputed from its image ($T/c/00000000.seg: record at segment 00000000 offset "* ]]
	# a cache path of 505 bytes: it fits in the message's 512, its
	# segment's "/00000000.seg" does not
	long="$(realpath "$T")"
	while [ $((505 - ${#long})) -gt 201 ]; do
		long="$long/$(printf 'd%.0s' $(seq 200))"
	done
	long="$long/$(printf 'e%.0s' $(seq $((505 - ${#long} - 1))))"
	[ "${#long}" -eq 505 ]
	mkdir -p "$(dirname "$long")"
	mv "$T/c" "$long"
	run sh -c "refurb-final -c '$long' -p '$FINAL' -o '$T/healed2' < ann.txt"
	[ "$status" -eq 0 ]
	[[ "$output" == *"record recomputed from its image ($long: record at segment 00000000 offset "* ]]
	[[ "$output" != *"$long/0"* ]]
	same_batches "$T/healed" "$T/healed2"
}

@test "a deleted segment is healed too" {
	need_numpy
	cp -r cache "$T/c"
	rm "$(ls "$T"/c/*.seg | head -n 1)"
	run sh -c "refurb-final -c '$T/c' -p '$FINAL' -o '$T/healed' < ann.txt"
	[ "$status" -eq 0 ]
	[[ "$output" =~ records\ recomputed\ [1-9] ]]
	refurb-final -q -p "$FINAL" -o "$T/good" < ann.txt
	same_batches "$T/good" "$T/healed"
}

@test "one io_submit per batch" {
	run sh -c "refurb-final -p '$FINAL' -o /dev/null < ann.txt"
	[ "$status" -eq 0 ]
	[[ "$output" == *" 1.00 io_submit calls per batch"* ]]
}

@test "--stats writes one TSV line per batch" {
	refurb-final -q -p "$FINAL" --stats "$T/st.tsv" -o /dev/null < ann.txt
	[ "$(head -n 1 "$T/st.tsv" | cut -f1-4)" = "$(printf 'epoch\tstep\timages\tmisses')" ]
	[ "$(wc -l < "$T/st.tsv")" -eq 41 ]
	# misses per batch as in the plan
	awk -F'\t' 'NR > 1 { s += $4 } END { print s }' "$T/st.tsv" > "$T/m1"
	grep '^E' plan.txt | awk '{ s += $5 } END { print s }' > "$T/m2"
	cmp "$T/m1" "$T/m2"
}

@test "--stats: a write error is reported (exit 1, the file named)" {
	[ -w /dev/full ] || skip "no /dev/full"
	run refurb-final -q -p "$FINAL" --stats /dev/full -o "$T/out" < ann.txt
	expect_fail 1 "refurb-final: /dev/full: write failed: No space left on device"
}

@test "memory stays flat for a 10x larger dataset" {
	make_dataset "$T/big" 600 3
	refurb-index -q -o "$T/big.idx" "$T/big"
	refurb-evict -q -r 3 -o "$T/big.evict" "$T/big.idx"
	refurb-plan -q -b 8 -e 0-1 "$T/big.evict" |
		refurb-partial -q -c "$T/bc" -p "$SPEC" "$T/big.idx" > "$T/big.ann"
	refurb-plan -q -b 8 -e 0-1 train.evict |
		refurb-partial -q -c "$T/sc" -p "$SPEC" train.idx > "$T/small.ann"
	small=$(/usr/bin/time -f %M refurb-final -q -j 2 -p "$FINAL" -o /dev/null < "$T/small.ann" 2>&1)
	big=$(/usr/bin/time -f %M refurb-final -q -j 2 -p "$FINAL" -o /dev/null < "$T/big.ann" 2>&1)
	echo "peak RSS: small $small KiB, big $big KiB"
	# the index grows by ~50 bytes a sample; everything else must not grow
	[ "$big" -lt $((small + 2048)) ]
}

@test "a plan that was not annotated by refurb-partial" {
	run sh -c "refurb-final -p '$FINAL' -o '$T/s' < plan.txt"
	expect_fail 1 "refurb-final: (stdin): header has no valid cache="
}

@test "a malformed plan line" {
	{ head -n 2 ann.txt; echo "B 0 1 1 8 garbage"; } > "$T/bad.txt"
	run refurb-final -p "$FINAL" -o "$T/s" -i "$T/bad.txt"
	expect_fail 1 "refurb-final: $T/bad.txt: line 3"
	# nothing a reader could take for a valid end: the stream has no END
	need_numpy
	run env PYTHONPATH="$TOP/python" /usr/bin/python3 -m refurb_stream check "$T/s"
	[ "$status" -eq 1 ]
}

@test "a sample the index does not have" {
	sed '2s/ \([0-9]*\):m1@/ 999:m1@/' ann.txt > "$T/bad.txt"
	run refurb-final -p "$FINAL" -o "$T/s" -i "$T/bad.txt"
	expect_fail 1 "refurb-final: $T/bad.txt: line 2"
	[[ "$output" == *"999"* ]]
}

@test "a plan for another index, or another cache" {
	make_dataset "$T/o" 20 2
	refurb-index -q -o "$T/o.idx" "$T/o"
	run refurb-final -p "$FINAL" --index "$T/o.idx" -o "$T/s" < ann.txt
	expect_fail 1 "refurb-final: (stdin): plan was made for another index than $T/o.idx: give --index the index the plan was made from, or leave --index out (the plan names it)"
	# the plan's own index, changed since: made again
	cp train.idx "$T/t.idx"
	sed "1s| index-file=[^ ]*| index-file=$T/t.idx|" ann.txt > "$T/t.txt"
	cp "$T/o.idx" "$T/t.idx"
	run refurb-final -p "$FINAL" -o "$T/s" -i "$T/t.txt"
	expect_fail 1 "refurb-final: $T/t.txt: plan was made for another index than $T/t.idx: the index changed since; make the schedule and the plan again from it (refurb-evict, refurb-plan)"
	refurb-evict -q -r 2 -o "$T/o.evict" train.idx
	refurb-plan -q -b 8 -e 0 "$T/o.evict" | refurb-partial -q -c "$T/oc" -p "$SPEC" train.idx > /dev/null
	run refurb-final -p "$FINAL" -c "$T/oc" -o "$T/s" < ann.txt
	expect_fail 1 "refurb-final: $T/oc: the cache was made for another plan"
}

@test "a truncated plan: error, the stream shows it is incomplete" {
	head -c 2000 ann.txt > "$T/cut.txt"
	run refurb-final -p "$FINAL" -o "$T/s" -i "$T/cut.txt"
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == "refurb-final: $T/cut.txt: "* ]]
}

@test "binary output to a terminal is refused" {
	command -v script > /dev/null || skip "no script(1)"
	# (SHELL set: script runs the command with the user's $SHELL; -e
	# passes on refurb-final's status)
	run env SHELL=/bin/sh script -qec "refurb-final -p '$FINAL' < ann.txt" /dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *"refusing to write binary data to a terminal"* ]]
}

@test "the reader closing the stream stops it cleanly" {
	# pipefail: the status is refurb-final's, not head's
	run bash -c "set -o pipefail; refurb-final -p '$FINAL' < ann.txt | head -c 1000 > /dev/null"  # lint-bats: allow sigpipe
	[ "$status" -eq 0 ]
	[[ "$output" == *"the reader closed the stream"* ]]
}

@test "float32 NCHW when the final pipeline ends in normalize" {
	need_numpy
	refurb-final -q -p "$FINAL,normalize" -o "$T/f" < ann.txt
	/usr/bin/python3 - "$T/f" "$TOP/python" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from refurb_stream import open_stream
s = open_stream(sys.argv[1])
b = next(iter(s))
assert b.images.dtype.name == "float32" and b.images.shape[1:] == (3, 56, 56), b.images.shape
assert abs(float(b.images.mean())) < 3
PY
}

@test "a sample refurb-partial left out: another sample of its batch repeated in its place (id 0xffffffff), batch sizes constant" {
	need_numpy
	cp -r ds "$T/ds"
	refurb-index -q -o "$T/t.idx" "$T/ds"
	refurb-evict -q -r 3 -s 7 -o "$T/t.evict" "$T/t.idx"
	victim=$(refurb-dump "$T/t.idx" | grep -v '^#' | sed -n 5p)
	head -c 500 "$T/ds/$(cut -f8 <<< "$victim")" > "$T/x"
	mv "$T/x" "$T/ds/$(cut -f8 <<< "$victim")"
	refurb-plan -q -b 8 -e 0-1 "$T/t.evict" |
		refurb-partial -q --max-bad 1 -c "$T/c" -p "$SPEC" "$T/t.idx" 2> /dev/null |
		refurb-final -q -p "$FINAL" -o "$T/s"
	run env PYTHONPATH="$TOP/python" /usr/bin/python3 -m refurb_stream check "$T/s"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok: 2 epochs, 16 batches, 120 images"* ]]
	# no short batch but the last of each epoch (60 = 7 x 8 + 4)
	[ "$(awk -F'\t' '$1 ~ /^[01]$/ { print $4 }' <<< "$output" | sort -u)" = 1 ]
	batches "$T/s" > "$T/b"
	run -1 grep -c " $(cut -f1 <<< "$victim"):" "$T/b"
	[ "$output" -eq 0 ]
	# one repeat in each epoch, with the label of the sample it repeats
	[ "$(grep -c ' 4294967295:' "$T/b")" -eq 2 ]
	while read -r e s rest; do
		for x in $rest; do
			[ "${x%%:*}" = 4294967295 ] || continue
			# the first sample of the batch is the one repeated
			first=$(cut -d' ' -f3 <<< "$e $s $rest")
			[ "${x#*:}" = "${first#*:}" ]
		done
	done < <(grep ' 4294967295:' "$T/b")
}

@test "the plan ends before its last epoch (refurb-partial stopped): exit 1, no END in the stream, the reader says the chain stopped" {
	need_numpy
	head -n 12 ann.txt > "$T/early.ann"
	run sh -c "refurb-final -q -p '$FINAL' -i '$T/early.ann' -o '$T/s'"
	expect_fail 1 "refurb-final: $T/early.ann: ends in epoch 1, batch 2 (the header promises epochs 0-4); the program writing the plan stopped early (see its message), the stream is left without its END frame"
	run env PYTHONPATH="$TOP/python" /usr/bin/python3 -m refurb_stream check "$T/s"
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == "refurb_stream: $T/s: frame 12 at byte "*": the chain stopped early: the stream ends after epoch 1 step 1 without its END frame (refurb-final or a program before it stopped: see their messages on the chain's stderr)" ]]
}

@test "-o FIFO with no reader: Ctrl-C while it waits says so (exit 130)" {
	mkfifo "$T/fifo"
	refurb-final -q -p "$FINAL" -i ann.txt -o "$T/fifo" 2> "$T/err" &
	pid=$!
	# SIGINT once its handler is there (SigCgt bit 1), not before
	for _ in $(seq 200); do
		cgt=$(awk '/^SigCgt:/ { print $2 }' "/proc/$pid/status")
		(( (16#$cgt & 2) != 0 )) && break
		sleep 0.05
	done
	sleep 0.2
	kill -INT "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 130 ]
	run -0 cat "$T/err"
	[ "$output" = "refurb-final: interrupted before writing a batch" ]
}

@test "-o FIFO with no reader: says so after a few seconds, then writes when one comes" {
	need_numpy
	mkfifo "$T/fifo"
	refurb-final -q -p "$FINAL" -i ann.txt -o "$T/fifo" 2> "$T/err" &
	pid=$!
	sleep 7
	run -0 cat "$T/err"
	[ "$output" = "refurb-final: $T/fifo: waiting for a reader (the trainer) to open this FIFO" ]
	run env PYTHONPATH="$TOP/python" /usr/bin/python3 -m refurb_stream check "$T/fifo"
	wait "$pid"
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" == "ok: 5 epochs, "* ]]
}
