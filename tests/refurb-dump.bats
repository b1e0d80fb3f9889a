#!/usr/bin/env bats
# refurb-dump on an index and on files it must refuse.

load helpers

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
