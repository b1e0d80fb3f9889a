#!/usr/bin/env bats
# Resume at a step: a trainer killed at a random step restarts the chain
# with refurb-plan --start E:S from the state it saved (RefurbDataset's
# state_dict) and gets, batch for batch, what the uninterrupted chain
# gives from there (refurb-plan(1) --start, refurb(7) RESUMING).

load helpers
bats_require_minimum_version 1.5.0

SPEC='resize=64,randaug=n=2:m=9'
FINAL='crop=48,flip'

setup_file() {
	set -o pipefail
	cd "$BATS_FILE_TMPDIR"
	make_train 50 3
	refurb-plan -q -b 8 -e 0-4 train.evict |
		refurb-partial -q -c whole.c -p "$SPEC" train.idx |
		refurb-final -q -p "$FINAL" -o whole.bin
}

setup() {
	set -o pipefail
	need_numpy
	"$PY" -c 'import torch' 2>/dev/null ||
		skip "torch is not installed (python3-torch): RefurbDataset not tested"
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	export PYTHONPATH="$TOP/python"
}

# trainer FIFO LOG STATE [STOP]: read the stream with RefurbDataset, one
# line per batch into LOG ("epoch step sha256"), the state after each
# batch into STATE; after STOP batches die at once (os._exit, no clean-up).
# With STATE present at the start, load it first.
trainer() {
	"$PY" - "$@" <<'EOF'
import hashlib, json, os, sys
from refurb_stream import RefurbDataset
fifo, log, state = sys.argv[1:4]
stop = int(sys.argv[4]) if len(sys.argv) > 4 else -1
ds = RefurbDataset(fifo)
if os.path.exists(state):
    ds.load_state_dict(json.load(open(state)))
n = 0
with open(log, "a") as out:
    for epoch in range(5):
        if ds.state_dict()["epoch"] >= 5:
            break
        for x, y in ds:
            h = hashlib.sha256(x.numpy().tobytes() + y.numpy().tobytes()).hexdigest()
            out.write("%d %d %s\n" % (ds.epoch, ds.step, h))
            out.flush()
            json.dump(ds.state_dict(), open(state + ".tmp", "w"))
            os.replace(state + ".tmp", state)
            n += 1
            if n == stop:
                os._exit(9)
EOF
}

# chain CACHE FIFO [refurb-plan options]: the chain in the background.
chain() {
	local cache=$1 fifo=$2
	shift 2
	refurb-plan -q -b 8 -e 0-4 "$@" train.evict |
		refurb-partial -q -c "$cache" -p "$SPEC" train.idx |
		refurb-final -q -p "$FINAL" -o "$fifo" &
}

@test "killed at a random step (several seeds): resumed with --start from the saved state, the batches are the uninterrupted run's" {
	trainer whole.bin "$T/whole.log" "$T/whole.state"
	[ "$(wc -l < "$T/whole.log")" -eq 35 ]    # 5 epochs of 7 batches
	# three random steps (seeds 1 to 3) of the 35, and the end of epoch 0
	stops="$(awk 'BEGIN { for (s = 1; s <= 3; s++) { srand(s); printf "%d ", 1 + int(rand() * 34) } }') 7"
	echo "stops: $stops"
	for stop in $stops; do
		rm -rf "$T/c" "$T/log" "$T/state" "$T/fifo"
		mkfifo "$T/fifo"
		chain "$T/c" "$T/fifo"
		run trainer "$T/fifo" "$T/log" "$T/state" "$stop"
		[ "$status" -eq 9 ]
		wait
		[ "$(wc -l < "$T/log")" -eq "$stop" ]
		start=$("$PY" -c 'import json, sys; s = json.load(open(sys.argv[1])); print("%d:%d" % (s["epoch"], s["step"]))' "$T/state")
		chain "$T/c" "$T/fifo" --start "$start"
		run trainer "$T/fifo" "$T/log" "$T/state"
		[ "$status" -eq 0 ]
		wait
		cmp "$T/log" "$T/whole.log" || { echo "stopped after $stop, --start $start"; false; }
		run refurb-dump --verify "$T/c"
		[ "$status" -eq 0 ]
	done
}

@test "--start: the plan is the tail of the whole plan; bad values refused" {
	refurb-plan -q -b 8 -e 0-4 train.evict > "$T/whole.plan"
	refurb-plan -q -b 8 -e 0-4 --start 2:3 train.evict > "$T/tail.plan"
	run -0 head -n 1 "$T/tail.plan"
	[[ "$output" == *" epochs=2-4 "*" start=3" ]]
	diff <(tail -n +2 "$T/tail.plan") <(awk '/^B 2 3 /{ p = 1 } p' "$T/whole.plan")
	# a whole plan has no start key (plans made before it are unchanged)
	run -1 grep -c 'start=' "$T/whole.plan"
	[ "$output" -eq 0 ]
	run refurb-plan -q -b 8 -e 0-4 --start 5:0 train.evict
	expect_fail 2 "refurb-plan: --start 5:0: epoch 5 is not in --epochs 0-4"
	run refurb-plan -q -b 8 -e 0-4 --start 2:7 train.evict
	expect_fail 1 "refurb-plan: train.evict: step 7: an epoch of 50 samples in batches of 8 has steps 0 to 6"
	for bad in 2 2: :3 2:x -1:0 2:-1 '2: 1'; do
		run refurb-plan -q -b 8 -e 0-4 --start "$bad" train.evict
		expect_fail 2 "refurb-plan: --start: '$bad' is not EPOCH:STEP"
	done
	# the readers refuse a start beyond the epoch
	sed '1s/ start=3$/ start=9/' "$T/tail.plan" > "$T/bad.plan"
	run refurb-partial -q -c "$T/c" -p "$SPEC" -i "$T/bad.plan" train.idx
	expect_fail 1 "refurb-partial: $T/bad.plan: line 1: start=9, but an epoch has 7 batches"
}
