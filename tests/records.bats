#!/usr/bin/env bats
# tests/check-records: the byte offsets of every record of man section 5
# are written once, in its group's format file (one encoder and one
# decoder per record); no other file of lib/ or bin/ calls the
# little-endian field helpers.  On this tree, and on a made-up one.

load helpers

# src FILE CODE: write CODE into the made-up tree's FILE
src() {
	mkdir -p "$(dirname "$fake/$1")"
	printf '%s\n' "$2" > "$fake/$1"
}

setup() {
	fake="$BATS_TEST_TMPDIR/src"
	src lib/index/index_format.c 'void f(unsigned char *p) { rfb_put_le32(p + 8, 1); }'
	src lib/index/index_read.c '/* rfb_get_le32(d + 16) in a comment is fine */ int g(void);'
	src bin/refurb-x.c 'int main(void) { return 0; }'
}

@test "check-records: no file of this tree outside the format files reads bare offsets" {
	run "$TOP/tests/check-records"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "${lines[-1]}" == *", 0 problems" ]] || false
}

@test "check-records: a made-up tree whose calls are in a format file passes" {
	run "$TOP/tests/check-records" "$fake"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "check-records: 3 files, 1 calls in format files, 0 problems" ]
}

@test "check-records: a reader at bare offsets fails, naming the file" {
	src lib/index/index_read.c 'unsigned g(const unsigned char *d) { return rfb_get_le32(d + 16) + rfb_get_le64 (d + 8); }'
	run "$TOP/tests/check-records" "$fake"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "offsets: lib/index/index_read.c: 2 calls of rfb_get/put_le (encode and decode the record in its group's format file)" ]
	[ "${lines[-1]}" = "check-records: 3 files, 1 calls in format files, 1 problems" ]
}

@test "check-records: a program writing a record field by field fails" {
	src bin/refurb-x.c 'int main(void) { unsigned char b[8]; rfb_put_lef32(b, 1.0f); return 0; }'
	run "$TOP/tests/check-records" "$fake"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "offsets: bin/refurb-x.c: 1 calls of rfb_get/put_le (encode and decode the record in its group's format file)" ]
}

@test "same-bytes: a build writes every file of the chain the same twice" {
	run "$TOP/scripts/same-bytes" "$BUILD_DIR/bin" "$BUILD_DIR/bin" "$BATS_TEST_TMPDIR/work"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "IDENTICAL" ]
	[ -s "$BATS_TEST_TMPDIR/work/new/cache/records" ]
	[ -s "$BATS_TEST_TMPDIR/work/new/stream" ]
}

@test "same-bytes: a build that writes another schedule fails, naming the files" {
	bin="$BATS_TEST_TMPDIR/bin"
	mkdir -p "$bin"
	for p in refurb-index refurb-plan refurb-partial refurb-final; do
		ln -s "$BUILD_DIR/bin/$p" "$bin/$p"
	done
	printf '#!/bin/sh\nexec "%s/bin/refurb-evict" "$@" --policy refcount\n' \
		"$BUILD_DIR" > "$bin/refurb-evict"
	chmod +x "$bin/refurb-evict"
	run "$TOP/scripts/same-bytes" "$BUILD_DIR/bin" "$bin"
	[ "$status" -eq 1 ]
	[[ "$output" == *"/old/train.evict and "*"/new/train.evict differ"* ]] || false
	[[ "$output" != *IDENTICAL* ]] || false
}
