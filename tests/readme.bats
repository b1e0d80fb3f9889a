#!/usr/bin/env bats
# The README's first run, as written: its ```sh blocks run in order in an
# empty directory holding a generated data/train/, its ```python FILE
# blocks are written to FILE first.  The programs come from the build,
# the reader from python/ (what `make install` gives a user).

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
	export PYTHONPATH="$TOP/python"
}

# blocks README OUTDIR: the sh blocks into OUTDIR/run.sh (in order), each
# python block with a file name into OUTDIR/NAME; prints the count of each.
blocks() {
	awk -v out="$2" '
	/^```sh$/ { into = out "/run.sh"; sh++; next }
	/^```python [^ ]+$/ { into = out "/" $2; py++; printf "" > into; next }
	/^```/ { into = ""; next }
	into != "" { print >> into }
	END { print sh, py }' "$1"
}

@test "the README's first run runs as written: index, FIFO, the chain and the trainer at the same time" {
	/usr/bin/python3 -c 'import torch' 2>/dev/null ||
		skip "torch is not installed (python3-torch): the README's trainer needs it"
	mkdir -p "$T/run"
	run blocks "$TOP/README.md" "$T/run"
	[ "$status" -eq 0 ]
	[ "$output" = "1 1" ]
	[ -s "$T/run/train.py" ]
	grep -q '^mkfifo train.fifo' "$T/run/run.sh"
	grep -q ' &' "$T/run/run.sh"
	mkdir -p "$T/run/data"
	make_dataset "$T/run/data/train" 60 3 > /dev/null
	cd "$T/run"
	set -o pipefail
	run bash -e run.sh
	[ "$status" -eq 0 ]
	# 90 epochs of one batch each, the last one printed by train.py
	[[ "$output" == *"epoch 0: 1 steps, loss "* ]]
	[[ "$output" == *"epoch 89: 1 steps, loss "* ]]
	[ "$(grep -c '^epoch [0-9]*: 1 steps, loss ' <<< "$output")" -eq 90 ]
	# the FIFO is still a FIFO: nothing was written to disk in its place
	[ -p train.fifo ]
	# the checkpoint holds the reader's state: the epoch after the last
	run /usr/bin/python3 -c 'import torch; print(torch.load("checkpoint.pt")["data"])'
	[ "$status" -eq 0 ]
	[[ "$output" == "{'epoch': 90, 'step': 0, 'plan': '"*"'}" ]]
	run refurb-dump --verify cache
	[ "$status" -eq 0 ]
}

@test "the README names the image formats read and the reader's DataLoader rule" {
	grep -q 'JPEG images' "$TOP/README.md"
	grep -q 'DataLoader(ds, batch_size=None)' "$TOP/README.md"
}

@test "make clean removes what make demo made (demo/) and the build" {
	run make -s -n -C "$TOP" clean
	[ "$status" -eq 0 ]
	[[ "$output" == *"rm -rf build demo"* ]]
}
