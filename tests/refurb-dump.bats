#!/usr/bin/env bats
# refurb-dump on an index and on files it must refuse.

load helpers
bats_require_minimum_version 1.5.0

setup_file() {
	make_dataset "$BATS_FILE_TMPDIR/ds" 30 3
	refurb-index -q -o "$BATS_FILE_TMPDIR/ds.idx" "$BATS_FILE_TMPDIR/ds"
}

setup() {
	IDX="$BATS_FILE_TMPDIR/ds.idx"
	T="$BATS_TEST_TMPDIR"
}

@test "--help and --version" {
	run refurb-dump --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Usage: refurb-dump"* ]]
	run refurb-dump -V
	[ "$status" -eq 0 ]
	[[ "$output" == "refurb-dump (refurb) "* ]]
}

@test "no file is a usage error" {
	run refurb-dump
	expect_fail 2 "refurb-dump: no file given"
}

@test "index as TSV: header lines and one row per sample" {
	run refurb-dump "$IDX"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "# root"* ]]
	[ "$(grep -c '^# class' <<< "$output")" -eq 3 ]
	grep -q "^# id	label	class	bytes	width	height	channels	path$" <<< "$output"
	[ "$(grep -vc '^#' <<< "$output")" -eq 30 ]
}

@test "index --stats: samples, classes, distributions" {
	run refurb-dump --stats "$IDX"
	[ "$status" -eq 0 ]
	[[ "$output" == *"samples      30"* ]]
	[[ "$output" == *"classes      3"* ]]
	[[ "$output" == *"bytes        min"* ]]
	[[ "$output" == *"pixels       min"* ]]
	grep -q "^0	class000	10$" <<< "$output"
}

@test "missing file: exit 1" {
	run refurb-dump "$T/nope.idx"
	expect_fail 1 "refurb-dump: $T/nope.idx: No such file"
}

@test "a directory that is not a cache: exit 1" {
	run refurb-dump "$T"
	expect_fail 1 "refurb-dump: $T: "
}

@test "unknown magic: exit 1" {
	echo "hello world" > "$T/x"
	run refurb-dump "$T/x"
	expect_fail 1 "refurb-dump: $T/x: not a refurb file"
}

@test "empty file: exit 1" {
	: > "$T/e"
	run refurb-dump "$T/e"
	expect_fail 1 "refurb-dump: $T/e: not a refurb file"
}

@test "truncated index: exit 1" {
	head -c 100 "$IDX" > "$T/t.idx"
	run refurb-dump "$T/t.idx"
	expect_fail 1 "refurb-dump: $T/t.idx: index is 100 bytes, its header says"
	head -c 40 "$IDX" > "$T/t2.idx"
	run refurb-dump "$T/t2.idx"
	expect_fail 1 "refurb-dump: $T/t2.idx: truncated index"
}

@test "index from a future version: exit 1" {
	cp "$IDX" "$T/v.idx"
	printf '\x09' | dd of="$T/v.idx" bs=1 seek=7 conv=notrunc 2>/dev/null
	run refurb-dump "$T/v.idx"
	expect_fail 1 "refurb-dump: $T/v.idx: index format version 9, this refurb reads versions 1 and 2"
}

@test "corrupt index body: checksum mismatch" {
	cp "$IDX" "$T/c.idx"
	size=$(stat -c %s "$T/c.idx")
	printf 'X' | dd of="$T/c.idx" bs=1 seek=$((size - 5)) conv=notrunc 2>/dev/null
	run refurb-dump "$T/c.idx"
	expect_fail 1 "refurb-dump: $T/c.idx: index body checksum mismatch"
}

@test "write error is reported (full disk)" {
	[ -w /dev/full ] || skip "no /dev/full"
	run refurb-dump -o /dev/full "$IDX"
	expect_fail 1 "refurb-dump: /dev/full: write failed"
}

