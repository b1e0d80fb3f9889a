#!/usr/bin/env bats
# python/refurb_stream/launch.py: one chain per rank from RANK/WORLD_SIZE,
# equal steps and full coverage over the ranks, clean stops (early break,
# crash, kill -9 of the trainer), failures reported with their stderr,
# resume from an epoch with the same batches.

load helpers
bats_require_minimum_version 1.5.0

setup_file() {
	make_dataset "$BATS_FILE_TMPDIR/ds" 31 3
	refurb-index -q -o "$BATS_FILE_TMPDIR/ds.idx" "$BATS_FILE_TMPDIR/ds"
}

# a test that fails before it kills its background trainer must not
# leave it (and its chain) running: teardown kills what is listed in bg
teardown() {
	[ -s "$T/bg" ] || return 0
	kill -9 $(cat "$T/bg") 2> /dev/null || true
}

setup() {
	need_numpy
	IDX="$BATS_FILE_TMPDIR/ds.idx"
	T="$BATS_TEST_TMPDIR"
	R="$TOP/tests/dist/read_rank.py"
	export PYTHONPATH="$TOP/python"
}

# no_chain_left DIR: no refurb program has DIR in its command line (every
# program of a rank's chain names its cache); waits up to 5 s.
no_chain_left() {
	for _ in $(seq 50); do
		pgrep -f -- "refurb-[a-z]+ .*$1" > /dev/null || return 0
		sleep 0.1
	done
	echo "left running:" >&2
	pgrep -a -f -- "refurb-[a-z]+ .*$1" >&2
	return 1
}

@test "3 ranks: the same steps each, every id in every epoch, one pad per smaller shard" {
	# without --even: 31 over 3 is 10, 10 and 11, in batches of 5: 2, 2, 3
	for k in 0 1 2; do
		RANK=$k WORLD_SIZE=3 "$PY" "$R" "$T/n$k" "$IDX" "$T/cn" --batch 5 --even none
	done
	[ "$(cat "$T"/n? | wc -l)" -eq 21 ]
	[ "$(for k in 0 1 2; do wc -l < "$T/n$k"; done | sort -u | wc -l)" -eq 2 ]
	for k in 0 1 2; do
		RANK=$k WORLD_SIZE=3 "$PY" "$R" "$T/r$k" "$IDX" "$T/cache" --batch 5
	done
	# with pad: 11 each, 3 batches (5, 5, 1) on every rank
	for k in 0 1 2; do
		[ "$(cut -d' ' -f1 "$T/r$k" | uniq -c | awk '{ print $1 }' | sort -u)" = 3 ]
		[ "$(awk '{ s += $3 } END { print s }' "$T/r$k")" -eq 33 ]
	done
	for e in 0 1 2; do
		[ "$(cat "$T"/r? | awk -v e=$e '$1 == e { print $4 }' | tr ',' '\n' | sort -u | wc -l)" -eq 31 ]
		[ "$(cat "$T"/r? | awk -v e=$e '$1 == e { print $4 }' | tr ',' '\n' | wc -l)" -eq 33 ]
	done
	ls -d "$T"/cache/shard-0-of-3 "$T"/cache/shard-1-of-3 "$T"/cache/shard-2-of-3
	no_chain_left "$T/cache"
}

@test "resume from an epoch gives the same batches as the whole run" {
	RANK=1 WORLD_SIZE=2 "$PY" "$R" "$T/whole" "$IDX" "$T/c1" --epochs 4
	RANK=1 WORLD_SIZE=2 "$PY" "$R" "$T/part" "$IDX" "$T/c2" --epochs 4 --stop-after 5
	no_chain_left "$T/c2"
	RANK=1 WORLD_SIZE=2 "$PY" "$R" "$T/rest" "$IDX" "$T/c2" --epochs 4 --start-epoch 1
	[ "$(wc -l < "$T/part")" -eq 5 ]
	diff <(awk '$1 >= 1' "$T/whole") "$T/rest"
	# and from a fresh cache (a node replaced): the same bytes
	RANK=1 WORLD_SIZE=2 "$PY" "$R" "$T/fresh" "$IDX" "$T/c3" --epochs 4 --start-epoch 2
	diff <(awk '$1 >= 2' "$T/whole") "$T/fresh"
}

