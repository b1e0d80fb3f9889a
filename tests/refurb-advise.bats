#!/usr/bin/env bats
# refurb-advise: the table's shape and what its numbers must satisfy
# whatever the machine (the times themselves are never asserted), the
# recommendation, bad input.

load helpers
bats_require_minimum_version 1.5.0
set -o pipefail

FULL='resize=64,randaug=n=2:m=9,crop=56,flip'
HEAD='final_layers	partial	final	r	img_per_cpu_s	img_per_s	unique_fraction	cache_bytes'

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	make_dataset ds 24 3
	refurb-index -q -o train.idx ds
	refurb-advise -q -n 12 --repeat 1 -R 4 -p "$FULL" train.idx > table.tsv
}

setup() {
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
}

@test "--help, --version, usage errors" {
	run refurb-advise --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Usage: refurb-advise"* ]]
	[[ "$output" == *"--max-r"* ]]
	run refurb-advise --version
	[ "$status" -eq 0 ]
	run refurb-advise train.idx
	expect_fail 2 "refurb-advise: the full pipeline is missing"
	run refurb-advise -p "$FULL"
	expect_fail 2 "refurb-advise: "
	[[ "$output" == *"index"* ]]
	run refurb-advise -p "$FULL" --rates fast train.idx
	expect_fail 2 "refurb-advise: --rates: 'fast' is not steady or epochs"
	run refurb-advise -p "$FULL" --rate 0 train.idx
	expect_fail 2 "refurb-advise: --rate: '0' is not a number > 0"
	run refurb-advise -p "$FULL" --cores -1 train.idx
	expect_fail 2 "refurb-advise: --cores: '-1' is not a number > 0"
	run refurb-advise -p "$FULL" -R 0 train.idx
	expect_fail 2 "refurb-advise: --max-r: 0 is out of range"
	run refurb-advise -p "$FULL" --codec gzip train.idx
	expect_fail 2 "refurb-advise: --codec: "
}

@test "a bad spec, or one without a fixed output size: exit 2 naming it" {
	run refurb-advise -p 'resize=64,blur' train.idx
	expect_fail 2 "refurb-advise: bad pipeline spec at column 11: unknown filter \"blur\""
	run refurb-advise -p 'resize=64,flip' train.idx
	expect_fail 2 "refurb-advise: pipeline "
	[[ "${lines[0]}" == *"output size depends on the input"* ]]
	run refurb-advise -p '' train.idx
	expect_fail 2 "refurb-advise: the pipeline has no layer to split"
	# a partial and a final -p (as refurb-partial and refurb-final take
	# them) would time only the last one: refused, with the joined spec
	run refurb-advise -p 'resize=64,randaug=n=2:m=9' -p 'crop=56,flip' train.idx
	expect_fail 2 "refurb-advise: -p given twice ('resize=64,randaug=n=2:m=9', then 'crop=56,flip'): give the whole pipeline once, the partial and the final part joined by ',' ('resize=64,randaug=n=2:m=9,crop=56,flip'): refurb-advise splits it itself"
}

@test "one row per (split, r): L final-layer counts times R, 8 fields" {
	[ "$(head -1 table.tsv)" = "$HEAD" ]
	# 5 layers (randaug=n=2 is two) x r = 1..4
	[ "$(grep -vc '^#' table.tsv)" -eq 21 ]
	grep -v '^#' table.tsv | tail -n +2 | awk -F'\t' '
		NF != 8 { print "fields: " $0; bad = 1 }
		{ n[$1]++; if ($4 < 1 || $4 > 4) { print "r: " $0; bad = 1 } }
		END { for (f = 1; f <= 5; f++) if (n[f] != 4) { print "split " f ": " n[f]; bad = 1 }
		      exit bad }'
	# the splits of the spec: first layers partial, the rest final
	grep -q "^1	resize=64:[^	]*,crop=56x56:[^	]*	flip=p=0.5,centercrop=56x56	1	" table.tsv
	grep -q "^5		resize=64:[^	]*,flip=p=0.5	1	" table.tsv
	grep -q "^3	resize=64:[^	]*,randaug=n=1:[^	]*	randaug=n=1:" table.tsv
}