@test "--verify on every kind of refurb file: one line, or exit 1 naming the problem" {
	set -o pipefail
	T="$BATS_TEST_TMPDIR"
	refurb-evict -q -r 3 -o "$T/s.evict" "$IDX"
	refurb-plan -q -b 8 -e 0-1 "$T/s.evict" > "$T/p.plan"
	# (--no-handover: with the handover, how many records reach the cache
	# depends on when refurb-final opens the ring)
	refurb-partial -q --no-handover -c "$T/c" -p resize=48 "$IDX" < "$T/p.plan" |
		refurb-final -q -p crop=32 -o "$T/s.bin"
	for f in "$IDX" "$T/s.evict" "$T/p.plan" "$T/s.bin"; do
		run refurb-dump --verify "$f"
		[ "$status" -eq 0 ]
		[[ "$output" == "$f: "*" verified: every checksum (where the format has them), length and sequence rule checked, no problems" ]]
	done
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
	# 30 live records, and those of a dead group the writer may not have
	# deleted yet when the run ended (it deletes them at its next batch)
	[[ "$output" == "$T/c: "[34]"0 records checked, 0 problems" ]]
	head -c 5000 "$T/s.bin" > "$T/cut.bin"
	run refurb-dump --verify "$T/cut.bin"
	expect_fail 1 "refurb-dump: $T/cut.bin: frame 1 at byte 576: stream ends inside the frame"
	head -n 3 "$T/p.plan" > "$T/cut.plan"
	run refurb-dump --verify "$T/cut.plan"
	expect_fail 1 "refurb-dump: $T/cut.plan: "
	# a segment whose header a killed writer did not finish: named as
	# such, a torn tail (what kill -9 leaves, repaired by the next run)
	: > "$T/c/000000ff.seg"
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
	[[ "$output" == *"segment 000000ff offset 0: segment header cut short (0 of "*" bytes): a writer killed while creating it; the next writer removes it"* ]]
	[[ "$output" == *", 0 problems, 1 torn tail (a writer stopped while appending: the next refurb-partial cuts it, no record is lost)" ]]
}

# cache_with_records DIR: a cache of 30 live records (2 epochs, no handover).
cache_with_records() {
	set -o pipefail
	refurb-evict -q -r 3 -o "$T/s.evict" "$IDX"
	refurb-plan -q -b 8 -e 0-1 "$T/s.evict" |
		refurb-partial -q --no-handover -c "$1" -p resize=48 "$IDX" |
		refurb-final -q -p crop=32 -o /dev/null
}

# first_length CACHE SEGMENT: the length of SEGMENT's first record.
first_length() {
	set -o pipefail
	refurb-dump "$1" | awk -F'\t' -v s="$(basename "$2" .seg)" '$1 == s { print $3; exit }'
}

