#!/usr/bin/env bats
# scripts/accuracy, accuracy.mk, accuracy-report and accuracy_stats.py:
# the statistics against known values, and a 1-seed smoke grid (every
# cell, 2 epochs on a small synthetic ImageFolder) end to end: the rows,
# the report, resuming.  Not the accuracy values (doc/accuracy.md has them).

load helpers
bats_require_minimum_version 1.5.0
set -o pipefail

need_torchvision() {
	/usr/bin/python3 -c 'import torch, torchvision, PIL' 2>/dev/null ||
		skip "torch, torchvision or PIL is not installed (scripts/deps --bench)"
}

setup() {
	T="$BATS_TEST_TMPDIR"
	# the programs of this build (accuracy.mk then does not run make)
	export REFURB_BIN="$BUILD_DIR/bin"
}

# grid: the smoke grid of the photos recipe on ds (1 seed, 2 epochs)
grid() {
	make -s -f "$TOP/scripts/accuracy.mk" RESULTS="$T/r" DATASETS=photos PHOTOS="$T/ds" \
		SEEDS=1 PHOTOS_EPOCHS=2 PHOTOS_BATCH=16 "$@"
}

@test "accuracy_stats: t distribution, confidence interval, Welch's and the paired test give the known values" {
	run /usr/bin/python3 "$TOP/scripts/accuracy_stats.py" --self-test
	[ "$status" -eq 0 ]
	[[ "$output" == "accuracy_stats: ok: "* ]]
}

@test "accuracy: the smoke grid trains every cell once, joins the rows, reports; a rerun redoes only a deleted cell" {
	need_torchvision
	make_dataset "$T/ds" 40 2
	grid
	run -0 cut -d, -f1-3 "$T/r/results.csv"
	[ "${lines[0]}" = "dataset,cell,seed" ]
	[ "${#lines[@]}" -eq 9 ]
	for c in floor standard refurb2 refurb3 refurb4 echo2 echo3 torchvision; do
		grep -qx "ds,$c,1" <<<"$output"
		grep -q "^| $c | " "$T/r/report.md"
	done
	# each row: an accuracy in [0, 1], 2 epochs, CPU seconds, 30 training
	# and 10 test images
	run -0 awk -F, 'NR > 1 && ($4 < 0 || $4 > 1 || $5 != 2 || $7 <= 0 || $8 != 30 || $9 != 10)' \
		"$T/r/results.csv"
	[ -z "$output" ]
	# rerun: nothing to do but the report; a deleted cell is trained again
	rm "$T/r/cells/photos-ds/refurb3-s1.csv"
	run grid
	[ "$status" -eq 0 ]
	run -0 grep -c "^scripts/accuracy: .* seed 1: test accuracy" <<<"$output"
	[ "$output" = 1 ]
	grep -q ",refurb3,1," "$T/r/results.csv"
}

@test "accuracy-report: mean, sd, CI, the paired and Welch's test of a hand-made results file" {
	cat > "$T/res.csv" <<-EOF
	dataset,cell,seed,accuracy,epochs,time
	d,standard,1,0.80,5,10
	d,standard,2,0.82,5,10
	d,standard,3,0.81,5,10
	d,refurb2,1,0.79,5,8
	d,refurb2,2,0.80,5,8
	d,refurb2,3,0.78,5,8
	d,echo2,3,0.78,5,8
	d,echo2,4,0.70,5,8
	d,echo2,2,0.80,5,8
	d,echo2,1,0.79,5,8
	EOF
	run "$TOP/scripts/accuracy-report" "$T/res.csv" --md "$T/rep.md"
	[ "$status" -eq 0 ]
	# sd 0.01 each; CI half-width t(0.975, 2) * 0.01 / sqrt(3) = 0.0248;
	# paired differences -0.01, -0.02, -0.03: mean -0.02, sd 0.01,
	# t = -0.02 / (0.01 / sqrt(3)) = -3.46, df 2, p = 0.074 (scipy's
	# ttest_rel); Welch: t = -0.02 / sqrt(2 * 0.0001 / 3) = -2.449, df = 4,
	# p = 0.0705
	grep -qF "| standard | 1 | 3 | 0.8100 | 0.0100 | [0.7852, 0.8348] | – | – | – | – | – | – |" "$T/rep.md"
	grep -qF "| refurb2 | 2 | 3 | 0.7900 | 0.0100 | [0.7652, 0.8148] | -0.0200 | 3 | [-0.0448, +0.0048] | -3.46 | 0.074 | 0.070 |" "$T/rep.md"
	# pairs by seed, not by row: echo2's seed 4 has no standard run to pair
	grep -qF "| echo2 | 2 | 4 | 0.7675 | " "$T/rep.md"
	echo2=$(grep "^| echo2 " "$T/rep.md")
	grep -qF " | 3 | [-0.0448, +0.0048] | -3.46 | 0.074 | " <<< "$echo2"
}

