#!/usr/bin/env bats
# refurb-dump on a batch stream: listing, --stats, --batch, --sheet, and
# the streams it must refuse.  Streams come from build/tools/write_stream
# (its header comment gives their content).

load helpers
bats_require_minimum_version 1.5.0
# a failure anywhere in a pipeline fails it (tests/lint-bats)
set -o pipefail

setup() {
	T="$BATS_TEST_TMPDIR"
	W="$BUILD_DIR/tools/write_stream"
}

@test "listing: the HEADER, one line per frame, how it ended" {
	"$W" --extension -o "$T/s"
	run refurb-dump "$T/s"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "# stream	$T/s" ]
	grep -q "^# images	8x6x3 uint8 NHWC$" <<< "$output"
	grep -q "^# classes	3$" <<< "$output"
	grep -q "^# epochs	0-1 from step 0$" <<< "$output"
	grep -q "^# partial	resize=16$" <<< "$output"
	grep -q "^# extra	writer=write_stream$" <<< "$output"
	grep -q "^# frame	offset	type	epoch	step	global	images$" <<< "$output"
	[ "$(grep -c '	BATCH	' <<< "$output")" -eq 6 ]
	grep -q "^1	256	BATCH	0	0	0	4$" <<< "$output"
	grep -q "^5	2432	EPOCH_END	0	-	-	10$" <<< "$output"
	grep -q "^# skipped	1 frames of unknown types$" <<< "$output"
	[ "${lines[-1]}" = "# end	clean: 6 batches, 20 images, 2 epochs" ]
}

@test "--stats: per-epoch table and label histogram" {
	"$W" -n 10 -b 4 -k 3 -e 0-2 -o "$T/s"
	run refurb-dump --stats "$T/s"
	[ "$status" -eq 0 ]
	grep -q "^# epoch	batches	images	short	classes	per-class-min	per-class-max	duplicate-ids$" <<< "$output"
	grep -q "^0	3	10	1	3	3	4	0$" <<< "$output"
	grep -q "^2	3	10	1	3	3	4	0$" <<< "$output"
	grep -q "^# label	class	images	per-epoch-min	per-epoch-max$" <<< "$output"
	grep -q "^0	class0	12	4	4$" <<< "$output"
	grep -q "^2	class2	9	3	3$" <<< "$output"
	"$W" --duplicate -o "$T/d"
	run refurb-dump -S "$T/d"
	[ "$status" -eq 0 ]
	grep -q "^0	3	10	1	3	3	4	1$" <<< "$output"
}

@test "--batch EPOCH:STEP and a global step: the images' ids and labels" {
	"$W" -o "$T/s"
	run refurb-dump --batch 1:1 "$T/s"
	[ "$status" -eq 0 ]
	grep -q "^# batch	epoch 1 step 1 global 4, 4 images$" <<< "$output"
	grep -q "^# index	row	column	id	label	class$" <<< "$output"
	grep -q "^2	1	0	3	0	class0$" <<< "$output"
	run refurb-dump -b 4 "$T/s"
	[ "$status" -eq 0 ]
	grep -q "^# batch	epoch 1 step 1 global 4, 4 images$" <<< "$output"
	run refurb-dump -b 7:0 "$T/s"
	[ "$status" -eq 1 ]
	[ "${lines[-1]}" = "refurb-dump: $T/s: no batch 7:0 in the stream" ]
}

@test "--sheet: one picture whatever the dtype, layout and normalization" {
	opts="-H 20 -W 28 -b 9 -n 20"
	"$W" $opts -o "$T/a"
	"$W" $opts -l nchw -o "$T/b"
	"$W" $opts -d f32 -l nchw --normalize -o "$T/c"
	"$W" $opts -d f32 -o "$T/d"
	for s in a b c d; do
		refurb-dump -q -b 0:1 --sheet "$T/$s.jpg" "$T/$s" > /dev/null
	done
	[ "$(head -c 3 "$T/a.jpg" | od -An -tx1 | tr -d ' ')" = "ffd8ff" ]
	cmp "$T/a.jpg" "$T/b.jpg"
	cmp "$T/a.jpg" "$T/c.jpg"
	cmp "$T/a.jpg" "$T/d.jpg"
	if /usr/bin/python3 -c 'import PIL' 2>/dev/null; then
		run /usr/bin/python3 -c "from PIL import Image; print(Image.open('$T/a.jpg').size)"
		[ "$status" -eq 0 ]
		[ "$output" = "(92, 68)" ]     # 3 x 3 grid of 28 x 20, 2-pixel gaps
		refurb-dump -b 0:1 --columns 9 --sheet "$T/w.jpg" "$T/a" > /dev/null
		run /usr/bin/python3 -c "from PIL import Image; print(Image.open('$T/w.jpg').size)"
		[ "$status" -eq 0 ]
		[ "$output" = "(272, 24)" ]
	fi
}

@test "a stream cut inside a frame: what was read, then exit 1" {
	"$W" -o "$T/s"
	head -c 3000 "$T/s" > "$T/t"
	run --separate-stderr refurb-dump "$T/t"
	[ "$status" -eq 1 ]
	[ "$stderr" = "refurb-dump: $T/t: frame 5 at byte 2432: stream ends inside the frame (504 of 704 payload bytes)" ]
	[ "$(grep -c '	BATCH	' <<< "$output")" -eq 3 ]
	[ "${lines[-1]}" = "# end	not clean: see the error" ]
}

