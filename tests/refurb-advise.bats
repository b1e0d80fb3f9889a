#!/usr/bin/env bats
# refurb-advise: the table's shape and what its numbers must satisfy
# whatever the machine (the times themselves are never asserted), the
# recommendation, bad input.

load helpers
bats_require_minimum_version 1.5.0
set -o pipefail

FULL='resize=64,randaug=n=2:m=9,crop=56,flip'
HEAD='final_layers	partial	final	r	img_per_cpu_s	img_per_s	unique_fraction	cache_bytes	view_collision'

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	make_dataset ds 24 3
	refurb-index -q -o train.idx ds
	refurb-advise -q --tsv -n 12 --repeat 1 -R 4 -p "$FULL" train.idx > table.tsv
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

@test "--tsv: one row per (split, r): L final-layer counts times R, 9 fields" {
	[ "$(head -1 table.tsv)" = "$HEAD" ]
	# 5 layers (randaug=n=2 is two) x r = 1..4
	[ "$(grep -vc '^#' table.tsv)" -eq 21 ]
	grep -v '^#' table.tsv | tail -n +2 | awk -F'\t' '
		NF != 9 { print "fields: " $0; bad = 1 }
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
	run -0 refurb-advise -q --tsv -n 6 --repeat 1 -R 2 --rate 1 \
		-p 'resize=64,crop=56,flip,normalize=imagenet,erasing=p=0.25:value=random' train.idx
	[ "${lines[0]}" = "$HEAD" ]
	# 5 layers; normalize and the erasing never partial: final_layers 2 to 5, r 1 and 2
	rows=$(grep -v '^#' <<<"$output" | tail -n +2 | cut -f1,4 | tr '\t\n' ': ')
	[ "$rows" = "2:1 2:2 3:1 3:2 4:1 4:2 5:1 5:2 " ]
	grep -q "^2	resize=64:[^	]*,flip=p=0.5	centercrop=56x56,normalize=[^	]*,erasing=p=0.25:[^	]*:value=random	1	" <<<"$output"
	grep -q "^# recommended for 1 images/s" <<<"$output"
	# the layer lines; normalize and erasing have no partial cost
	grep -q "^# 4	normalize	56x56	1	1	1$" <<<"$output"
	grep -q "^# 5	erasing	56x56	" <<<"$output"
	run ! grep -q "^# cost	partial	.*\(normalize\|erasing\)" <<<"$output"
	# an erasing value=random before normalize stays with it
	run -0 refurb-advise -q --tsv -n 6 --repeat 1 -R 1 \
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
	# the choices and costs behind the rows are printed
	grep -q '^# layer	name	input	choices	runs	collision$' table.tsv
	grep -q '^# 2	randaug	.*	23	1	0.0484694$' table.tsv
	grep -q '^# 5	flip	56x56	2	1	0.5$' table.tsv
	grep -q '^# cost	part	layers	names	ms	spread_ms$' table.tsv
	grep -q '^# pareto	' table.tsv
}

@test "--cores scales img_per_s; --rates epochs -e 1: every use a miss" {
	refurb-advise -q --tsv -n 4 --repeat 1 -R 3 --cores 4 -e 1 --rates epochs \
		-p "$FULL" train.idx > "$T/t"
	grep -v '^#' "$T/t" | tail -n +2 | awk -F'\t' '
		{ d = $6 - 4 * $5; if (d > 1e-4 * $6 || d < -1e-4 * $6) { print "cores: " $0; bad = 1 } }
		$1 == prev && $5 != prev_rate { print "r changes a 1-epoch run: " $0; bad = 1 }
		{ prev = $1; prev_rate = $5 }
		END { exit bad }'
	grep -q '^# rates: mean over the epochs on 4 cores; unique fraction after 1 epochs' "$T/t"
}

@test "--rate: the most diverse row that sustains it, or none" {
	refurb-advise -q --tsv -n 4 --repeat 1 -R 3 --cores 2 --rate 1 -p "$FULL" \
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
	[[ "$output" == *"recommended: none sustains 1e+12 images/s on "* ]] || false
}

