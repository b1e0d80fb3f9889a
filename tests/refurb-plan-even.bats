#!/usr/bin/env bats
# refurb-plan --even pad|drop: every shard of N gets the same samples and
# batches per epoch (what DistributedDataParallel needs), the union of the
# shards covers the index, the chain runs on such plans, bad input.

load helpers
bats_require_minimum_version 1.5.0

setup_file() {
	make_dataset "$BATS_FILE_TMPDIR/ds" 30 3
	refurb-index -q -o "$BATS_FILE_TMPDIR/ds.idx" "$BATS_FILE_TMPDIR/ds"
	# 30 samples in 4 shards: 8, 8, 7 and 7 (which ones is seeded)
	for k in 0 1 2 3; do
		refurb-evict -q -r 3 -s 7 --shard $k/4 \
			-o "$BATS_FILE_TMPDIR/s$k.evict" "$BATS_FILE_TMPDIR/ds.idx"
	done
}

setup() {
	set -o pipefail
	IDX="$BATS_FILE_TMPDIR/ds.idx"
	D="$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
}

# shard_sizes: the samples= of each shard's plan, in shard order.
shard_sizes() {
	set -o pipefail
	for k in 0 1 2 3; do
		refurb-plan -e 0 "$D/s$k.evict" | sed -n 1p | tr ' ' '\n' |
			sed -n 's/^samples=//p'
	done | tr '\n' ' '
}

@test "the shards of 30 samples over 4 differ by one: 8 8 7 7 in some order" {
	run shard_sizes
	[ "$status" -eq 0 ]
	[ "$(tr ' ' '\n' <<< "$output" | sort | tr -d '\n')" = 7788 ]
}

@test "--even pad: 8 samples and 2 batches of 5 per epoch in every shard; each id once, plus one pad in the shards of 7" {
	set -o pipefail
	for k in 0 1 2 3; do
		refurb-plan -b 5 -e 0-6 --even pad --shard $k/4 "$D/s$k.evict" > "$T/p$k"
		[ "$(head -n 1 "$T/p$k" | grep -c '^#refurb-plan 2 .* even=pad$')" -eq 1 ]
	done
	# every E line of every shard: 2 batches, 8 samples
	[ "$(cat "$T"/p? | awk '$1 == "E" { print $3, $4 }' | sort -u)" = "2 8" ]
	[ "$(cat "$T"/p? | grep -c '^E ')" -eq 28 ]
	# per shard and epoch: repeats are 1 in the shards of 7, 0 in those of 8
	for k in 0 1 2 3; do
		n=$(head -n 1 "$T/p$k" | tr ' ' '\n' | sed -n 's/^samples=//p')
		awk -v n="$n" '$1 == "B" { for (i = 6; i <= NF; i++) { split($i, f, ":"); c[$2 " " f[1]]++ } }
		     END { for (k in c) { split(k, x, " "); if (c[k] > 1) rep[x[1]]++; ids[x[1]]++ }
			   for (e in ids) if (ids[e] != n || rep[e] + 0 != (n == 7)) { print "epoch " e ": " ids[e] " ids, " rep[e] + 0 " repeats"; bad = 1 }
			   exit bad }' "$T/p$k"
	done
	# the union of the shards covers all 30 ids in every epoch
	cat "$T"/p? | awk '$1 == "B" { for (i = 6; i <= NF; i++) { split($i, f, ":"); u[$2 " " f[1]] = 1 } }
		END { for (k in u) { split(k, x, " "); c[x[1]]++ } for (e in c) if (c[e] != 30) { print e, c[e]; bad = 1 } exit bad }'
}

@test "--even pad repeats a cached sample (a hit) in the epochs that have hits" {
	for k in 0 1 2 3; do
		refurb-plan -b 5 -e 0-6 --even pad "$D/s$k.evict"
	done | awk '$1 == "B" && $2 > 0 { for (i = 6; i <= NF; i++) { if ((($2 " " $i) in seen) && $i !~ /:h$/) { print "pad " $i " in epoch " $2 " is a miss"; bad = 1 } seen[$2 " " $i] = 1 } }
		END { exit bad }'
}

@test "--even drop: 7 samples per epoch in every shard, a different one left out every epoch, none left out of every epoch" {
	set -o pipefail
	for k in 0 1 2 3; do
		refurb-plan -b 4 -e 0-8 --even drop "$D/s$k.evict" > "$T/p$k"
	done
	[ "$(cat "$T"/p? | awk '$1 == "E" { print $3, $4 }' | sort -u)" = "2 7" ]
	for k in 0 1 2 3; do
		# the ids each epoch leaves out of the shard
		refurb-plan -b 4 -e 0-8 "$D/s$k.evict" > "$T/full$k"
		awk 'FNR == 1 { f++ } $1 == "B" { for (i = 6; i <= NF; i++) { split($i, x, ":"); if (f == 1) all[$2 " " x[1]] = 1; else got[$2 " " x[1]] = 1 } }
		     END { for (k in all) if (!(k in got)) print k }' "$T/full$k" "$T/p$k" | sort -n > "$T/out$k"
		size=$(head -n 1 "$T/full$k" | tr ' ' '\n' | sed -n 's/^samples=//p')
		if [ "$size" -eq 8 ]; then
			[ "$(wc -l < "$T/out$k")" -eq 9 ]                     # one per epoch
			[ "$(cut -d' ' -f2 "$T/out$k" | sort -u | wc -l)" -ge 5 ] # not always the same
			# consecutive epochs leave out different samples
			awk '{ if (NR > 1 && $2 == prev) { print "epoch " $1 " again " $2; bad = 1 } prev = $2 } END { exit bad }' "$T/out$k"
		else
			[ ! -s "$T/out$k" ]
		fi
	done
}

