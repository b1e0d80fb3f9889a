#!/usr/bin/env bats
# refurb-plan: the plan stream, its invariants (checked with awk, as a
# user would), determinism, the epoch-range tail, --diversity, bad input.

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
}

setup() {
	IDX="$BATS_FILE_TMPDIR/ds.idx"
	S="$BATS_FILE_TMPDIR/s.evict"
	T="$BATS_TEST_TMPDIR"
}

# check_plan < PLAN: every invariant of refurb(7) that the text shows.
# Prints nothing and succeeds, or prints what is wrong.
check_plan() {
	awk '
	BEGIN { lo = 1e9; hi = -1 }
	NR == 1 {
		for (i = 3; i <= NF; i++) { split($i, kv, "="); h[kv[1]] = kv[2] }
		n = h["samples"]; r = h["reuse"]; b = h["batch"]; next
	}
	$1 == "B" || $1 == "D" {
		ep = $2
		if ($5 != NF - 5) { print "count " $5 " but " NF - 5 " samples: " $0; bad = 1 }
		bm = 0
		for (i = 6; i <= NF; i++) {
			split($i, f, ":")
			if (f[1] in seen) { print "id " f[1] " twice in epoch " ep; bad = 1 }
			seen[f[1]] = 1; c++
			if (f[2] ~ /^m/) bm++
		}
		m += bm
		if ($5 == b) { if (bm < lo) lo = bm; if (bm > hi) hi = bm }
		next
	}
	$1 == "E" {
		if (c != n || $4 != n) { print "epoch " $2 ": " c " samples, not " n; bad = 1 }
		if ($5 != m) { print "epoch " $2 ": E says " $5 " misses, batches " m; bad = 1 }
		fl = int(n / r); cl = fl + (n % r != 0)
		if ($2 == 0 && m != n) { print "epoch 0 has hits"; bad = 1 }
		if ($2 > 0 && h["policy"] == "balanced" && (m < fl || m > cl)) {
			print "epoch " $2 ": " m " misses, not " fl " or " cl; bad = 1 }
		if (h["policy"] == "refcount" && m != ($2 % r == 0 ? n : 0)) {
			print "refcount epoch " $2 ": " m " misses"; bad = 1 }
		if (h["shuffle"] == "cache-aware" && hi >= 0 && hi - lo > 1) {
			print "epoch " $2 ": full batches have " lo " to " hi " misses"; bad = 1 }
		epochs++; delete seen; lo = 1e9; hi = -1; m = 0; c = 0
	}
	END { if (epochs == 0) { print "no epochs"; bad = 1 } exit bad }'
}

@test "--help and --version" {
	run refurb-plan --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Usage: refurb-plan"* ]]
	[[ "$output" == *"--diversity"* && "$output" == *"--balance"* ]]
	run refurb-plan -V
	[ "$status" -eq 0 ]
	[[ "$output" == "refurb-plan (refurb) "* ]]
}

@test "header line carries what the plan was made from" {
	run refurb-plan -b 8 -e 2-4 "$S"
	[ "$status" -eq 0 ]
	h="${lines[0]}"
	[[ "$h" == "#refurb-plan 1 schedule="* ]]
	for kv in samples=30 total=30 reuse=3 policy=balanced evict-seed=7 \
		seed=7 batch=8 batches=4 epochs=2-4 shuffle=cache-aware \
		balance=none drop-last=0 shard=0/1; do
		[[ " $h " == *" $kv "* ]] || { echo "missing $kv in $h"; false; }
	done
	id=$(refurb-dump --stats "$IDX" | awk '$1 == "identity" { print $2 }')
	[[ "$h" == *" index=$id "* ]]
	[ "${lines[1]}" = "$(grep -m1 '^B 2 0 8 8 ' <<< "$output")" ]
	[ "$(grep -c '^E' <<< "$output")" -eq 3 ]
}

@test "invariants over many (N, r, batch size, seed, shards, shuffle)" {
	for n in 30; do
	for r in 1 2 3 7; do
	for b in 1 4 7 30 64; do
	for shard in 0/1 1/3 3/4; do
	for policy in balanced refcount; do
		refurb-evict -q -r $r -s $b --policy $policy --shard $shard \
			-o "$T/s" "$IDX"
		for shuffle in cache-aware random; do
			refurb-plan -b $b -e 0-8 -s $r --shuffle $shuffle "$T/s" \
				> "$T/p"
			check_plan < "$T/p" || {
				echo "r=$r b=$b shard=$shard $policy $shuffle"
				false
			}
		done
	done; done; done; done; done
}

