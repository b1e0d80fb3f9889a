#!/usr/bin/env bats
# scripts/plot-peers: the README's chart is drawn from the first measured
# table of doc/decode-bound.md (one run of scripts/bench-bound, every peer
# with FFCV among them), never from an earlier run's table kept below it.

load helpers
bats_require_minimum_version 1.5.0

# table VALUE [ROW...]: a two-column table as doc/decode-bound.md has it,
# every row at VALUE (ImageNet-sized) and VALUE/2 (the photos as they are)
table() {
	local v=$1 r
	shift
	echo "    row               img/CPU-s  x tv         row               img/CPU-s  x tv"
	for r in "$@"; do
		printf '    %-17s %9.1f  1.00         %-17s %9.1f  1.00\n' "$r" "$v" "$r" "$((v / 2))"
	done
}

ALL=(torchvision tv-simd dali ffcv refurb-r1-crop refurb-r1 refurb-r3 "decode-c (bound)")

@test "plot-peers: a page without FFCV's row is refused, naming the row" {
	table 400 torchvision tv-simd dali refurb-r1-crop refurb-r1 refurb-r3 "decode-c (bound)" \
		> "$BATS_TEST_TMPDIR/page.md"
	run -1 "$TOP/scripts/plot-peers" -o "$BATS_TEST_TMPDIR/p.png" "$BATS_TEST_TMPDIR/page.md"
	expect_fail 1 "plot-peers: $BATS_TEST_TMPDIR/page.md: no measured row ffcv in its first table"
	[ ! -e "$BATS_TEST_TMPDIR/p.png" ]
}

@test "plot-peers: FFCV's bar comes from the page's first table, not an earlier run's below it" {
	/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || skip "no matplotlib (scripts/deps --plot)"
	{
		echo "# a page"
		echo
		table 400 "${ALL[@]}"
		echo
		echo "An earlier run:"
		echo
		table 900 "${ALL[@]}"
	} > "$BATS_TEST_TMPDIR/page.md"
	cd "$BATS_TEST_TMPDIR"
	run -0 /usr/bin/python3 "$TOP/scripts/plot-peers" -o p.png page.md
	[[ "$output" == *"FFCV (no RandAugment)	ImageNet-sized photos (500 px)	400.0"* ]]
	[[ "$output" == *"FFCV (no RandAugment)	the photos as they are (to 1282 px)	200.0"* ]]
	[[ "$output" != *"900.0"* ]]
	run -0 file p.png
	[[ "$output" == *"PNG image"* ]]
}