@test "normalize with erasing value=random after it (timm, DeiT) or before it: rows for the splits that keep them final" {
	# the spec the converter writes for DeiT's recipe: the erasing after normalize
	run -0 refurb-advise -q -n 6 --repeat 1 -R 2 --rate 1 \
		-p 'resize=64,crop=56,flip,normalize=imagenet,erasing=p=0.25:value=random' train.idx
	[ "${lines[0]}" = "$HEAD" ]
	# 5 layers; normalize and the erasing never partial: final_layers 2 to 5, r 1 and 2
	rows=$(grep -v '^#' <<<"$output" | tail -n +2 | cut -f1,4 | tr '\t\n' ': ')
	[ "$rows" = "2:1 2:2 3:1 3:2 4:1 4:2 5:1 5:2 " ]
	grep -q "^2	resize=64:[^	]*,flip=p=0.5	centercrop=56x56,normalize=[^	]*,erasing=p=0.25:[^	]*:value=random	1	" <<<"$output"
	grep -q "^# recommended for 1 images/s" <<<"$output"
	# the layer lines: normalize and erasing have no partial cost
	grep -q "^# 4	normalize	56x56	-	" <<<"$output"
	grep -q "^# 5	erasing	56x56	-	" <<<"$output"
	# an erasing value=random before normalize stays with it
	run -0 refurb-advise -q -n 6 --repeat 1 -R 1 \
		-p 'resize=64,crop=56,erasing=value=random,normalize=imagenet' train.idx
	rows=$(grep -v '^#' <<<"$output" | tail -n +2 | cut -f1 | tr '\n' ' ')
	[ "$rows" = "2 3 4 " ]
	grep -q "^2	resize=64:[^	]*,crop=56x56:[^	]*	centercrop=56x56,erasing=[^	]*value=random,normalize=" <<<"$output"
}

@test "what the numbers must satisfy: faster with r, diversity in [0, 1]" {
	grep -v '^#' table.tsv | tail -n +2 | awk -F'\t' '
		$7 < 0 || $7 > 1 { print "unique fraction: " $0; bad = 1 }
		$5 <= 0 || $8 <= 0 { print "rate or bytes: " $0; bad = 1 }
		$4 == 1 && $7 < 0.999 { print "r = 1 is not all unique: " $0; bad = 1 }
		$4 > 1 && $1 == prev_split && $5 <= prev_rate { print "not faster with r: " $0; bad = 1 }
		$4 > 1 && $1 == prev_split && $7 > prev_unique + 1e-9 { print "more unique with r: " $0; bad = 1 }
		{ prev_split = $1; prev_rate = $5; prev_unique = $7 }
		END { exit bad }'
	# only flip final (|A_F| = 2): r = 4 repeats most augmentations
	awk -F'\t' '$1 == 1 && $4 == 4 { exit !($7 < 0.6) }' table.tsv
	# the costs and choices behind the rows are printed
	grep -q '^# layer	name	input	partial_ms	final_ms	choices	runs$' table.tsv
	grep -q '^# 2	randaug	.*	23	1$' table.tsv
	grep -q '^# 5	flip	56x56	-	' table.tsv
	grep -q '^# pareto	' table.tsv
}

@test "--cores scales img_per_s; --rates epochs -e 1: every use a miss" {
	refurb-advise -q -n 4 --repeat 1 -R 3 --cores 4 -e 1 --rates epochs \
		-p "$FULL" train.idx > "$T/t"
	grep -v '^#' "$T/t" | tail -n +2 | awk -F'\t' '
		{ d = $6 - 4 * $5; if (d > 1e-4 * $6 || d < -1e-4 * $6) { print "cores: " $0; bad = 1 } }
		$1 == prev && $5 != prev_rate { print "r changes a 1-epoch run: " $0; bad = 1 }
		{ prev = $1; prev_rate = $5 }
		END { exit bad }'
	grep -q '^# rates: mean over the epochs on 4 cores; unique fraction after 1 epochs' "$T/t"
}

@test "--rate: the most diverse row that sustains it, or none" {
	refurb-advise -q -n 4 --repeat 1 -R 3 --cores 2 --rate 1 -p "$FULL" \
		train.idx > "$T/t"
	run -0 grep -c '^# recommended for 1 images/s on 2 cores:	' "$T/t"
	[ "$output" -eq 1 ]
	# at 1 image/s everything sustains it: the most diverse row of the
	# same table
	awk -F'\t' '
		!/^#/ && NR > 1 { u[NR] = $7; v[NR] = $5; if ($7 > max) max = $7 }
		/^# recommended/ { ru = $8; rv = $6 }
		END { if (ru != max) { print "unique " ru ", max " max; exit 1 } }' "$T/t"
	run ! grep -q '^# pareto' "$T/t"
	run refurb-advise -n 4 --repeat 1 --rate 1e12 -p "$FULL" train.idx
	[ "$status" -eq 0 ]
	[[ "$output" == *"refurb-advise: no configuration sustains 1e+12 images/s"* ]]
	[[ "$output" == *"# recommended: none sustains"* ]]
}