@test "resume at a step of an epoch (start_step) gives the rest of the whole run" {
	RANK=1 WORLD_SIZE=2 "$PY" "$R" "$T/whole" "$IDX" "$T/c1" --epochs 3
	# a run stopped after step 1 of epoch 1 resumes at step 2 of epoch 1
	RANK=1 WORLD_SIZE=2 "$PY" "$R" "$T/part" "$IDX" "$T/c2" --epochs 3 --stop-after 6
	no_chain_left "$T/c2"
	[ "$(tail -n 1 "$T/part" | cut -d' ' -f1-2)" = "1 1" ]
	RANK=1 WORLD_SIZE=2 "$PY" "$R" "$T/rest" "$IDX" "$T/c2" --epochs 3 --start-epoch 1 --start-step 2
	[ "$(head -n 1 "$T/rest" | cut -d' ' -f1-2)" = "1 2" ]
	diff <(awk '$1 > 1 || ($1 == 1 && $2 >= 2)' "$T/whole") "$T/rest"
	# a step past the epoch's batches is the plan's error, raised as ChainError
	run -3 env RANK=1 WORLD_SIZE=2 "$PY" "$R" "$T/past" "$IDX" "$T/c2" --epochs 3 --start-epoch 1 --start-step 9
	[[ "$output" == *refurb-plan* ]]
	[[ "$output" == *"step 9: an epoch of"* ]]
	run -1 env RANK=1 WORLD_SIZE=2 "$PY" "$R" "$T/neg" "$IDX" "$T/c2" --epochs 3 --start-step -1
	[[ "$output" == *"start_step -1 < 0"* ]]
}

@test "a trainer that breaks out, crashes or is killed with -9 leaves no refurb process" {
	RANK=0 WORLD_SIZE=2 "$PY" "$R" "$T/a" "$IDX" "$T/ca" --stop-after 2
	no_chain_left "$T/ca"
	run -4 env RANK=0 WORLD_SIZE=2 "$PY" "$R" "$T/b" "$IDX" "$T/cb" --crash-after 2
	[[ "$output" == *"the trainer crashed"* ]]
	no_chain_left "$T/cb"
	RANK=0 WORLD_SIZE=2 "$PY" "$R" "$T/c" "$IDX" "$T/cc" --hang-after 1 &
	pid=$!
	echo $pid >> "$T/bg"
	for _ in $(seq 600); do [ -s "$T/c" ] && break; sleep 0.1; done
	[ -s "$T/c" ]
	pgrep -f -- "refurb-final .*$T/cc" > /dev/null # runs while the trainer sleeps
	kill -9 $pid
	wait $pid || true
	no_chain_left "$T/cc"
	# the cache is left resumable: the next run completes
	RANK=0 WORLD_SIZE=2 "$PY" "$R" "$T/d" "$IDX" "$T/cc"
	[ "$(wc -l < "$T/d")" -eq 12 ]
}

@test "kill -9 of a trainer whose forked child holds the stream: the chain dies with the trainer" {
	# the child keeps the pipe open, so no EPIPE stops refurb-final: only
	# PR_SET_PDEATHSIG does
	RANK=0 WORLD_SIZE=2 "$PY" "$R" "$T/a" "$IDX" "$T/ca" --epochs 40 --hang-after 1 \
		--fork-holder "$T/holder" &
	pid=$!
	echo $pid >> "$T/bg"
	for _ in $(seq 600); do
		if [ -s "$T/a" ] && [ -s "$T/holder" ]; then break; fi
		sleep 0.1
	done
	[ -s "$T/holder" ]
	sleep 1
	pgrep -f -- "refurb-final .*$T/ca" > /dev/null
	kill -9 $pid
	wait $pid || true
	no_chain_left "$T/ca"
	kill "$(cat "$T/holder")"
}

@test "a chain killed with -9 or failing is reported with its program and stderr" {
	RANK=0 WORLD_SIZE=2 "$PY" "$R" "$T/a" "$IDX" "$T/ca" --hang-after 1 --epochs 2 &
	pid=$!
	echo $pid >> "$T/bg"
	for _ in $(seq 600); do [ -s "$T/a" ] && break; sleep 0.1; done
	kill $pid; wait $pid || true
	# kill -9 refurb-partial while the trainer reads
	RANK=0 WORLD_SIZE=2 "$PY" - "$IDX" "$T/cb" > "$T/out" 2>&1 <<'PY' || true
import os, signal, sys
from refurb_stream import launch, ChainError
chain = launch(sys.argv[1], sys.argv[2], "resize=32", "crop=24", reuse=2, epochs=50,
               batch_size=4, seed=7)
try:
    for i, b in enumerate(chain):
        if i == 1:
            os.kill(chain.procs[1].pid, signal.SIGKILL)
    print("no error")
except ChainError as e:
    print("ChainError:", e.program, e.status)
    print(e)
PY
	grep -q '^ChainError: refurb-partial -9$' "$T/out"
	grep -q 'refurb-partial was killed by signal 9' "$T/out"
	no_chain_left "$T/cb"
	# a pipeline refurb-partial refuses: its message comes along
	run ! env RANK=0 WORLD_SIZE=2 "$PY" "$R" "$T/c" "$IDX" "$T/cc" --partial 'resize=32,bogus'
	[[ "$output" == *"refurb-partial exited with status"* ]]
	[[ "$output" == *"bogus"* ]]
	no_chain_left "$T/cc"
}