@test "the awk checker itself catches broken plans" {
	refurb-plan -b 8 -e 0-3 "$S" > "$T/p"
	check_plan < "$T/p"
	# a sample twice in one epoch
	sed '2s/ \([0-9]*\):m\([0-9]*\) / \1:m\2 \1:m\2 /; 2s/^B 0 0 0 8/B 0 0 0 9/' "$T/p" > "$T/q"
	run -1 check_plan < "$T/q"
	# all misses of epoch 1 in its first batches
	refurb-plan -b 8 -e 0-3 --shuffle none "$S" |
		sed 's/shuffle=none/shuffle=cache-aware/' > "$T/q"
	run -1 check_plan < "$T/q"
	# an epoch short of a batch
	sed '/^B 2 1 /d' "$T/p" > "$T/q"
	run -1 check_plan < "$T/q"
}

@test "r = 1: every epoch all misses; r beyond the epochs: still balanced" {
	refurb-evict -q -r 1 -o "$T/s1" "$IDX"
	refurb-plan -b 8 -e 0-4 "$T/s1" > "$T/p"
	check_plan < "$T/p"
	[ "$(grep -c ':h' "$T/p")" -eq 0 ]
	[ "$(awk '$1 == "E" { print $5 }' "$T/p" | sort -u)" = 30 ]
	refurb-evict -q -r 20 -o "$T/s20" "$IDX"
	refurb-plan -b 8 -e 0-3 "$T/s20" > "$T/p"
	check_plan < "$T/p"
	[ "$(awk '$1 == "E" && $2 > 0 { print $5 }' "$T/p" | sort -u | tr '\n' ' ')" = "1 2 " ]
}

@test "refcount: all-miss epochs at 0, r, 2r" {
	refurb-evict -q -r 3 --policy refcount -o "$T/s" "$IDX"
	refurb-plan -b 8 -e 0-7 "$T/s" > "$T/p"
	[ "$(awk '$1 == "E" { printf "%s:%s ", $2, $5 }' "$T/p")" = \
	  "0:30 1:0 2:0 3:30 4:0 5:0 6:30 7:0 " ]
}

@test "misses say when their record dies" {
	refurb-plan -b 30 -e 0-4 "$S" > "$T/p"
	# after epoch 0, a miss in epoch e dies in e + r
	[ "$(awk '$1 == "B" && $2 > 0 { for (i = 6; i <= NF; i++)
		if ($i ~ /:m/) { split($i, f, ":m"); print f[2] - $2 } }' "$T/p" | sort -u)" = 3 ]
	# epoch 0: phase + 1, so 1 to 3, and the sample is a miss then
	awk '$1 == "B" { for (i = 6; i <= NF; i++) if ($i ~ /:m/) {
		split($i, f, ":m"); if ($2 == 0) die[f[1]] = f[2];
		else if (f[1] in die && die[f[1]] > 0) {
			if (die[f[1]] != $2) { print "bad " f[1]; exit 1 }
			die[f[1]] = 0 } } }' "$T/p"
}

@test "cache-aware batches have even miss counts, random ones do not" {
	refurb-evict -q -r 4 -o "$T/s" "$IDX"
	refurb-plan -b 5 -e 1-12 "$T/s" > "$T/p"
	check_plan < "$T/p"
	refurb-plan -b 5 -e 1-12 --shuffle random "$T/s" > "$T/q"
	spread=$(awk '$1 == "B" { m = gsub(/:m/, ""); k = $2
		if (!(k in lo) || m < lo[k]) lo[k] = m; if (m > hi[k]) hi[k] = m }
		END { for (k in lo) if (hi[k] - lo[k] > s) s = hi[k] - lo[k]; print s }' "$T/q")
	[ "$spread" -gt 1 ]
}

@test "none keeps the schedule order" {
	run refurb-plan -b 4 --shuffle none "$S"
	[ "$status" -eq 0 ]
	[[ "${lines[1]}" =~ ^"B 0 0 0 4 0:m"[123]" 1:m"[123]" 2:m"[123]" 3:m"[123]$ ]]
	[ "$(refurb-plan -b 7 -e 3 --shuffle none "$S" | awk '$1 == "B" {
		for (i = 6; i <= NF; i++) { split($i, f, ":"); printf "%s ", f[1] } }')" = \
	  "$(seq -s ' ' 0 29) " ]
}

