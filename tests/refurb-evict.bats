#!/usr/bin/env bats
# refurb-evict: the schedule file, its determinism, shards, bad input.

load helpers
bats_require_minimum_version 1.5.0
# a failure anywhere in a pipeline fails it (tests/lint-bats)
set -o pipefail

setup_file() {
	make_dataset "$BATS_FILE_TMPDIR/ds" 30 3
	refurb-index -q -o "$BATS_FILE_TMPDIR/ds.idx" "$BATS_FILE_TMPDIR/ds"
}

setup() {
	IDX="$BATS_FILE_TMPDIR/ds.idx"
	T="$BATS_TEST_TMPDIR"
}

# ids of a schedule, one per line, through the plan in schedule order
ids_of() {
	refurb-plan --shuffle none -b 65536 "$1" | awk '$1 == "B" {
		for (i = 6; i <= NF; i++) { split($i, f, ":"); print f[1] } }'
}

@test "--help and --version" {
	run refurb-evict --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Usage: refurb-evict"* ]]
	[[ "$output" == *"--policy"* && "$output" == *"--shard K/N"* ]]
	run refurb-evict --version
	[ "$status" -eq 0 ]
	[[ "$output" == "refurb-evict (refurb) "* ]]
}

@test "writes 64 + 6n bytes with the magic, and a summary on stderr" {
	run --separate-stderr refurb-evict -r 3 -s 7 -o "$T/s" "$IDX"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[[ "$stderr" == "refurb-evict: shard 0/1: 30 of 30 samples, r=3 balanced, 10 to 10 misses per epoch"* ]]
	[ "$(stat -c %s "$T/s")" -eq $((64 + 6 * 30)) ]
	[ "$(head -c 8 "$T/s" | od -An -c | tr -d ' ')" = 'RFBSCHD001' ]
	run --separate-stderr refurb-evict -q -r 3 -o "$T/s" "$IDX"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
}

@test "stdout and -o give the same bytes; same inputs, same bytes" {
	refurb-evict -q -r 3 -s 7 "$IDX" > "$T/a"
	refurb-evict -q -r 3 -s 7 -o "$T/b" "$IDX"
	refurb-evict -q --reuse 3 --seed 7 --policy balanced --shard 0/1 "$IDX" > "$T/c"
	cmp "$T/a" "$T/b"
	cmp "$T/a" "$T/c"
	refurb-evict -q -r 3 -s 8 "$IDX" > "$T/d"
	run -1 cmp -s "$T/a" "$T/d"
	refurb-evict -q -r 3 -s 7 --policy refcount "$IDX" > "$T/e"
	run -1 cmp -s "$T/a" "$T/e"
}

@test "shards partition the dataset, whatever r" {
	for k in 0 1 2 3; do
		refurb-evict -q -r 2 -s 5 --shard $k/4 "$IDX" > "$T/s$k"
		ids_of "$T/s$k" > "$T/ids$k"
		n=$(wc -l < "$T/ids$k")
		[ "$n" -eq 7 ] || [ "$n" -eq 8 ]
	done
	[ "$(cat "$T"/ids? | sort -n | uniq | wc -l)" -eq 30 ]
	[ "$(cat "$T"/ids? | wc -l)" -eq 30 ]
	refurb-evict -q -r 5 -s 5 --policy refcount --shard 2/4 "$IDX" > "$T/r5"
	ids_of "$T/r5" | cmp - "$T/ids2"
}

@test "the schedule reads back from stdin" {
	refurb-evict -q -r 2 "$IDX" > "$T/s"
	run refurb-plan -b 8 - < "$T/s"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "#refurb-plan 1 "* ]]
}

@test "r = 0, junk numbers, unknown policy: usage errors" {
	run refurb-evict -r 0 "$IDX"
	expect_fail 2 "refurb-evict: --reuse: 0 is out of range"
	run refurb-evict -r 3x "$IDX"
	expect_fail 2 "refurb-evict: --reuse: '3x' is not a number"
	run refurb-evict -r 65536 "$IDX"
	expect_fail 2 "refurb-evict: --reuse: 65536 is out of range"
	run refurb-evict -s -1 "$IDX"
	expect_fail 2 "refurb-evict: --seed: '-1' is not a number"
	run refurb-evict --policy lru "$IDX"
	expect_fail 2 "refurb-evict: --policy: 'lru' is not balanced or refcount"
	run refurb-evict --bogus "$IDX"
	[ "$status" -eq 2 ]
}

@test "bad shard specs: usage errors" {
	run refurb-evict --shard 3/2 "$IDX"
	expect_fail 2 "refurb-evict: --shard: '3/2': K must be less than N"
	run refurb-evict --shard 2/2 "$IDX"
	expect_fail 2 "refurb-evict: --shard: '2/2'"
	run refurb-evict --shard 1 "$IDX"
	expect_fail 2 "refurb-evict: --shard: '1' is not K/N"
	run refurb-evict --shard 0/0 "$IDX"
	expect_fail 2 "refurb-evict: --shard: 0 is out of range"
	run refurb-evict --shard 0/31 -o "$T/x" "$IDX"
	expect_fail 2 "refurb-evict: --shard 0/31: $IDX has only 30 samples"
	[ ! -e "$T/x" ]
}

@test "no index, two indexes: usage errors" {
	run refurb-evict
	expect_fail 2 "refurb-evict: no index given"
	run refurb-evict "$IDX" "$IDX"
	expect_fail 2 "refurb-evict: give one index"
}

@test "missing, truncated, foreign or future index: exit 1 naming the file" {
	run refurb-evict "$T/nope.idx"
	expect_fail 1 "refurb-evict: $T/nope.idx: "
	head -c 100 "$IDX" > "$T/short.idx"
	run refurb-evict -o "$T/x" "$T/short.idx"
	expect_fail 1 "refurb-evict: $T/short.idx: "
	[[ "$output" == *bytes* ]]
	[ ! -e "$T/x" ]
	refurb-evict -q "$IDX" > "$T/s.evict"
	run refurb-evict "$T/s.evict"
	expect_fail 1 "refurb-evict: $T/s.evict: "
	{ printf 'RFBINDX\003'; tail -c +9 "$IDX"; } > "$T/v3.idx"
	run refurb-evict "$T/v3.idx"
	expect_fail 1 "refurb-evict: $T/v3.idx: "
	[[ "$output" == *version* ]]
}

@test "binary output to a terminal is refused unless --force" {
	command -v script >/dev/null || skip "script(1) is not installed"
	# (SHELL set: script runs the command with the user's $SHELL)
	run env SHELL=/bin/sh script -qec "refurb-evict '$IDX'" /dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *"refusing to write binary data to a terminal"* ]]
	# --force: the schedule goes to the terminal (script -e exits with
	# refurb-evict's status)
	SHELL=/bin/sh script -qec "refurb-evict -q --force '$IDX'" /dev/null > "$T/tty.out"
	grep -qa '^RFBSCHD' "$T/tty.out"
}
