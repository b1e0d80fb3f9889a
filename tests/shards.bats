#!/usr/bin/env bats
# scripts/run-shards: N shard pipelines side by side; their plans and
# streams partition every epoch exactly, each sample in one fixed shard.

load helpers
# a failure anywhere in a pipeline fails it (tests/lint-bats)
set -o pipefail

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	make_dataset ds 60 3
	refurb-index -q -o train.idx ds
}

setup() {
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	RUN="$TOP/scripts/run-shards"
}

# ids_of PLAN: "epoch<TAB>id" of every sample of a plan, via refurb-dump
ids_of() {
	refurb-dump "$1" | awk -F'\t' '!/^#/ { print $1 "\t" $3 }'
}

@test "--help, usage errors" {
	run "$RUN" --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "scripts/run-shards"* ]]
	run "$RUN"
	expect_fail 2 "run-shards: give N and INDEX"
	run "$RUN" 0 train.idx
	expect_fail 2 "run-shards: N must be a positive number"
	run "$RUN" --bogus 2 train.idx
	expect_fail 2 "run-shards: unknown option --bogus"
	run "$RUN" 2 "$T/missing.idx"
	expect_fail 1 "run-shards: $T/missing.idx: cannot read the index"
	run "$RUN" --check-only -o "$T/empty" 2 train.idx
	expect_fail 1 "run-shards: $T/empty: no shard outputs to check"
}

@test "3 shards: plans and streams partition every epoch, shards static" {
	need_numpy
	run "$RUN" --check -r 3 -e 5 -o "$T/o" 3 train.idx
	[ "$status" -eq 0 ]
	[[ "$output" == *"plan: the 3 shards partition each of the 5 epochs exactly (60 samples"* ]]
	[[ "$output" == *"stream: the 3 shards partition each of the 5 epochs exactly (60 samples"* ]]
	# independently of the script's check: every epoch of the union is 0..59
	for k in 0 1 2; do ids_of "$T/o/shard$k.plan" | sed "s/\$/\t$k/"; done > "$T/all.tsv"
	for e in 0 1 2 3 4; do
		diff <(awk -F'\t' -v e=$e '$1 == e { print $2 }' "$T/all.tsv" | sort -n) <(seq 0 59)
	done
	# a sample's shard never changes; shards hold 20 samples each
	[ "$(cut -f2,3 "$T/all.tsv" | sort -u | wc -l)" -eq 60 ]
	[ "$(awk -F'\t' '$1 == 0' "$T/all.tsv" | cut -f3 | sort | uniq -c | awk '{print $1}' | sort -u)" = 20 ]
	# each shard has its own cache, and balanced misses within the shard
	for k in 0 1 2; do [ -d "$T/o/cache$k" ]; done
	[[ "$output" == *"shard 1 epoch 1: 20 samples, 6 misses"* || "$output" == *"shard 1 epoch 1: 20 samples, 7 misses"* ]]
}

@test "FIFO mode: each stream read by the Python reader as it is written" {
	need_numpy
	run "$RUN" --check --fifo -e 3 -o "$T/f" 2 train.idx
	[ "$status" -eq 0 ]
	[[ "$output" == *"stream: the 2 shards partition each of the 3 epochs exactly"* ]]
	grep -q '^ok: 3 epochs' "$T/f/shard0.check"
	grep -q '^ok: 3 epochs' "$T/f/shard1.check"
	[ ! -e "$T/f/shard0.stream" ]
}

@test "the check fails when a sample is in two shards" {
	need_numpy
	"$RUN" -e 2 -o "$T/o" 2 train.idx > /dev/null 2>&1
	a=$(ids_of "$T/o/shard0.plan" | sed -n 1p | cut -f2)
	b=$(ids_of "$T/o/shard1.plan" | sed -n 1p | cut -f2)
	sed -i "0,/^B 0 0 0 \([0-9]*\) $b:/s//B 0 0 0 \1 $a:/" "$T/o/shard1.plan"
	run "$RUN" --check-only -e 2 -o "$T/o" 2 train.idx
	[ "$status" -eq 1 ]
	[[ "$output" == *"plan: epoch	id 0	$a appears 2 times"* ]]
	[[ "$output" == *"run-shards: plan: the shards do NOT partition the epochs"* ]]
	[[ "$output" == *"run-shards: stream: the 2 shards partition each of the 2 epochs exactly"* ]]
}
