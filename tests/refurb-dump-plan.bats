#!/usr/bin/env bats
# refurb-dump on an eviction schedule and on a plan stream.

load helpers
bats_require_minimum_version 1.5.0
# a failure anywhere in a pipeline fails it (tests/lint-bats)
set -o pipefail

setup_file() {
	make_dataset "$BATS_FILE_TMPDIR/ds" 30 3
	make_dataset "$BATS_FILE_TMPDIR/other" 31 3
	refurb-index -q -o "$BATS_FILE_TMPDIR/ds.idx" "$BATS_FILE_TMPDIR/ds"
	refurb-index -q -o "$BATS_FILE_TMPDIR/other.idx" "$BATS_FILE_TMPDIR/other"
	refurb-evict -q -r 3 -s 7 -o "$BATS_FILE_TMPDIR/s.evict" \
		"$BATS_FILE_TMPDIR/ds.idx"
	refurb-plan -b 8 -e 0-6 -o "$BATS_FILE_TMPDIR/p.plan" \
		"$BATS_FILE_TMPDIR/s.evict"
}

setup() {
	IDX="$BATS_FILE_TMPDIR/ds.idx"
	S="$BATS_FILE_TMPDIR/s.evict"
	P="$BATS_FILE_TMPDIR/p.plan"
	T="$BATS_TEST_TMPDIR"
}

@test "schedule as TSV: id and phase per sample of the shard" {
	run refurb-dump "$S"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 30 ]
	awk -F'\t' 'NF != 2 || $1 != NR - 1 || $2 < 0 || $2 >= 3 { exit 1 }' <<< "$output"
	# 10 samples per phase: 30 / 3
	[ "$(cut -f2 <<< "$output" | sort | uniq -c | awk '{ print $1 }' | sort -u)" = 10 ]
	refurb-evict -q -r 2 --shard 1/4 -o "$T/s" "$IDX"
	[ "$(refurb-dump "$T/s" | wc -l)" -eq 8 ]
}

@test "schedule --stats: parameters and phase histogram" {
	run refurb-dump --stats "$S"
	[ "$status" -eq 0 ]
	[[ "$output" == *"samples      30"* ]]
	[[ "$output" == *"reuse        3"* ]]
	[[ "$output" == *"policy       balanced"* ]]
	[[ "$output" == *"seed         7"* ]]
	[[ "$output" == *"misses       30 in epoch 0, then 10 in every epoch"* ]]
	grep -q "^0	10	1, 4, 7, ...$" <<< "$output"
	grep -q "^2	10	3, 6, 9, ...$" <<< "$output"
	id=$(head -1 "$P" | sed 's/.* schedule=\([0-9a-f]*\) .*/\1/')
	[[ "$output" == *"schedule     $id"* ]]
	refurb-evict -q -r 4 --policy refcount -o "$T/s" "$IDX"
	run refurb-dump -S "$T/s"
	[ "$status" -eq 0 ]
	[[ "$output" == *"misses       30 in epochs 0, 4, 8, ..., none"* ]]
	[ "$(grep -c '^[0-9]' <<< "$output")" -eq 1 ]
	grep -q "^3	30	4, 8, 12, ...$" <<< "$output"
}

@test "plan as TSV: epoch, step, sample id, hit|miss in plan order" {
	run refurb-dump "$P"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq $((30 * 7)) ]
	[ "${lines[0]}" = "$(sed -n 2p "$P" | awk '{ split($6, f, ":");
		print "0\t0\t" f[1] "\t" (f[2] ~ /^m/ ? "miss" : "hit") }')" ]
	awk -F'\t' 'NF != 4 || ($4 != "hit" && $4 != "miss") { exit 1 }
		seen[$1 "/" $3]++ > 0 { exit 1 }' <<< "$output"
	# misses per epoch agree with the plan's epoch lines
	diff <(awk -F'\t' '$4 == "miss" { m[$1]++ } END { for (e in m) print e, m[e] }' <<< "$output" | sort -n) \
	     <(awk '$1 == "E" { print $2, $5 }' "$P")
}