@test "same inputs, same bytes; the plan of A-B is the tail of 0-B" {
	refurb-plan -b 7 -e 0-9 "$S" > "$T/a"
	refurb-plan -b 7 -e 0-9 -s 7 "$S" > "$T/b"
	cmp "$T/a" "$T/b"
	refurb-plan -b 7 -e 0-9 -s 8 "$S" > "$T/c"
	run -1 cmp -s <(tail -n +2 "$T/a") <(tail -n +2 "$T/c")
	for first in 1 5 9; do
		refurb-plan -b 7 -e $first-9 "$S" > "$T/t"
		diff <(tail -n +2 "$T/t") <(sed -n "/^B $first 0 /,\$p" "$T/a")
	done
	refurb-plan -b 7 -e 4 "$S" > "$T/one"
	diff <(tail -n +2 "$T/one") <(awk '$2 == 4' "$T/a")
}

@test "N smaller than the batch, N not divisible by the batch" {
	run refurb-plan -b 64 -e 0-1 "$S"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 5 ]
	[[ "${lines[1]}" == "B 0 0 0 30 "* ]]
	run refurb-plan -b 7 "$S"
	[ "$status" -eq 0 ]
	[[ "${lines[5]}" == "B 0 4 4 2 "* ]]
	[ "${lines[6]}" = "E 0 5 30 30" ]
}

@test "--drop-last marks the incomplete last batch D, full epochs have none" {
	run refurb-plan -b 7 -e 0-2 --drop-last "$S"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^D' <<< "$output")" -eq 3 ]
	[[ "$(grep '^D' <<< "$output" | head -1)" == "D 0 4 4 2 "* ]]
	[[ "${lines[0]}" == *" drop-last=1 "* ]]
	run refurb-plan -b 6 -e 0-2 --drop-last "$S"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^D' <<< "$output")" -eq 0 ]
}

@test "--balance pixels: same invariants, needs the right index" {
	refurb-plan -b 6 -e 0-5 --balance pixels -i "$IDX" "$S" > "$T/p"
	check_plan < "$T/p"
	[[ "$(head -1 "$T/p")" == *" balance=pixels "* ]]
	run refurb-plan --balance pixels "$S"
	expect_fail 2 "refurb-plan: --balance pixels needs the index"
	run refurb-plan --balance pixels --shuffle random -i "$IDX" "$S"
	expect_fail 2 "refurb-plan: --balance pixels works with --shuffle cache-aware"
	run refurb-plan --balance lots "$S"
	expect_fail 2 "refurb-plan: --balance: 'lots' is not none, pixels or cost=FILE"
}

@test "--balance cost=FILE: same invariants, a pure function of the file" {
	# costs measured by refurb-partial with another seed than the plan's
	refurb-plan -q -b 6 -e 0-3 -s 9 -o "$T/p0" "$S"
	refurb-partial -q -c "$T/c" -p 'resize=32,randaug=n=2:m=9' \
		--costs "$T/costs" "$IDX" < "$T/p0" > /dev/null
	refurb-plan -b 6 -e 0-8 --balance cost="$T/costs" -i "$IDX" "$S" > "$T/p"
	check_plan < "$T/p"
	[[ "$(head -1 "$T/p")" == *" balance=cost "* ]]
	refurb-plan -b 6 -e 0-8 --balance cost="$T/costs" -i "$IDX" "$S" > "$T/p2"
	cmp "$T/p" "$T/p2"
	# the tail of a longer plan, as for every balance mode
	refurb-plan -b 6 -e 4-8 --balance cost="$T/costs" -i "$IDX" "$S" > "$T/tail"
	diff <(sed 1d "$T/tail") <(sed -n '/^B 4 0 /,$p' "$T/p")
	# other costs, another plan (the file is an input)
	awk -F'\t' -v OFS='\t' 'NR > 1 && $1 % 2 { $3 = $3 * 50 } { print }' \
		"$T/costs" > "$T/costs2"
	refurb-plan -b 6 -e 0-8 --balance cost="$T/costs2" -i "$IDX" "$S" > "$T/p3"
	run ! cmp -s "$T/p" "$T/p3"
	check_plan < "$T/p3"
}