@test "broken images are named and left out; none readable: exit 1" {
	mkdir -p "$T/ds"
	cp -r ds/class000 "$T/ds/"
	refurb-index -q -o "$T/x.idx" "$T/ds"
	first=$(ls "$T/ds/class000" | head -1)
	head -c 100 "ds/class000/$first" > "$T/ds/class000/$first"
	run refurb-advise --tsv -n 100 --repeat 1 -R 1 -p "$FULL" "$T/x.idx"
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
	run refurb-advise -q --tsv -n 6 --repeat 1 -R 2 -p "$GATED" train.idx
	[ "$status" -eq 0 ]
	echo "$output" > "$T/gated.tsv"
	# 11 layers; splits inside a gate's layers are left out: 11 10 7 6 3
	[ "$(grep -v '^#' "$T/gated.tsv" | tail -n +2 | cut -f1 | uniq | tr '\n' ' ')" = "3 6 7 10 11 " ]
	# how often each layer runs, its choices and view collisions
	grep -q '^# 2	apply	[0-9x]*	2	1	0.58$' "$T/gated.tsv"
	grep -q '^# 3	colorjitter	[0-9x]*	1	0.3	0$' "$T/gated.tsv"
	grep -q '^# 4	gaussblur	[0-9x]*	1	0.3	0$' "$T/gated.tsv"
	grep -q '^# 7	invert	[0-9x]*	1	0.25	0.5$' "$T/gated.tsv"
	grep -q '^# 8	solarize	[0-9x]*	1	0.75	0.5$' "$T/gated.tsv"
	grep -q '^# 10	vflip	[0-9x]*	1	1	0.5$' "$T/gated.tsv"
	# the costs: never below 0, every layer in one group of each part
	# (decode 0 to the last that can be partial, 10; layers 1 to 11 final)
	awk -F'\t' '
		/^# cost\t(partial|final)\t/ {
			if ($5 < 0 || $6 < 0) { print "negative: " $0; bad = 1 }
			n = split($3, r, "-"); lo = r[1]; hi = n > 1 ? r[2] : r[1]
			if (lo != next_[$2]) { print "gap before: " $0; bad = 1 }
			next_[$2] = hi + 1 }
		BEGIN { next_["partial"] = 0; next_["final"] = 1 }
		END { if (next_["partial"] != 11 || next_["final"] != 12) {
			print "ends " next_["partial"] " " next_["final"]; bad = 1 }
		      exit bad }' "$T/gated.tsv"
	# a gate that never opens: its layers never run
	run refurb-advise -q --tsv -n 4 --repeat 1 -R 1 -p 'resize=64,apply=0:n=2,gaussblur=23,colorjitter=0.4,crop=56' train.idx
	[ "$status" -eq 0 ]
	grep -q '^# 3	gaussblur	[0-9x]*	1	0	0$' <<<"$output"
	grep -q '^# 4	colorjitter	[0-9x]*	1	0	0$' <<<"$output"
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
	run -0 refurb-advise -q --tsv -n 3 --repeat 1 -R 1 --cores 1000 -p "$FULL" train.idx
	[[ "$output" == *"# measured: 3 images of 24 (0 left out), median of 1 runs each, $cpus threads,"* ]] || false
	# the rates are still for 1000 cores
	[[ "$output" == *"# rates: steady state on 1000 cores;"* ]] || false
	run -0 refurb-advise -q --tsv -n 3 --repeat 1 -R 1 --cores 1000 -j 3 -p "$FULL" train.idx
	[[ "$output" == *"median of 1 runs each, 3 threads,"* ]] || false
}

@test "the default: a short table of the best rows, r never above -e, costs never below 0 and given with their spread" {
	run -0 refurb-advise -q -n 8 --repeat 2 -e 2 -p "$FULL" train.idx
	[ "${lines[0]}" = "8 images timed (median of 2 runs), 1 view per sample, 2 epochs, steady state on $(getconf _NPROCESSORS_ONLN) cores" ]
	[[ "${lines[1]}" =~ ^\ r\ +final\ part\ +img/CPU-s\ +unique\ +view\ collisions$ ]] || false
	[ "${lines[-1]}" = "(every row, the layers' costs and their spread: --tsv)" ]
	# rows: r, the final layers by name, images per CPU-second, unique fraction
	[[ "${lines[2]}" =~ ^\ [12]\ \ [a-z,]+\ +[0-9.]+\ +[01]\.[0-9]{4}\ \ -\ \(one\ view\)$ ]] || false
	# -R 6 (the default) is cut to the 2 epochs planned
	run -0 refurb-advise -q --tsv -n 8 --repeat 2 -e 2 -p "$FULL" train.idx
	grep -v '^#' <<<"$output" | tail -n +2 | awk -F'\t' '$4 > 2 { print; bad = 1 } END { exit bad }'
	[ "$(grep -v '^#' <<<"$output" | tail -n +2 | cut -f4 | sort -u | tr '\n' ' ')" = "1 2 " ]
	awk -F'\t' '/^# cost\t(partial|final)\t/ {
			n++; if ($5 < 0 || $6 < 0 || $6 == "") { print; bad = 1 } }
		END { exit bad || n < 2 }' <<<"$output"
}