@test "accuracy-report: --update puts the table between the markers of a document" {
	printf 'd,standard,1,0.5,1,1\n' | sed '1i dataset,cell,seed,accuracy,epochs,time' > "$T/res.csv"
	printf 'before\n<!-- accuracy-report begin -->\nold\n<!-- accuracy-report end -->\nafter\n' \
		> "$T/doc.md"
	run "$TOP/scripts/accuracy-report" "$T/res.csv" --update "$T/doc.md"
	[ "$status" -eq 0 ]
	run -0 cat "$T/doc.md"
	[ "${lines[0]}" = "before" ]
	[ "${lines[-1]}" = "after" ]
	grep -q "^| standard | 1 | 1 | 0.5000 |" "$T/doc.md"
	run ! grep -qx old "$T/doc.md"
}

@test "accuracy-report: a file that is not a results file, or a document without markers, is refused" {
	printf 'a,b\n1,2\n' > "$T/bad.csv"
	run "$TOP/scripts/accuracy-report" "$T/bad.csv"
	expect_fail 1 "accuracy-report: $T/bad.csv: not a results file of scripts/accuracy"
	printf 'dataset,cell,seed,accuracy,epochs,time\nd,floor,1,0.5,1,1\n' > "$T/ok.csv"
	echo "no markers" > "$T/doc.md"
	run "$TOP/scripts/accuracy-report" "$T/ok.csv" --update "$T/doc.md"
	expect_fail 1 "accuracy-report: --update $T/doc.md: no '<!-- accuracy-report begin -->'"
}

@test "accuracy train: --device cuda without a GPU stops with an error naming the fix" {
	need_torchvision
	/usr/bin/python3 -c 'import sys, torch; sys.exit(torch.cuda.is_available())' ||
		skip "this machine has a CUDA device"
	make_dataset "$T/ds" 12 2
	"$TOP/scripts/accuracy" prepare photos "$T/p" --from "$T/ds"
	run "$TOP/scripts/accuracy" train "$T/p" --cell standard --seed 1 --epochs 1 \
		--device cuda -o "$T/x.csv"
	expect_fail 1 "scripts/accuracy: --device cuda: this torch"
	[[ "$output" == *"use --device cpu"* ]]
	[ ! -e "$T/x.csv" ]
}

@test "accuracy train: a dataset directory that was not prepared is refused" {
	need_torchvision
	mkdir "$T/empty"
	run "$TOP/scripts/accuracy" train "$T/empty" --cell floor --seed 1 --epochs 1 -o "$T/x.csv"
	expect_fail 1 "scripts/accuracy: $T/empty/dataset.json: no such file: prepare the dataset first"
}

@test "accuracy train: a test class that has no training images is refused" {
	need_torchvision
	make_dataset "$T/ds" 12 2
	"$TOP/scripts/accuracy" prepare photos "$T/p" --from "$T/ds"
	mv "$T/p/test/class001" "$T/p/test/class009"
	run "$TOP/scripts/accuracy" train "$T/p" --cell floor --seed 1 --epochs 1 -o "$T/x.csv"
	expect_fail 1 "scripts/accuracy: $T/p/test/class009: a test class with no training images"
	[ ! -e "$T/x.csv" ]
}

@test "accuracy.mk: help prints the head comment, all of it and nothing of the makefile" {
	run -0 make -s -f "$TOP/scripts/accuracy.mk" help
	[[ "$output" == *"make -f scripts/accuracy.mk [-j2]"* ]]
	[[ "$output" == *"THREADS is each run's torch and refurb -j."* ]]
	run ! grep -q "?=" <<<"$output"
}