@test "--balance cost=FILE: bad files and options" {
	refurb-plan -q -b 6 -e 0 -o "$T/p0" "$S"
	refurb-partial -q -c "$T/c" -p 'resize=32' --costs "$T/costs" \
		"$IDX" < "$T/p0" > /dev/null
	run refurb-plan --balance cost="$T/costs" "$S"
	expect_fail 2 "refurb-plan: --balance cost needs the index"
	run refurb-plan --balance cost="$T/costs" --shuffle random -i "$IDX" "$S"
	expect_fail 2 "refurb-plan: --balance cost works with --shuffle cache-aware"
	run refurb-plan --balance cost= -i "$IDX" "$S"
	expect_fail 2 "refurb-plan: --balance: 'cost=' is not none, pixels or cost=FILE"
	run refurb-plan --balance cost -i "$IDX" "$S"
	expect_fail 2 "refurb-plan: --balance: 'cost' is not none, pixels or cost=FILE"
	run refurb-plan --balance cost="$T/none" -i "$IDX" "$S"
	expect_fail 1 "refurb-plan: $T/none: cannot open"
	echo garbage > "$T/junk"
	run refurb-plan --balance cost="$T/junk" -i "$IDX" "$S"
	expect_fail 1 "refurb-plan: $T/junk: bad magic (not a refurb cost file)"
	head -n 1 "$T/costs" > "$T/empty"
	run refurb-plan --balance cost="$T/empty" -i "$IDX" "$S"
	expect_fail 1 "refurb-plan: $T/empty: cost file has no measurement"
	{ cat "$T/costs"; printf '3\tx\t5\n'; } > "$T/badline"
	run refurb-plan --balance cost="$T/badline" -i "$IDX" "$S"
	expect_fail 1 "refurb-plan: $T/badline: line 32: expected ID<TAB>EPOCH<TAB>MICROSECONDS"
	{ cat "$T/costs"; printf '999\t0\t5\n'; } > "$T/beyond"
	run refurb-plan --balance cost="$T/beyond" -i "$IDX" "$S"
	expect_fail 1 "refurb-plan: $T/beyond: sample 999 beyond the index's 30"
	# a cost file made for another index is refused
	O="$BATS_FILE_TMPDIR/other.idx"
	refurb-evict -q -r 3 -s 7 -o "$T/o.evict" "$O"
	refurb-plan -q -b 6 -e 0 -o "$T/op" "$T/o.evict"
	refurb-partial -q -c "$T/oc" -p 'resize=32' --costs "$T/ocosts" \
		"$O" < "$T/op" > /dev/null
	run refurb-plan --balance cost="$T/ocosts" -i "$IDX" "$S"
	expect_fail 1 "refurb-plan: $T/ocosts: cost file made for another index than $IDX"
}

@test "a schedule of another index or shard: exit 1" {
	run refurb-plan -i "$BATS_FILE_TMPDIR/other.idx" "$S"
	expect_fail 1 "refurb-plan: $S: schedule made for another index"
	run refurb-plan -i "$IDX" -o "$T/p" "$S"
	[ "$status" -eq 0 ]
	head -c 100 "$IDX" > "$T/short.idx"
	run refurb-plan -i "$T/short.idx" "$S"
	expect_fail 1 "refurb-plan: $T/short.idx: "
	run refurb-plan -i "$S" "$S"
	expect_fail 1 "refurb-plan: $S: "
	run refurb-plan --shard 1/2 "$S"
	expect_fail 1 "refurb-plan: $S: schedule of shard 0/1, not 1/2"
	run refurb-plan --shard 0/1 -o "$T/p" "$S"
	[ "$status" -eq 0 ]
}

@test "truncated, foreign, future or damaged schedule: exit 1 naming it" {
	head -c 100 "$S" > "$T/short"
	run refurb-plan "$T/short"
	expect_fail 1 "refurb-plan: $T/short: truncated: 100 bytes, expected 244"
	head -c 20 "$S" > "$T/tiny"
	run refurb-plan "$T/tiny"
	expect_fail 1 "refurb-plan: $T/tiny: truncated: 20 bytes"
	: > "$T/empty"
	run refurb-plan "$T/empty"
	expect_fail 1 "refurb-plan: $T/empty: truncated: 0 bytes"
	run refurb-plan "$IDX"
	expect_fail 1 "refurb-plan: $IDX: bad magic (not a refurb schedule)"
	{ printf 'RFBSCHD\003'; tail -c +9 "$S"; } > "$T/v3"
	run refurb-plan "$T/v3"
	expect_fail 1 "refurb-plan: $T/v3: schedule format version 3"
	{ head -c 100 "$S"; printf 'x'; tail -c +102 "$S"; } > "$T/flip"
	run refurb-plan "$T/flip"
	expect_fail 1 "refurb-plan: $T/flip: body checksum mismatch"
	{ cat "$S"; printf 'x'; } > "$T/long"
	run refurb-plan "$T/long"
	expect_fail 1 "refurb-plan: $T/long: 1 bytes of garbage"
	run refurb-plan "$T/nope"
	expect_fail 1 "refurb-plan: $T/nope: "
}