@test "--views 2: the MoCo v2 recipe of issue 30 is never split with only the flip final; the ruled-out splits are named with their probability" {
	MOCO='rrcrop=48:scale=0.2-1,apply=0.8,colorjitter=0.4:contrast=0.4:saturation=0.4:hue=0.1,grayscale=0.2,apply=0.5,gaussblur=kernel_size=5:sigma=0.1-2,flip'
	run -0 refurb-advise -q -n 8 --repeat 1 -e 3 --views 2 --rate 1 -p "$MOCO" train.idx
	[[ "${lines[0]}" == *", 2 views per sample, 3 epochs,"* ]] || false
	[[ "$output" == *"ruled out: final flip: the two views identical with probability 50% (over 1%, --max-view-collision)"* ]] || false
	[[ "$output" == *"ruled out: final gaussblur(0.5),flip: the two views identical with probability 12.5% (over 1%"* ]] || false
	[[ "$output" == *"ruled out: final grayscale,gaussblur(0.5),flip: the two views identical with probability 8.5% (over 1%"* ]] || false
	grep -q "^recommended for 1 images/s on [0-9]* cores: r = [123], partial '[^']*', final '[^']*colorjitter=" <<<"$output"
	# every row of the table has views that differ
	run -0 refurb-advise -q --tsv -n 8 --repeat 1 -e 3 --views 2 --rate 1 -p "$MOCO" train.idx
	grep -q "^# ruled out	1	flip	0.5	-$" <<<"$output"
	awk -F'\t' '/^# recommended/ { n++; if ($10 > 0.01) { print; bad = 1 } } END { exit bad || n != 1 }' <<<"$output"
	# the rows ruled out are not on the Pareto front
	run -0 refurb-advise -q --tsv -n 8 --repeat 1 -e 3 --views 2 -p "$MOCO" train.idx
	awk -F'\t' '/^# pareto/ { n++; if ($10 > 0.01) { print; bad = 1 } } END { exit bad || n < 1 }' <<<"$output"
	# a looser limit (and shared draws kept) lets the jitter and grayscale be cached
	run -0 refurb-advise -q -n 8 --repeat 1 -e 3 --views 2 --max-view-collision 0.2 -p "$MOCO" train.idx
	[[ "$output" == *"ruled out: final gaussblur(0.5),flip: views would share the cached rrcrop's, colorjitter's and grayscale's draws (--shared-draws keeps it)"* ]] || false
	run -0 refurb-advise -q -n 8 --repeat 1 -e 3 --views 2 --max-view-collision 0.2 --shared-draws -p "$MOCO" train.idx
	[[ "$output" != *"ruled out: final gaussblur(0.5),flip:"* ]] || false
	[[ "$output" == *"ruled out: final flip: the two views identical with probability 50% (over 20%"* ]] || false
	# with K views the pair's probability times the K(K-1)/2 pairs
	run -0 refurb-advise -q --tsv -n 8 --repeat 1 -e 3 --views 3 -p "$MOCO" train.idx
	grep -q "^# ruled out	6	colorjitter(0.8),grayscale,gaussblur(0.5),flip	0.0102	-$" <<<"$output"
}