@test "refurb-dump --stats of an even plan: the mode, samples per epoch, the shard's own size" {
	refurb-plan -b 5 -e 0-2 --even pad "$D/s2.evict" > "$T/p"
	refurb-dump --stats "$T/p" > "$T/stats"
	[ "$(grep -c '^even         pad (8 samples per epoch in every shard of 4)$' "$T/stats")" -eq 1 ]
	[ "$(grep -c '^samples      [78] (shard 2/4 of 30)$' "$T/stats")" -eq 1 ]
	[ "$(awk '$1 ~ /^[0-9]+$/ && NF == 7 { print $3 }' "$T/stats" | sort -u)" = 8 ]
	refurb-plan -b 5 -e 0-2 "$D/s2.evict" | refurb-dump --stats - > "$T/plain"
	[ "$(grep -c '^even' "$T/plain")" -eq 0 ]
}

@test "--even with one shard changes nothing but the header" {
	refurb-evict -q -r 2 -s 3 -o "$T/one.evict" "$IDX"
	refurb-plan -b 8 -e 0-3 "$T/one.evict" > "$T/a"
	refurb-plan -b 8 -e 0-3 --even drop "$T/one.evict" > "$T/b"
	diff <(tail -n +2 "$T/a") <(tail -n +2 "$T/b")
	[ "$(head -n 1 "$T/a" | grep -c '^#refurb-plan 1 ')" -eq 1 ]
	[ "$(head -n 1 "$T/b" | grep -c '^#refurb-plan 2 .* even=drop$')" -eq 1 ]
}

@test "the chain runs on padded plans: every shard's stream has the same frames, the pad's image is in it" {
	need_numpy
	for k in 0 1 2 3; do
		refurb-plan -b 5 -e 0-3 --even pad "$D/s$k.evict" |
			refurb-partial -q -c "$T/cache$k" --pipeline resize=32 "$IDX" |
			refurb-final -q --pipeline crop=24 -o "$T/st$k"
	done
	for k in 0 1 2 3; do
		refurb-dump "$T/st$k" | awk '$3 == "BATCH" { n++ } END { print n }'
	done | sort -u > "$T/frames"
	[ "$(cat "$T/frames")" = 8 ]
	PYTHONPATH="$TOP/python" /usr/bin/python3 - "$T" <<'PY'
import sys, collections
from refurb_stream import open_stream
seen = collections.Counter()
for k in range(4):
    for images, labels, ids, epoch, step in open_stream(f"{sys.argv[1]}/st{k}"):
        assert images.shape[0] == len(ids)
        for i in ids:
            seen[(epoch, int(i))] += 1
for e in range(4):
    ids = {i for (ep, i) in seen if ep == e}
    assert ids == set(range(30)), (e, sorted(ids))
    assert sum(c for (ep, i), c in seen.items() if ep == e) == 32, e
PY
}

@test "bad --even: usage error; a damaged even= in a plan: exit 1 naming it" {
	run refurb-plan --even half "$D/s0.evict"
	expect_fail 2 "refurb-plan: --even: 'half' is not none, pad or drop"
	run refurb-plan --even "$D/s0.evict"
	[ "$status" -eq 2 ]
	refurb-plan -b 5 -e 0 --even pad "$D/s2.evict" | sed '1s/even=pad/even=odd/' > "$T/p"
	run refurb-partial -q -c "$T/c" --pipeline resize=32 "$IDX" < "$T/p"
	expect_fail 1 "refurb-partial: (stdin): line 1: unknown even 'odd'"
	refurb-plan -b 5 -e 0 --even pad "$D/s2.evict" | sed '1s/#refurb-plan 2/#refurb-plan 1/' > "$T/p1"
	run refurb-dump "$T/p1"
	[ "$status" -eq 1 ]
	[[ "$output" == *"key 'even' in a version 1 header"* ]]
	refurb-plan -b 5 -e 0 --even pad "$D/s2.evict" | sed '1s/#refurb-plan 2/#refurb-plan 3/' > "$T/p3"
	run refurb-final -q --pipeline crop=24 -o "$T/st" < "$T/p3"
	expect_fail 1 "refurb-final: (stdin): line 1: plan format version 3 (this build reads versions 1 to 2)"
}