@test "a writer that died between frames: exit 1" {
	"$W" --stop 4 -o "$T/s"
	run --separate-stderr refurb-dump -S "$T/s"
	[ "$status" -eq 1 ]
	[[ "$stderr" == "refurb-dump: $T/s: frame "*": stream ends without an END frame (cut short, or its writer died)" ]]
	grep -q "^1	1	4	0	3	1	2	0	(incomplete)$" <<< "$output"
}

@test "corrupt stream: checksum mismatch, future version, critical frame" {
	"$W" -o "$T/s"
	cp "$T/s" "$T/p"
	printf 'X' | dd of="$T/p" bs=1 seek=600 conv=notrunc 2>/dev/null
	run --separate-stderr refurb-dump "$T/p"
	[ "$status" -eq 1 ]
	[ "$stderr" = "refurb-dump: $T/p: frame 1 at byte 256: payload checksum mismatch" ]
	cp "$T/s" "$T/v"
	printf '\x04' | dd of="$T/v" bs=1 seek=7 conv=notrunc 2>/dev/null
	run refurb-dump "$T/v"
	expect_fail 1 "refurb-dump: $T/v: frame 0 at byte 0: batch stream format version 4, this refurb reads versions 1 to 3"
	"$W" --critical -o "$T/c"
	run --separate-stderr refurb-dump "$T/c"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"frame type 99 is unknown to this reader and marked critical"* ]]
}

@test "usage errors: --sheet without --batch, a bad --batch" {
	"$W" -o "$T/s"
	run refurb-dump --sheet "$T/x.jpg" "$T/s"
	expect_fail 2 "refurb-dump: --sheet and --columns need --batch"
	run refurb-dump --batch 1:x "$T/s"
	expect_fail 2 "refurb-dump: --batch: '1:x' is not EPOCH:STEP or a global step"
	run refurb-dump -b 1:1 --sheet "$T/nodir/x.jpg" "$T/s"
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == "refurb-dump: $T/nodir/x.jpg"* ]]
}

@test "a stream written from refurb-stream(5) alone (Python) reads back" {
	need_numpy
	PYTHONPATH="$TOP/python" /usr/bin/python3 - "$T/py" <<'EOF'
# An independent writer: only the man page's tables and refurb_stream.crc32c.
import struct, sys
import numpy as np
from refurb_stream import crc32c
out, seq = open(sys.argv[1], "wb"), [0]
def frame(kind, payload, head):
    fh = bytearray(64)
    fh[0:8] = b"RFBSTRM\x01"
    hc = crc32c(payload[:head])
    struct.pack_into("<IIQQIII", fh, 8, kind, 0, len(payload), seq[0], head, hc, crc32c(payload[head:], hc))
    struct.pack_into("<I", fh, 60, crc32c(bytes(fh[:60])))
    out.write(fh + payload + b"\0" * (-len(payload) % 64))
    seq[0] += 1
names, part, fin = b"a\0b\0", b"resize=64", b"crop=16,normalize"
hdr = struct.pack("<IBBH10I4Q3f3f4I8x", 1, 2, 2, 1, 16, 16, 3, 8, 2, 0, 0, 0, 0, 1, 5, 1, 2, 3,
                  .5, .5, .5, .25, .25, .25, len(part), len(fin), len(names), 0) + part + fin + names
frame(1, hdr, len(hdr))
n, x = 5, np.linspace(-2, 2, 5 * 3 * 16 * 16, dtype="<f4")
head = struct.pack("<IIQIBBxxIII28x", 0, 0, 0, n, 2, 2, 16, 16, 3) + \
    struct.pack("<5I", *[i % 2 for i in range(n)]) + struct.pack("<5I", *range(n))
head += b"\0" * (-len(head) % 64)
frame(2, head + x.tobytes(), len(head))
frame(3, struct.pack("<IIQ", 0, 1, n), 16)
frame(4, struct.pack("<QQQI4x", 3, 1, n, 1), 32)
EOF
	run refurb-dump -S "$T/py"
	[ "$status" -eq 0 ]
	grep -q "^# images	16x16x3 float32 NCHW$" <<< "$output"
	grep -q "^# normalized	mean 0.5 std 0.25, mean 0.5 std 0.25, mean 0.5 std 0.25$" <<< "$output"
	grep -q "^0	1	5	1	2	2	3	0$" <<< "$output"
	[ "${lines[-1]}" = "# end	clean: 1 batches, 5 images, 1 epochs" ]
	run refurb-dump -b 0:0 --sheet "$T/py.jpg" "$T/py"
	[ "$status" -eq 0 ]
	[ -s "$T/py.jpg" ]
}

@test "a stream on stdin: the same listing, and a batch's sheet" {
	"$W" -o "$T/s"
	refurb-dump "$T/s" | tail -n +2 > "$T/file.txt"
	refurb-dump - < "$T/s" > "$T/stdin.txt"
	[ "$(head -n 1 "$T/stdin.txt")" = "# stream	(stdin)" ]
	tail -n +2 "$T/stdin.txt" | cmp - "$T/file.txt"
	# stdin a pipe (the process substitution is there so that a reader
	# that stops at the batch cannot kill the writer with SIGPIPE)
	refurb-dump -b 0:1 --sheet "$T/b.jpg" - < <(cat "$T/s") > /dev/null
	[ "$(head -c 3 "$T/b.jpg" | od -An -tx1 | tr -d ' ')" = ffd8ff ]
}

@test "stdin that is no refurb file is refused as (stdin)" {
	run refurb-dump - <<< "hello, world"
	expect_fail 1 "refurb-dump: (stdin): not a refurb file (unknown magic)"
	run refurb-dump - < /dev/null
	expect_fail 1 "refurb-dump: (stdin): not a refurb file (unknown magic)"
}
