#!/usr/bin/env bats
# DistributedDataParallel over per-rank refurb chains, started by the real
# torchrun (Debian's python3-torch, gloo on CPU): 2 ranks train a small CNN
# for 3 epochs through refurb_stream.launch.  Checks equal steps on every
# rank, that the ranks together see every sample once per epoch (plus the
# pad), that a job whose rank lost its refurb-partial to kill -9 resumes
# from its last epoch with the same batches, and that no refurb process
# outlives the job, whether it ends, fails or is killed.
#
# Debian's torchrun (torch 1.13 on Python 3.11) crashes before it starts
# any rank with its default --redirects 0 --tee 0 ('NoneType' object has no
# attribute 'get' in to_map: Python 3.11's IntFlag no longer lists the
# zero member, so Std.from_str("0") is None); --redirects 2 --tee 2 (the
# ranks' stderr to log files and to the console) avoids that code path.
# tests/run: serial (TCP ports and torch processes on every core)

load helpers
bats_require_minimum_version 1.5.0

TORCHRUN_FIX="--redirects 2 --tee 2"

# torchrun_missing: why torchrun cannot run a job here, or nothing
torchrun_missing() {
	local why
	why=$(ddp_missing)
	[ -z "$why" ] || { echo "$why"; return 0; }
	command -v torchrun > /dev/null ||
		echo "torchrun is not installed (python3-torch; scripts/deps --dist)"
	return 0
}

# train OUT CACHE [ddp_train options]: one torchrun job of 2 ranks, its
# rendezvous on a free port (--standalone always takes port 29400, which
# another job on the machine may hold).
train() {
	local out="$1" cache="$2" port
	shift 2
	mkdir -p "$out"
	port=$(free_ports 1)
	PYTHONPATH="$TOP/python" timeout 300 torchrun --nnodes 1 --nproc_per_node 2 \
		--master_addr 127.0.0.1 --master_port "$port" \
		$TORCHRUN_FIX "$TOP/tests/dist/ddp_train.py" \
		"$out" "$IDX" "$cache" "$@"
}

setup_file() {
	# bats 1.8 cannot skip in setup_file: every test's setup() skips instead
	local why
	why=$(torchrun_missing)
	[ -z "$why" ] || return 0
	make_dataset "$BATS_FILE_TMPDIR/ds" 65 3
	refurb-index -q -o "$BATS_FILE_TMPDIR/ds.idx" "$BATS_FILE_TMPDIR/ds"
	IDX="$BATS_FILE_TMPDIR/ds.idx"
	# the reference: an uninterrupted job
	train "$BATS_FILE_TMPDIR/ref" "$BATS_FILE_TMPDIR/ref-cache" \
		> "$BATS_FILE_TMPDIR/ref.out" 2>&1 || true
}

# a test that fails before its background job ends must not leave it
# running: torchrun stops its ranks on SIGTERM, their chains die with them
teardown() {
	[ -s "$T/bg" ] || return 0
	kill $(cat "$T/bg") 2> /dev/null || true
}

setup() {
	set -o pipefail
	skip_if_missing torchrun_missing
	IDX="$BATS_FILE_TMPDIR/ds.idx"
	REF="$BATS_FILE_TMPDIR/ref"
	T="$BATS_TEST_TMPDIR"
}

# no_chain_left DIR: no refurb program names DIR (waits up to 10 s).
no_chain_left() {
	for _ in $(seq 100); do
		pgrep -f -- "refurb-[a-z]+ .*$1" > /dev/null || return 0
		sleep 0.1
	done
	pgrep -a -f -- "refurb-[a-z]+ .*$1" >&2
	return 1
}

# wait_for FILE PATTERN JOB OUT: FILE gets a line matching PATTERN while
# the background JOB runs (300 s at most: torch starts slowly on a loaded
# machine); if JOB ends first or time runs out, OUT (its output) goes to
# stderr and the test fails.
wait_for() {
	for _ in $(seq 3000); do
		if grep -qE -- "$2" "$1" 2> /dev/null; then return 0; fi
		kill -0 "$3" 2> /dev/null || break
		sleep 0.1
	done
	echo "no '$2' in $1; the job's output:" >&2
	grep -v '^ *\(time\|host\) *:' "$4" >&2
	return 1
}

@test "torchrun, 2 ranks, 3 epochs: the same steps on every rank, every sample once per epoch plus one pad" {
	[ -e "$REF/rank-0.done" ] || { cat "$BATS_FILE_TMPDIR/ref.out" >&2; false; }
	# 65 samples in 2 shards of 32 and 33: 4 and 5 batches of 8 without
	# --even, a DDP job that hangs; with --even pad: 33 each, 5 steps
	[ "$(cat "$REF/rank-0.done")" = "steps 15 epochs 0-2" ]
	[ "$(cat "$REF/rank-1.done")" = "steps 15 epochs 0-2" ]
	for k in 0 1; do
		[ "$(awk '{ print $1 }' "$REF/rank-$k.log" | uniq -c | awk '{ print $1 }' | sort -u)" = 5 ]
	done
	for e in 0 1 2; do
		awk -v e=$e '$1 == e { print $4 }' "$REF"/rank-?.log | tr ',' '\n' | sort -n > "$T/ids"
		[ "$(wc -l < "$T/ids")" -eq 66 ]                  # 2 x 33
		[ "$(sort -u "$T/ids" | wc -l)" -eq 65 ]          # every sample
		[ "$(seq 0 64)" = "$(sort -nu "$T/ids")" ]
		[ "$(uniq -d "$T/ids" | wc -l)" -eq 1 ]           # the one pad
	done
	no_chain_left "$BATS_FILE_TMPDIR/ref-cache"
}