@test "usage errors: batch 0, empty or reversed epochs, bad modes, arguments" {
	run refurb-plan -b 0 "$S"
	expect_fail 2 "refurb-plan: --batch-size: 0 is out of range"
	run refurb-plan -b 65537 "$S"
	expect_fail 2 "refurb-plan: --batch-size: 65537 is out of range"
	run refurb-plan -e 5-3 "$S"
	expect_fail 2 "refurb-plan: --epochs: '5-3' is reversed"
	run refurb-plan -e "" "$S"
	expect_fail 2 "refurb-plan: --epochs: '' is not a number"
	run refurb-plan -e 3- "$S"
	expect_fail 2 "refurb-plan: --epochs: '' is not a number"
	run refurb-plan -e -3 "$S"
	expect_fail 2 "refurb-plan: --epochs: '' is not a number"
	run refurb-plan --shuffle sorted "$S"
	expect_fail 2 "refurb-plan: --shuffle: 'sorted' is not cache-aware, random or none"
	# an alias is accepted but not listed: the plan records "none"
	run refurb-plan --shuffle sequential -e 0 "$S"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *" shuffle=none "* ]]
	run refurb-plan --shard 3/2 "$S"
	expect_fail 2 "refurb-plan: --shard: '3/2': K must be less than N"
	run refurb-plan
	expect_fail 2 "refurb-plan: no schedule given"
	run refurb-plan "$S" "$S"
	expect_fail 2 "refurb-plan: give one schedule"
	run refurb-plan -r 3 "$S"
	expect_fail 2 "refurb-plan: -A, -F, -r and -k go with --diversity"
}

@test "-o FILE, stdin, and a reader that stops early" {
	refurb-plan -b 8 -e 0-3 -o "$T/p" "$S"
	refurb-plan -b 8 -e 0-3 - < "$S" | cmp - "$T/p"
	[ "$(refurb-plan -b 1 -e 0-999 "$S" | head -n 3 | wc -l)" -eq 3 ]
}

@test "--diversity: Theorem 1, also for |A| = 1e30" {
	run refurb-plan --diversity -A 1000 -F 20 -r 1 -k 90
	[ "$status" -eq 0 ]
	[ "$(awk -F'\t' '$1 == "E(U)/E(U*)" { print $2 }' <<< "$output")" = 1 ]
	run refurb-plan --diversity -A 1e30 -F 1000 -r 3 -k 90
	[ "$status" -eq 0 ]
	[ "${lines[4]}" = "E(U)	89.91003" ]
	[ "${lines[5]}" = "E(U*)	90" ]
	[[ "${lines[6]}" == "E(U)/E(U*)	0.99900033"* ]]
	# one final augmentation: r uses of each partial result are all alike
	run refurb-plan --diversity --augmentations 1e6 --final-augmentations 1 \
		--reuse 4 --epoch-count 8
	[ "$status" -eq 0 ]
	[[ "${lines[4]}" == "E(U)	1.99999"* ]]
	[[ "${lines[6]}" == "E(U)/E(U*)	0.25"* ]]
}

@test "--diversity: bad arguments are usage errors" {
	run refurb-plan --diversity -A 10 -F 20 -r 2 -k 5
	expect_fail 2 "refurb-plan: |A_F| (-F) cannot exceed |A| (-A)"
	run refurb-plan --diversity -A 10 -F 2 -r 2
	expect_fail 2 "refurb-plan: --diversity needs -A, -F, -r and -k"
	run refurb-plan --diversity -A 10 -F 0 -r 2 -k 5
	expect_fail 2 "refurb-plan: --final-augmentations: '0' is not a number >= 1"
	run refurb-plan --diversity -A inf -F 2 -r 2 -k 5
	expect_fail 2 "refurb-plan: --augmentations: 'inf' is not a number >= 1"
	run refurb-plan --diversity -A 10 -F 2 -r 2 -k 5 "$S"
	expect_fail 2 "refurb-plan: --diversity takes no schedule"
}