@test "broken images are named and left out; none readable: exit 1" {
	mkdir -p "$T/ds"
	cp -r ds/class000 "$T/ds/"
	refurb-index -q -o "$T/x.idx" "$T/ds"
	first=$(ls "$T/ds/class000" | head -1)
	head -c 100 "ds/class000/$first" > "$T/ds/class000/$first"
	run refurb-advise -n 100 --repeat 1 -R 1 -p "$FULL" "$T/x.idx"
	[ "$status" -eq 0 ]
	[[ "$output" == *"$first"*"left out of the timing"* ]]
	[[ "$output" == *"# measured: 7 images of 8 (1 left out)"* ]]
	for f in "$T"/ds/class000/*.jpg; do echo junk > "$f"; done
	run refurb-advise -n 100 --repeat 1 -p "$FULL" "$T/x.idx"
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == "refurb-advise: $T/x.idx: none of the 8 sampled images could be read" ]]
}

@test "bad index, unwritable --tmp-dir: exit 1 naming the file" {
	run refurb-advise -p "$FULL" "$T/none.idx"
	expect_fail 1 "refurb-advise: $T/none.idx: "
	echo garbage > "$T/bad.idx"
	run refurb-advise -p "$FULL" "$T/bad.idx"
	expect_fail 1 "refurb-advise: $T/bad.idx: "
	run refurb-advise -p "$FULL" --tmp-dir "$T/nodir" train.idx
	expect_fail 1 "refurb-advise: $T/nodir/refurb-advise."
	[[ "${lines[0]}" == *"cannot create the record file"* ]]
}

@test "gates: apply, choice and order cost what their layers run, splits keep them whole" {
	GATED='resize=64,apply=0.3:n=2,colorjitter=0.4,gaussblur=9,crop=56,choice=2:p=1/3,invert,solarize=100,order=2,vflip,flip'
	run refurb-advise -q -n 6 --repeat 1 -R 2 -p "$GATED" train.idx
	[ "$status" -eq 0 ]
	echo "$output" > "$T/gated.tsv"
	# 11 layers; splits inside a gate's layers are left out: 11 10 7 6 3
	[ "$(grep -v '^#' "$T/gated.tsv" | tail -n +2 | cut -f1 | uniq | tr '\n' ' ')" = "3 6 7 10 11 " ]
	# how often each layer runs
	grep -q '^# 2	apply	[0-9x]*	0.000	0.000	2	1$' "$T/gated.tsv"
	grep -q '^# 3	colorjitter	.*	0.3$' "$T/gated.tsv"
	grep -q '^# 4	gaussblur	.*	0.3$' "$T/gated.tsv"
	grep -q '^# 7	invert	.*	0.25$' "$T/gated.tsv"
	grep -q '^# 8	solarize	.*	0.75$' "$T/gated.tsv"
	grep -q '^# 10	vflip	.*	1$' "$T/gated.tsv"
	# a split's partial time is the decode plus its layers' (expected) costs
	awk -F'\t' '
		/^# [0-9]+\t[a-z]+\t/ { cost[$1] = $4 }
		/^# [0-9]+\t[0-9.]+\t[0-9.]+\t/ {
			k = 11 - substr($1, 3); sum = 0
			for (j = 0; j <= k; j++) sum += cost["# " j]
			if (sum - $2 > 0.002 * (k + 1) || $2 - sum > 0.002 * (k + 1)) {
				print "split " k ": " $2 " vs " sum; bad = 1 }
			n++ }
		END { exit bad || n != 5 }' "$T/gated.tsv"
	# a gate that never opens: its layers cost nothing
	run refurb-advise -q -n 4 --repeat 1 -R 1 -p 'resize=64,apply=0:n=2,gaussblur=23,colorjitter=0.4,crop=56' train.idx
	[ "$status" -eq 0 ]
	[[ "$output" == *"# 3	gaussblur	"*"	0.000	0.000	1	0"* ]] || false
	[[ "$output" == *"# 4	colorjitter	"*"	0.000	0.000	1	0"* ]] || false
}

@test "scripts/bench-advise: a bench that refuses its options ends in one line, not a traceback" {
	# scripts/bench checks -e against the cells' r before it makes anything
	run -1 "$TOP/scripts/bench-advise" --photos 10 -R 1 -e 4 --cells 3:3 -o "$T/ba"
	[[ "$output" == *"bench: -e must be at least r + 2 = 5"* ]] || false
	[ "${lines[-1]}" = "bench-advise: scripts/bench failed (its message is above)" ]
	[[ "$output" != *Traceback* ]] || false
}

@test "--cores of a bigger machine: no more timing threads than this machine's CPUs; -j still sets them" {
	cpus=$(getconf _NPROCESSORS_ONLN)
	run -0 refurb-advise -q -n 3 --repeat 1 -R 1 --cores 1000 -p "$FULL" train.idx
	[[ "$output" == *"# measured: 3 images of 24 (0 left out), median of 1 runs each, $cpus threads,"* ]] || false
	# the rates are still for 1000 cores
	[[ "$output" == *"# rates: steady state on 1000 cores;"* ]] || false
	run -0 refurb-advise -q -n 3 --repeat 1 -R 1 --cores 1000 -j 3 -p "$FULL" train.idx
	[[ "$output" == *"median of 1 runs each, 3 threads,"* ]] || false
}