@test "--verify after kill -9: a record cut by the end of its segment is a torn tail (exit 0, what it is, that the next run cuts it), not a bad record" {
	set -o pipefail
	T="$BATS_TEST_TMPDIR"
	cache_with_records "$T/c"
	seg=$(ls "$T"/c/*.seg | tail -n 1)
	# into the last record's payload, then into a record header
	len=$(first_length "$T/c" "$seg")
	size=$(stat -c %s "$seg")
	# what a writer killed in a pwritev leaves: a record's first bytes
	# after the last whole one (into the payload, or into the header)
	for part in $(( len - 100 )) 20; do
		head -c $(( 64 + part )) "$seg" | tail -c "$part" >> "$seg"
		run refurb-dump --verify "$T/c"
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "${lines[0]}" == "segment $(basename "$seg" .seg) offset "*": torn tail: "*"cut short by the end of the segment ("*" bytes): a writer stopped while appending; the next refurb-partial cuts it" ]]
		[[ "${lines[1]}" == "$T/c: "*" records checked, 0 problems, 1 torn tail (a writer stopped while appending: the next refurb-partial cuts it, no record is lost)" ]]
		truncate -s "$size" "$seg"
	done
	# and the next writer cuts it: nothing torn is left
	cache_with_records "$T/c"
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
	[[ "$output" == "$T/c: "*" records checked, 0 problems" ]]
}

@test "--verify: every bad record has its reason (a payload checksum, a header), exit 1" {
	set -o pipefail
	T="$BATS_TEST_TMPDIR"
	cache_with_records "$T/c"
	seg=$(ls "$T"/c/*.seg | tail -n 1)
	# a byte of the first record's payload, then of the second's header
	len=$(first_length "$T/c" "$seg")
	printf 'X' | dd of="$seg" bs=1 seek=200 conv=notrunc status=none
	run refurb-dump --verify "$T/c"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == "segment "*" offset 64: record payload checksum mismatch" ]]
	[[ "$output" != *"no reason given"* ]]
	printf 'X' | dd of="$seg" bs=1 seek=$(( 64 + len + 5 )) conv=notrunc status=none
	run refurb-dump --verify "$T/c"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "${lines[1]}" == "segment "*" offset $(( 64 + len )): "*"header"* ]]
	[[ "$output" != *"no reason given"* ]]
}

@test "--stats of a cache reads its tables, not its records: the bytes read do not grow with the records" {
	command -v strace > /dev/null || skip "strace is not installed"
	set -o pipefail
	T="$BATS_TEST_TMPDIR"
	cache_with_records "$T/c"
	refurb-dump --stats "$T/c" > "$T/stats"
	grep -q '^live         30 records, ' "$T/stats"
	grep -q '^compression  ratio ' "$T/stats"
	# the reads of the cache's files only (-P: not those of the loader or
	# ASan's runtime); LeakSanitizer cannot run under ptrace (make asan)
	paths=()
	for f in "$T"/c/*; do paths+=(-P "$f"); done
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -o "$T/trace" "${paths[@]}" -e trace=read,pread64 \
		refurb-dump --stats "$T/c" > /dev/null
	read_bytes=$(awk '/^[0-9]+ +p?read/ { sum += $NF } END { print sum + 0 }' "$T/trace")
	seg_bytes=$(cat "$T"/c/*.seg | wc -c)
	echo "read $read_bytes bytes; segments $seg_bytes bytes"
	# the checkpoint, the manifest, segment and a few record headers
	[ "$read_bytes" -gt 0 ]   # the trace saw the reads
	[ "$read_bytes" -lt $(( seg_bytes / 10 )) ]
}

@test "--verify: a segment gone after the checkpoint is a problem, unless its records died in one of the next two epochs" {
	set -o pipefail
	T="$BATS_TEST_TMPDIR"
	# epoch 0 of r = 3: its records die in epochs 1, 2 and 3, one segment
	# each; the checkpoint is epoch 0's
	refurb-evict -q -r 3 -o "$T/s.evict" "$IDX"
	refurb-plan -q -b 8 -e 0-0 "$T/s.evict" |
		refurb-partial -q --no-handover -c "$T/c" -p resize=48 "$IDX" > /dev/null
	refurb-dump "$T/c" | awk -F'\t' '!/^#/ { print $1, $6 }' | sort -u > "$T/segs"
	[ "$(wc -l < "$T/segs")" -eq 3 ]
	read -r seg1 d1 < <(awk '$2 == 1' "$T/segs")
	read -r seg2 d2 < <(awk '$2 == 2' "$T/segs")
	read -r seg3 d3 < <(awk '$2 == 3' "$T/segs")
	[ "$d1" -eq 1 ]
	[ "$d2" -eq 2 ]
	[ "$d3" -eq 3 ]
	# the segment dying in epoch 1 is deleted when epoch 1 begins; the
	# one dying in epoch 2 when epoch 2 begins, maybe before the
	# checkpoint of epoch 1's end (written in the background) landed
	cp "$T/c/$seg1.seg" "$T/keep1.seg"
	cp "$T/c/$seg2.seg" "$T/keep2.seg"
	rm "$T/c/$seg1.seg" "$T/c/$seg2.seg"
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"$T/c: "*" checkpoint entries are in segments deleted as their records died after the checkpoint (the next run drops them)"* ]]
	[[ "${lines[-1]}" == "$T/c: "*" records checked, 0 problems" ]]
	# one dying in epoch 3 cannot be gone yet: records were lost
	cp "$T/keep1.seg" "$T/c/$seg1.seg"
	cp "$T/keep2.seg" "$T/c/$seg2.seg"
	rm "$T/c/$seg3.seg"
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 1 ]
	[[ "$output" == *"segment $seg3 offset "*": segment is gone"* ]]
}