@test "--views 2: a split that caches the MoCo v2 crop is ruled out, its views sharing the crop's draws; --shared-draws keeps it" {
	MOCO='resize=256,rrcrop=224:scale=0.2-1,apply=0.8,colorjitter=0.4:contrast=0.4:saturation=0.4:hue=0.1,grayscale=0.2,apply=0.5,gaussblur=kernel_size=23:sigma=0.1-2,flip'
	run -0 refurb-advise --views 2 -e 3 --size 500x375 -p "$MOCO"
	# 0.34% identical, under 1%: only the new rule rules it out
	[[ "$output" == *"ruled out: final colorjitter(0.8),grayscale,gaussblur(0.5),flip: views would share the cached rrcrop's draws (--shared-draws keeps it)"* ]] || false
	[[ "$output" != *" 3  colorjitter(0.8),grayscale,gaussblur(0.5),flip "* ]] || false
	# the collision rule as it was, first when both apply
	[[ "$output" == *"ruled out: final flip: the two views identical with probability 50% (over 1%, --max-view-collision)"* ]] || false
	run -0 refurb-advise --tsv --views 2 -e 3 --size 500x375 -p "$MOCO"
	grep -q "^# ruled out	6	colorjitter(0.8),grayscale,gaussblur(0.5),flip	0.0034	rrcrop$" <<<"$output"
	grep -q "^# ruled out	1	flip	0.5	-$" <<<"$output"
	# every layer that draws is named
	run -0 refurb-advise --views 2 -e 3 --size 500x375 -p 'resize=256,rrcrop=224,flip,colorjitter=0.4,centercrop=200'
	[[ "$output" == *"ruled out: final colorjitter,centercrop: views would share the cached rrcrop's and flip's draws (--shared-draws keeps it)"* ]] || false
	# --shared-draws: the split is back, the collision rule still applies
	run -0 refurb-advise --shared-draws --views 2 -e 3 --size 500x375 -p "$MOCO"
	[[ "${lines[2]}" =~ ^\ 3\ \ colorjitter\(0\.8\),grayscale,gaussblur\(0\.5\),flip\ +-\ +0\.[0-9]{4}\ \ 0\.34%$ ]] || false
	[[ "$output" != *"share"* ]] || false
	[[ "$output" == *"ruled out: final flip: the two views identical with probability 50%"* ]] || false
	# one view shares nothing
	run -0 refurb-advise -e 3 --size 500x375 -p "$MOCO"
	[[ "$output" != *"ruled out"* ]] || false
}

@test "--views: when every split is ruled out, the table says so and what to do" {
	run -0 --separate-stderr refurb-advise --views 2 -e 3 --size 500x375 -p 'resize=96,centercrop=96,flip'
	[ "${lines[2]}" = "no split keeps the 2 views apart: every one is ruled out (below); give the recipe random layers that draw more (a crop), or run one view" ]
	[ "${lines[3]}" = "ruled out: final flip: the two views identical with probability 50% (over 1%, --max-view-collision)" ]
	# one split left: no such line
	run -0 refurb-advise --views 2 -e 3 --size 500x375 -p 'resize=96,rrcrop=64,flip'
	[[ "$output" != *"no split keeps"* ]] || false
}

@test "--views and --max-view-collision: bad values are usage errors" {
	run refurb-advise -p "$FULL" --views 0 train.idx
	expect_fail 2 "refurb-advise: --views: 0 is out of range"
	run refurb-advise -p "$FULL" --max-view-collision 0 train.idx
	expect_fail 2 "refurb-advise: --max-view-collision: '0' is not a number > 0"
	run refurb-advise -p "$FULL" --max-view-collision 5 train.idx
	expect_fail 2 "refurb-advise: --max-view-collision: '5' is a probability: give 0.01 for 1%"
}

@test "--size WxH: the model alone, no index and no timing" {
	run -0 refurb-advise --size 500x375 --views 2 -e 100 -R 3 \
		-p 'resize=256,rrcrop=224,apply=0.8,colorjitter=0.4,grayscale=0.2,flip'
	[ "${lines[0]}" = "not timed: images of 500x375, 2 views per sample, 100 epochs" ]
	[[ "${lines[2]}" =~ ^\ 3\ \ rrcrop,colorjitter\(0.8\),grayscale,flip\ +-\ +1\.0000\ \ [0-9.e-]+%$ ]] || false
	[[ "$output" == *"ruled out: final colorjitter(0.8),grayscale,flip: the two views identical with probability 1.36% (over 1%"* ]] || false
	run -0 refurb-advise --tsv --size 500x375 -R 2 -p 'resize=256,rrcrop=224,flip'
	grep -q "^# 2	rrcrop	341x256	" <<<"$output"
	grep -q "^2	resize=256:[^	]*	rrcrop=224x224:[^	]*,flip=p=0.5	2	-	-	1.0000	0	0$" <<<"$output"
	run refurb-advise --size 500x375 -p 'resize=256,rrcrop=224,flip' train.idx
	expect_fail 2 "refurb-advise: --size times nothing: give it without an index ('train.idx')"
	run refurb-advise --size 500 -p 'resize=256,rrcrop=224,flip'
	expect_fail 2 "refurb-advise: --size: '500' is not WxH (e.g. 500x375)"
	run refurb-advise --size 500x375 --rate 100 -p 'resize=256,rrcrop=224,flip'
	expect_fail 2 "refurb-advise: --rate needs the timing"
}
