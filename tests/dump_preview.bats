#!/usr/bin/env bats
# refurb-dump --preview (bin/dump_preview.c).  Skipped until refurb-dump's
# main hands --preview to dump_preview(); tests/unit/test_dump_preview.c
# covers the same ground in-process meanwhile.

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
	J="$TOP/tests/data/jpeg/prog420.jpg"
	G="$TOP/tests/data/jpeg/gray.jpg"
}

@test "--preview writes a JPEG contact sheet" {
	run refurb-dump --preview 'rrcrop=24x32,flip' -n 3 -s 7 -o "$T/s.jpg" "$J" "$G"
	[ "$status" -eq 0 ]
	[ "$(head -c 3 "$T/s.jpg" | od -An -tx1 | tr -d ' ')" = "ffd8ff" ]
}

@test "--preview writes to stdout when it is not a terminal" {
	set -o pipefail
	refurb-dump --preview flip -n 2 "$J" | cat > "$T/p.jpg"
	[ "$(head -c 3 "$T/p.jpg" | od -An -tx1 | tr -d ' ')" = "ffd8ff" ]
}

@test "a malformed spec is a usage error pointing at the column" {
	run refurb-dump --preview 'resize=40,blur' -o "$T/s.jpg" "$J"
	expect_fail 2 "refurb-dump: bad pipeline spec at column 11: unknown filter"
	[ "${lines[1]}" = "  resize=40,blur" ]
	[ "${lines[2]}" = "            ^" ]
}

@test "no image is a usage error" {
	run refurb-dump --preview flip -o "$T/s.jpg"
	expect_fail 2 "refurb-dump: no image given"
}

@test "an unreadable image names the file" {
	run refurb-dump --preview flip -o "$T/s.jpg" "$T/missing.jpg"
	expect_fail 1 "refurb-dump: $T/missing.jpg:"
}

@test "an image the pipeline cannot crop names the file" {
	run refurb-dump --preview crop=500 -o "$T/s.jpg" "$J"
	expect_fail 1 "refurb-dump: $J: crop"
}

@test "-o names another format than JPEG: refused, nothing written" {
	run refurb-dump --preview flip -n 2 -o "$T/s.ppm" "$J"
	expect_fail 2 "refurb-dump: -o $T/s.ppm: the preview is a JPEG contact sheet: name it .jpg or .jpeg (other formats are not written)"
	[ ! -e "$T/s.ppm" ]
	run refurb-dump --preview flip -n 2 -o "$T/s.JPEG" "$J"
	[ "$status" -eq 0 ]
	[ -s "$T/s.JPEG" ]
}