@test "torchrun: ranks whose indexes list the same images in another order stop on the first batch, naming the field" {
	# rank 1 reads an index of the same 65 images in reverse order: the
	# ranks' shards would overlap; check_ranks_agree stops both
	(
		set -o pipefail
		refurb-dump "$IDX" | grep '^#'
		refurb-dump "$IDX" | grep -v '^#' | tac
	) > "$T/rev.tsv"
	refurb-index -q -o "$T/rev.idx" --list "$T/rev.tsv"
	run ! train "$T/run" "$T/cache" --rank1-index "$T/rev.idx"
	[[ "$output" == *"rank 0: rank 1's stream has index_identity "* ]]
	[[ "$output" == *"rank 1: rank 1's stream has index_identity "* ]]
	[[ "$output" == *"refurb(7), MULTIPLE NODES"* ]]
	[ ! -e "$T/run/rank-0.done" ]
	[ ! -e "$T/run/rank-1.done" ]
	[ ! -s "$T/run/rank-0.log" ]
	no_chain_left "$T/cache"
}

@test "torchrun: kill -9 of one rank's chain fails the job, no refurb process is left; the rerun resumes from the last epoch with the same batches" {
	# 30 epochs planned, a slow trainer: the chains are running at epoch 1
	train "$T/run" "$T/cache" --epochs 30 --step-sleep 0.2 --chain-log "$T/chains" \
		> "$T/out" 2>&1 &
	job=$!
	echo $job >> "$T/bg"
	wait_for "$T/run/rank-1.log" '^1 1 ' $job "$T/out"
	[ -s "$T/run/checkpoint.pt" ]
	# rank 1's chain: refurb-plan, -partial, -final (those still running:
	# refurb-final at least, which waits for the trainer to read)
	pids=$(awk '$1 == 1 { print $2, $3, $4 }' "$T/chains")
	[ "$(ps -o args= -p "${pids##* }" | grep -c '^[^ ]*refurb-final ')" -eq 1 ]
	kill -9 $pids 2> /dev/null || true
	status=0
	wait $job || status=$?
	[ "$status" -ne 0 ]
	grep -qE "rank 1: refurb-(plan|partial|final) was killed by signal 9" "$T/out"
	no_chain_left "$T/cache"
	# nothing was read from a segment deleted under refurb-final's feet
	run ! grep -q 'segment is gone' "$T/out"
	# resume: the same command with --resume, the same caches; it starts
	# after the last epoch rank 0 saved (1 or 2 by then)
	mkdir "$T/killed"
	mv "$T"/run/rank-*.log "$T/killed"
	train "$T/run" "$T/cache" --epochs 30 --resume > "$T/out2" 2>&1
	start=$(sed -n 's/^steps [0-9]* epochs \([0-9]*\)-29$/\1/p' "$T/run/rank-0.done")
	[ "$start" -ge 1 ]
	[ "$start" -le 2 ]
	[ "$(cat "$T/run/rank-0.done")" = "steps $(( (30 - start) * 5 )) epochs $start-29" ]
	[ "$(cat "$T/run/rank-1.done")" = "$(cat "$T/run/rank-0.done")" ]
	# the epochs it redid are those of the uninterrupted job, byte for byte
	for k in 0 1; do
		diff <(awk -v s=$start '$1 >= s' "$REF/rank-$k.log") <(awk '$1 <= 2' "$T/run/rank-$k.log")
	done
	no_chain_left "$T/cache"
}

@test "torchrun: kill -9 of a rank's trainer ends the job and every chain with it" {
	train "$T/run" "$T/cache" --epochs 40 --chain-log "$T/chains" > "$T/out" 2>&1 &
	job=$!
	echo $job >> "$T/bg"
	wait_for "$T/run/rank-0.log" '^0 1 ' $job "$T/out"
	final=$(awk '$1 == 0 { print $4 }' "$T/chains")
	trainer=$(ps -o ppid= -p "$final" | tr -d ' ')
	[ "$(ps -o args= -p "$trainer" | grep -c 'ddp_train.py')" -eq 1 ]
	kill -9 "$trainer"
	status=0
	wait $job || status=$?
	[ "$status" -ne 0 ]
	no_chain_left "$T/cache"
	[ ! -e "$T/run/rank-1.done" ]
}