@test "plan TSV from stdin, and of a dropped batch" {
	refurb-plan -b 7 -e 0-1 --drop-last "$S" > "$T/d"
	run refurb-dump "$T/d"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 60 ]
	[[ "${lines[28]}" == "0	4	"* ]]
}

@test "plan --stats: misses per batch per epoch and uses per record" {
	run refurb-dump --stats "$P"
	[ "$status" -eq 0 ]
	[[ "$output" == *"samples      30 (shard 0/1 of 30)"* ]]
	[[ "$output" == *"epochs       0-6"* ]]
	# epoch 0: all 8 samples of each full batch miss; later 10 of 30
	grep -q "^0	4	30	30	8	8	0.00$" <<< "$output"
	grep -q "^3	4	30	10	2	3	0.47$" <<< "$output"
	# the records of epoch 0 die after 1, 2 or 3 uses (10 each), those
	# of epochs 1-3 after exactly 3; those of epochs 4, 5, 6 are alive
	# at the end with 3, 2 and 1 uses
	grep -q "^1	20	10	10$" <<< "$output"
	grep -q "^2	20	10	10$" <<< "$output"
	grep -q "^3	50	40	10$" <<< "$output"
	! grep -q "^>" <<< "$output"
}

@test "plan --stats with the index: miss pixels per batch" {
	run refurb-dump --stats -i "$IDX" "$P"
	[ "$status" -eq 0 ]
	grep -q "px_min	px_max	px_mean	px_cv" <<< "$output"
	[ "$(awk -F'\t' '/^[0-6]\t/ && NF == 11' <<< "$output" | wc -l)" -eq 7 ]
	refurb-plan -b 10 -e 0-3 --balance pixels -i "$IDX" "$S" > "$T/b"
	refurb-plan -b 10 -e 0-3 "$S" > "$T/u"
	cv() { refurb-dump -S -i "$IDX" "$1" | awk -F'\t' '$1 == 0 { print $11 }'; }
	# (assigned first: the status of a $(...) in an argument is lost)
	b=$(cv "$T/b")
	u=$(cv "$T/u")
	[ -n "$b" ]
	[ -n "$u" ]
	awk -v b="$b" -v u="$u" 'BEGIN { exit !(b < u / 5) }'
}

@test "plan --stats of a resumed plan leaves out older records" {
	refurb-plan -b 8 -e 4-6 "$S" > "$T/r"
	run refurb-dump --stats "$T/r"
	[ "$status" -eq 0 ]
	[[ "$output" == *"hits of records written before epoch 4 are not counted"* ]]
}

@test "plan with the wrong index: exit 1" {
	run refurb-dump --stats -i "$BATS_FILE_TMPDIR/other.idx" "$P"
	expect_fail 1 "refurb-dump: $BATS_FILE_TMPDIR/other.idx: not the index of this plan"
}

@test "truncated or damaged plans: exit 1 with the line" {
	head -n 10 "$P" > "$T/cut"
	run refurb-dump "$T/cut"
	[ "$status" -eq 1 ]
	[[ "$output" == *"refurb-dump: $T/cut: ends in epoch 1, batch 4"* ]]
	head -c 300 "$P" > "$T/mid"
	run refurb-dump -S "$T/mid"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$T/mid: line "*" has no newline (truncated stream)"* ]]
	sed '3s/:m/:x/' "$P" > "$T/bad"
	run refurb-dump "$T/bad"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$T/bad: line 3: column "*"expected 'h' or 'm' after ':'"* ]]
	sed '1s/#refurb-plan 1/#refurb-plan 9/' "$P" > "$T/v9"
	run refurb-dump "$T/v9"
	expect_fail 1 "refurb-dump: $T/v9: line 1: plan format version 9"
}

@test "truncated or damaged schedule: exit 1" {
	head -c 100 "$S" > "$T/short"
	run refurb-dump "$T/short"
	expect_fail 1 "refurb-dump: $T/short: truncated: 100 bytes, expected 244"
	{ printf 'RFBSCHD\003'; tail -c +9 "$S"; } > "$T/v3"
	run refurb-dump -S "$T/v3"
	expect_fail 1 "refurb-dump: $T/v3: schedule format version 3"
}