@test "bad rank variables and arguments are errors that say so" {
	run ! env RANK=2 WORLD_SIZE=2 "$PY" "$R" "$T/a" "$IDX" "$T/c"
	[[ "$output" == *"ValueError: rank 2 is not in 0..1 (WORLD_SIZE 2)"* ]]
	run ! env RANK=x WORLD_SIZE=2 "$PY" "$R" "$T/a" "$IDX" "$T/c"
	[[ "$output" == *"RANK='x' is not an integer"* ]]
	run ! env RANK=0 WORLD_SIZE=2 "$PY" "$R" "$T/a" "$IDX" "$T/c" --even half
	[[ "$output" == *"even must be 'pad', 'drop' or 'none'"* ]]
	run -3 env RANK=0 WORLD_SIZE=2 "$PY" "$R" "$T/a" "$T/nope.idx" "$T/c"
	[[ "$output" == *"refurb-evict exited with status 1"*"nope.idx"* ]]
	no_chain_left "$T/c"
}

@test "Slurm's variables when torchrun's are not set; -j from the CPUs of the rank" {
	env -u RANK -u WORLD_SIZE SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=0 "$PY" -c '
from refurb_stream import rank_from_env
from refurb_stream.launch import cpus_for_rank, split_threads
r = rank_from_env()
assert (r.rank, r.world_size, r.local_rank) == (1, 2, 0), r
assert split_threads(1) == (1, 1) and split_threads(4) == (3, 1) and split_threads(8) == (6, 2)
assert cpus_for_rank(1) >= 1
'
	run taskset -c 0 env RANK=0 WORLD_SIZE=1 "$PY" -c '
from refurb_stream.launch import cpus_for_rank; print(cpus_for_rank(4))'
	[ "$status" -eq 0 ]
	[ "$output" = 1 ]
}

@test "launch() yields int64 labels, as RefurbDataset does (torch.from_numpy takes them)" {
	RANK=0 WORLD_SIZE=1 "$PY" - "$IDX" "$T/c" <<'PY'
import sys
import numpy as np
from refurb_stream import launch
with launch(sys.argv[1], sys.argv[2], "resize=32", "crop=24", reuse=2, epochs=1,
            batch_size=4, seed=7) as chain:
    for b in chain:
        assert b.labels.dtype == np.int64, b.labels.dtype
        assert b.ids.dtype == np.uint32, b.ids.dtype
        try:
            import torch
        except ImportError:
            continue
        assert torch.from_numpy(b.labels).dtype == torch.int64
PY
}

@test "a checkpoint (state_dict) resumes with launch(state=...); one of another plan is refused, naming what differs" {
	run -0 --separate-stderr "$PY" - "$IDX" "$T" <<'PY'
import sys, warnings
from refurb_stream import launch, StreamError
from refurb_stream.launch import Rank
warnings.simplefilter("error", UserWarning)
idx, t = sys.argv[1], sys.argv[2]
rank = Rank(0, 1, 0, 1)
def run(cache, reuse=3, stop=None, **kw):
    got = []
    with launch(idx, t + "/" + cache, "resize=40", "crop=32,flip", reuse=reuse, epochs=3,
                batch_size=4, seed=7, rank=rank, **kw) as chain:
        for images, labels, ids, epoch, step in chain:
            got.append((epoch, step, images.tobytes(), labels.tobytes()))
            if len(got) == stop:
                return got, chain.state_dict()
    return got, chain.state_dict()
whole, end = run("w")
print("end", end["epoch"], end["step"])
part, state = run("p", stop=10)          # 8 batches an epoch: epoch 1 step 2 next
print("state", state["epoch"], state["step"], sorted(state["identity"])[:2])
rest, _ = run("p", state=state)
print("rest", rest == whole[10:])
try:
    run("p2", reuse=2, state=state)   # a fresh cache (the same one refuses the schedule)
    print("r=2 accepted")
except StreamError as e:
    print("refused:", "with r=3, this stream has r=2" in str(e), "shard-0-of-1" in str(e))
try:
    run("p", state=state, start_epoch=2)
except ValueError as e:
    print("conflict:", str(e))
PY
	[ "${lines[0]}" = "end 3 0" ]
	[ "${lines[1]}" = "state 1 2 ['balance', 'batch-size']" ]
	[ "${lines[2]}" = "rest True" ]
	[ "${lines[3]}" = "refused: True True" ]
	[[ "${lines[4]}" == "conflict: state is at epoch 1 step 2, start_epoch and start_step say 2:0"* ]] || false
	no_chain_left "$T/p"
	no_chain_left "$T/p2"
}
