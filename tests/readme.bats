#!/usr/bin/env bats
# The README's blocks, as written: its ```sh blocks run in order in an
# empty directory holding a generated data/train/ (the first run), its
# ```sh FILE and ```python FILE blocks are written to FILE (resume.sh,
# train.py, recipe.py).  The programs come from the build, the reader
# from python/ (what `make install` gives a user).
# tests/run: serial (torch trainings on every core, a Ctrl-C timed by the trainer's output)

load helpers
bats_require_minimum_version 1.5.0
set -o pipefail

setup() {
	T="$BATS_TEST_TMPDIR"
	export PYTHONPATH="$TOP/python"
	/usr/bin/python3 -c 'import torch' 2>/dev/null ||
		skip "torch is not installed (python3-torch): the README's trainer needs it"
}

# blocks README OUTDIR: the unnamed sh blocks into OUTDIR/run.sh (in
# order), each sh or python block with a file name into OUTDIR/NAME;
# prints the count of unnamed sh blocks and of named blocks.
blocks() {
	awk -v out="$2" '
	/^```sh$/ { into = out "/run.sh"; sh++; next }
	/^```(sh|python) [^ ]+$/ { into = out "/" $2; named++; printf "" > into; next }
	/^```/ { into = ""; next }
	into != "" { print >> into }
	END { print sh + 0, named + 0 }' "$1"
}

# first_run DIR: the README's blocks and a generated data/train in DIR
first_run() {
	mkdir -p "$1/data"
	run -0 blocks "$TOP/README.md" "$1"
	[ "$output" = "1 3" ]
	make_dataset "$1/data/train" 400 10 > /dev/null
}

# epochs OUTPUT: "E LOSS ACCURACY" of every "epoch E: mean loss L, accuracy A" line
epochs() {
	sed -n 's/^epoch \([0-9]*\): mean loss \([0-9.]*\), accuracy \([0-9.]*\)$/\1 \2 \3/p' <<< "$1"
}

@test "the README's first run runs as written, and its train.py learns" {
	first_run "$T/run"
	grep -q '^mkfifo train.fifo' "$T/run/run.sh"
	grep -q '^set -o pipefail' "$T/run/run.sh"
	grep -q '^wait \$chain' "$T/run/run.sh"
	cd "$T/run"
	run -0 bash -e run.sh
	ep=$(epochs "$output")
	[ "$(wc -l <<< "$ep")" -eq 6 ] || { echo "$output"; false; }
	[ "$(cut -d' ' -f1 <<< "$ep" | tr '\n' ' ')" = "0 1 2 3 4 5 " ]
	# it learns: the last epoch's mean loss below the first's, accuracy above
	read -r _ loss0 acc0 <<< "$(sed -n 1p <<< "$ep")"
	read -r _ loss5 acc5 <<< "$(sed -n 6p <<< "$ep")"
	echo "loss $loss0 -> $loss5, accuracy $acc0 -> $acc5"
	awk -v a="$loss0" -v b="$loss5" 'BEGIN { exit !(b < a) }'
	awk -v a="$acc0" -v b="$acc5" 'BEGIN { exit !(b > a) }'
	# the FIFO is still a FIFO: nothing was written to disk in its place
	[ -p train.fifo ]
	# the checkpoint holds the reader's state: the epoch after the last
	run -0 /usr/bin/python3 -c 'import torch; d = torch.load("checkpoint.pt")["data"]; print(d["epoch"], d["step"])'
	[ "$output" = "6 0" ]
	run -0 refurb-dump --verify cache
}

@test "the README's wait \$chain gives the chain's status when a program of it fails" {
	first_run "$T/run"
	cd "$T/run"
	# the same lines, with refurb-partial refused (a bad spec) and a reader
	# that needs no stream; then what wait said
	sed -e "s/resize=72,randaug=n=2:m=9/resize=-1/" \
	    -e 's|^/usr/bin/python3 train.py train.fifo.*|cat train.fifo > /dev/null|' \
	    -e 's/^wait \$chain.*/wait $chain; echo "chain status $?"/' run.sh > fail.sh
	run -0 bash fail.sh
	[[ "${lines[-1]}" =~ ^chain\ status\ [1-9][0-9]*$ ]] || { echo "$output"; false; }
}

@test "the README's Ctrl-C and resume: resume.sh goes on at the checkpoint's step to the last epoch" {
	first_run "$T/run"
	cd "$T/run"
	# Ctrl-C on a terminal: SIGINT to the script's whole process group,
	# once the trainer has printed its second epoch (a checkpoint is there)
	setsid bash -e run.sh > out.txt 2>&1 &
	job=$!
	for _ in $(seq 900); do grep -q '^epoch 1:' out.txt && break; sleep 0.2; done
	grep -q '^epoch 1:' out.txt || { cat out.txt; false; }
	kill -INT -- -"$job"
	rc=0
	wait "$job" || rc=$?
	[ "$rc" -ne 0 ]
	[ -s checkpoint.pt ]
	run -0 /usr/bin/python3 -c 'import torch; d = torch.load("checkpoint.pt")["data"]; print(d["epoch"], d["step"])'
	read -r e s <<< "$output"
	[ "$e" -ge 1 ]
	run -0 bash -e resume.sh
	[[ "$output" == *"resumed at epoch $e step $s"* ]] || { echo "$output"; false; }
	last=$(epochs "$output" | tail -n 1)
	[ "${last%% *}" = 5 ]
	run -0 /usr/bin/python3 -c 'import torch; d = torch.load("checkpoint.pt")["data"]; print(d["epoch"], d["step"])'
	[ "$output" = "6 0" ]
}

@test "the README's torchvision recipe prints the spec its comment says" {
	/usr/bin/python3 -c 'import torchvision' 2>/dev/null ||
		skip "torchvision is not installed (python3-torchvision)"
	run -0 blocks "$TOP/README.md" "$T"
	run -0 /usr/bin/python3 "$T/recipe.py"
	[ "# $output" = "$(tail -n 1 "$T/recipe.py")" ]
}

@test "the README names the image formats read and the reader's DataLoader rule" {
	grep -q 'ImageFolder tree' "$TOP/README.md"
	grep -q 'DataLoader(ds, batch_size=None)' "$TOP/README.md"
}

@test "the README links pages that exist, and is short enough to read to the end" {
	for f in $(grep -o '](doc/[^)]*)' "$TOP/README.md" | sed 's/^](//; s/)$//'); do
		[ -f "$TOP/$f" ] || { echo "no $f"; false; }
	done
	[ "$(wc -l < "$TOP/README.md")" -le 250 ]
}

@test "make clean removes what make demo made (demo/) and the build" {
	run make -s -n -C "$TOP" clean
	[ "$status" -eq 0 ]
	[[ "$output" == *"rm -rf build demo"* ]]
}
