#!/usr/bin/env bats
# Fault injection on the whole chain (issue 8, items 3 and 6): kill -9 of
# refurb-final and of refurb-partial at random points of multi-epoch
# runs, full disks (an LD_PRELOAD shim, and a real tmpfs when mount is
# allowed), two writers, refurb-final reading while refurb-partial
# compacts and deletes segments under it, and readers that close the
# stream early.  Every stream is compared batch by batch with the one an
# uninterrupted run writes (build/tools/stream_digest: a hash of every
# batch's labels, ids and pixels), so "resumable" means "identical".
#
# The random kill points are drawn from $RANDOM and printed: a failure
# says which ones to replay (FAULTS_SEED=N fixes the draw).
# tests/run: serial (kills at timed moments)

load helpers
bats_require_minimum_version 1.5.0
# a failure anywhere in a pipeline fails it (tests/lint-bats)
set -o pipefail

SPEC='resize=64,randaug=n=2:m=9'
FINAL='crop=56,flip'
# epochs 0-99 of 60 images, batches of 8: 800 batches.  The annotated
# plan (150 KiB) is larger than a pipe holds, so that refurb-partial is
# still running, blocked on its output, for the first half of a run.
LAST=99

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	make_train 60 3
	refurb-plan -q -b 8 -e 0-$LAST train.evict > plan.txt
	# the uninterrupted run every faulty one is compared with
	refurb-partial -q -c ref -p "$SPEC" train.idx < plan.txt |
		refurb-final -q -p "$FINAL" | "$BUILD_DIR/tools/stream_digest" > ref.txt
}

setup() {
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	D="$BUILD_DIR/tools/stream_digest"
	RANDOM=${FAULTS_SEED:-$$}
}

# chain FROM CACHE [PARTIAL-OPTIONS...]: plan epochs FROM-LAST, run
# partial and final, print the stream's digest.
chain() {
	local from=$1 cache=$2
	shift 2
	refurb-plan -q -b 8 -e "$from-$LAST" train.evict |
		refurb-partial -q -c "$cache" -p "$SPEC" "$@" train.idx |
		refurb-final -q -p "$FINAL" | "$D"
}

# same_batches DIGEST FROM: DIGEST's batches are the reference's batches
# of epochs FROM on, in order, byte for byte.
same_batches() {
	diff <(grep '^B' "$1") <(awk -v e="$2" '$1 == "B" && $2 >= e' ref.txt)
}

# same_prefix DIGEST: DIGEST's batches are the reference's first ones.
same_prefix() {
	local n
	n=$(grep -c '^B' "$1" || true)
	diff <(grep '^B' "$1") <(grep '^B' ref.txt | head -n "$n")
}

# stream_bytes: the size of the reference's stream (56x56x3 images).
stream_bytes() {
	awk '$1 == "B" { n++ } END { print n * (8 * 56 * 56 * 3 + 192) }' ref.txt
}

# resume_epoch DIGEST: the epoch to resume from, the one of its last
# complete batch (0 when it has none).
resume_epoch() {
	awk '$1 == "B" { e = $2 } END { print e + 0 }' "$1"
}

# wait_size FILE BYTES PID: until FILE has BYTES or PID has exited (at
# most two minutes).
wait_size() {
	local end=$((SECONDS + 120))
	while [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -lt "$2" ] &&
		kill -0 "$3" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do
		sleep 0.002
	done
}

@test "kill -9 of refurb-final at random points, resume: the same batches" {
	local total at ep pp fp
	total=$(stream_bytes)
	for round in 1 2 3 4; do
		at=$(( (RANDOM * 32768 + RANDOM) % (total * 9 / 10) + 4096 ))
		echo "round $round: kill refurb-final after $at bytes (FAULTS_SEED=${FAULTS_SEED:-$$})"
		rm -rf "$T/c" "$T/a" "$T/k.bin"
		mkfifo "$T/a"
		refurb-partial -c "$T/c" -p "$SPEC" train.idx < plan.txt > "$T/a" 2> "$T/p.err" &
		pp=$!
		refurb-final -q -p "$FINAL" < "$T/a" > "$T/k.bin" &
		fp=$!
		wait_size "$T/k.bin" "$at" "$fp"
		kill -9 "$fp" 2>/dev/null || true
		wait "$fp" || true
		# refurb-partial sees EPIPE: it stops cleanly and says so (unless
		# it had passed the whole plan on already)
		wait "$pp" || { cat "$T/p.err"; false; }
		grep -q "the cache is checkpointed and resumable" "$T/p.err" ||
			grep -q "^refurb-partial: 800 batches" "$T/p.err"
		run refurb-dump --verify "$T/c"
		[ "$status" -eq 0 ] || { echo "$output"; false; }
		# what was written before the kill is the reference's start
		"$D" "$T/k.bin" > "$T/k.txt" || true
		same_prefix "$T/k.txt"
		ep=$(resume_epoch "$T/k.txt")
		chain "$ep" "$T/c" > "$T/r.txt"
		grep -q '^END' "$T/r.txt"
		same_batches "$T/r.txt" "$ep"
	done
}

@test "kill -9 of refurb-partial mid-chain: refurb-final stops, resume gives the same batches" {
	local lines at ep pp fp feeder
	for round in 1 2 3; do
		# refurb-partial gets the plan up to a random line and then waits
		# for more, so that it is surely alive when it is killed: while
		# computing, flushing or writing one of those batches, or waiting
		lines=$(( RANDOM % 700 + 20 ))
		# within the first half of what those lines make
		at=$(head -n "$lines" plan.txt | grep -c '^B')
		at=$(( (RANDOM * 32768 + RANDOM) % (at * 8 * 56 * 56 * 3 / 2) ))
		echo "round $round: plan up to line $lines, kill refurb-partial after $at stream bytes"
		rm -rf "$T/c" "$T/a" "$T/in" "$T/k.bin"
		mkfifo "$T/a" "$T/in"
		(head -n "$lines" plan.txt; exec sleep 60) > "$T/in" 2> /dev/null &
		feeder=$!
		refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < "$T/in" > "$T/a" &
		pp=$!
		refurb-final -q -p "$FINAL" < "$T/a" > "$T/k.bin" 2> "$T/f.err" &
		fp=$!
		wait_size "$T/k.bin" "$at" "$fp"
		kill -0 "$pp"                     # alive until now
		kill -9 "$pp"
		wait "$pp" || true
		kill "$feeder" 2> /dev/null || true
		status=0
		wait "$fp" || status=$?
		# the plan is cut short: refurb-final says so, exit 1, no END
		[ "$status" -eq 1 ] || { echo "status $status"; cat "$T/f.err"; false; }
		grep -q "^refurb-final: (stdin): " "$T/f.err"
		run "$D" "$T/k.bin"
		[ "$status" -eq 1 ]
		"$D" "$T/k.bin" > "$T/k.txt" 2> /dev/null || true
		same_prefix "$T/k.txt"
		ep=$(resume_epoch "$T/k.txt")
		chain "$ep" "$T/c" > "$T/r.txt"
		same_batches "$T/r.txt" "$ep"
		run refurb-dump --verify "$T/c"
		[ "$status" -eq 0 ]
	done
}

@test "a deleted segment and a corrupt record are recomputed: same batches, counted" {
	refurb-plan -q -b 8 -e 0-5 train.evict |
		refurb-partial -q -c "$T/c" -p "$SPEC" train.idx > "$T/a.txt"
	# the segment of the records that die in epoch 6 (read in 3-5) goes,
	# and a payload byte of another record is flipped
	# (awk reads to the end: an early exit could kill refurb-dump with SIGPIPE)
	seg=$(refurb-dump "$T/c" | awk '!/^#/ && $6 == 6 && !n++ { print $1 }')
	rm "$T/c/$seg.seg"
	set -- $(refurb-dump "$T/c" | awk '!/^#/ && $6 == 7 && !n++ { print $1, $2 }')
	printf '\377' | dd of="$T/c/$1.seg" bs=1 seek=$(($2 + 100)) conv=notrunc 2> /dev/null
	refurb-final -p "$FINAL" < "$T/a.txt" 2> "$T/err" | "$D" > "$T/s.txt"
	diff <(grep '^B' "$T/s.txt") <(awk '$1 == "B" && $2 <= 5' ref.txt)
	grep -q "segment is gone" "$T/err"
	grep -q "checksum mismatch" "$T/err"
	[[ "$(tail -n 2 "$T/err")" =~ records\ recomputed\ ([1-9][0-9]*) ]]
	# every recomputed record was named on stderr
	[ "$(grep -c 'record recomputed from its image' "$T/err")" -eq "${BASH_REMATCH[1]}" ]
	# --strict: a bad record is fatal
	run sh -c "refurb-final --strict -p '$FINAL' < '$T/a.txt' > /dev/null"
	expect_fail 1 "refurb-final: "
}

@test "full disk (LD_PRELOAD shim): exit 1 naming the file, cache consistent, resume identical" {
	local shim="$BUILD_DIR/tools/enospc_shim.so" ep
	[ -f "$shim" ]
	mkdir -p "$T/d"
	local dir
	dir=$(cd "$T/d" && pwd -P)
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
	for budget in 20000 200000 $(( RANDOM * 40 + 300000 )) 1500000 3000000; do
		echo "budget $budget bytes"
		rm -rf "$dir/c"
		run env ENOSPC_DIR="$dir/c" ENOSPC_AFTER="$budget" LD_PRELOAD="$shim" \
			sh -c "refurb-partial -c '$dir/c' -p '$SPEC' train.idx < plan.txt > '$T/a.txt'"
		expect_fail 1 "refurb-partial: $dir/c/"
		[[ "${lines[0]}" == *": No space left on device (the cache needs up to (1 + 1/r) times its live records"* ]]
		run refurb-dump --verify "$dir/c"
		[ "$status" -eq 0 ] || { echo "$output"; false; }
		# the plan it passed on stops at a whole line, and resuming from
		# its epoch (the disk has room again) gives the reference's batches
		last=$(tail -c 1 "$T/a.txt")
		[ -z "$last" ]
		ep=$(awk '$1 == "B" { e = $2 } END { print e + 0 }' "$T/a.txt")
		chain "$ep" "$dir/c" > "$T/r.txt"
		same_batches "$T/r.txt" "$ep"
	done
}

@test "a segment fsync fails (EIO, in the background checkpoint): exit 1 naming the segment, resume identical" {
	local shim="$BUILD_DIR/tools/enospc_shim.so" dir ep
	mkdir -p "$T/d"
	dir=$(cd "$T/d" && pwd -P)
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
	run env ENOSPC_DIR="$dir/c" EIO_FSYNC=1 LD_PRELOAD="$shim" \
		sh -c "refurb-partial -c '$dir/c' -p '$SPEC' train.idx < plan.txt > '$T/a.txt'"
	expect_fail 1 "refurb-partial: $dir/c/"
	[[ "${lines[0]}" == *".seg: fsync failed: Input/output error (the device failed: see dmesg, check the disk); no image was counted bad for it"* ]]
	run refurb-dump --verify "$dir/c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	last=$(tail -c 1 "$T/a.txt")
	[ -z "$last" ]
	ep=$(awk '$1 == "B" { e = $2 } END { print e + 0 }' "$T/a.txt")
	chain "$ep" "$dir/c" > "$T/r.txt"
	same_batches "$T/r.txt" "$ep"
}

@test "full disk (a real 1 MiB tmpfs): the chain stops with a clear error, resume identical" {
	local mnt="$T/mnt" ep
	mkdir -p "$mnt"
	mount -t tmpfs -o size=1m refurb-faults "$mnt" 2> /dev/null ||
		skip "cannot mount a tmpfs here (not root, or not allowed); the shim test covers it"
	refurb-plan -q -b 8 -e 0-$LAST train.evict |
		(refurb-partial -c "$mnt/c" -p "$SPEC" train.idx 2> "$T/p.err"; echo $? > "$T/p.rc") |
		(refurb-final -q -p "$FINAL" 2> "$T/f.err"; echo $? > "$T/f.rc") |
		"$D" > "$T/k.txt" || true
	status=$(cat "$T/p.rc")
	lines=("$(head -n 1 "$T/p.err")")
	expect_fail 1 "refurb-partial: $mnt/c/"
	[[ "${lines[0]}" == *"No space left on device (the cache needs up to (1 + 1/r) times its live records"* ]]
	# refurb-final sees the plan end early: exit 1, the stream has no END
	[ "$(cat "$T/f.rc")" -eq 1 ]
	run ! grep -q '^END' "$T/k.txt"
	same_prefix "$T/k.txt"
	run refurb-dump --verify "$mnt/c"
	[ "$status" -eq 0 ] || { umount "$mnt"; echo "$output"; false; }
	# make room and resume from the epoch the stream stopped in
	mount -o remount,size=16m "$mnt"
	ep=$(resume_epoch "$T/k.txt")
	chain "$ep" "$mnt/c" > "$T/r.txt" || { umount "$mnt"; false; }
	umount "$mnt"
	same_batches "$T/r.txt" "$ep"
}

@test "two writers: refused while the first lives, the lock is free once it is killed -9" {
	local first
	mkfifo "$T/fifo"
	(head -n 3 plan.txt; exec sleep 30) > "$T/fifo" 2> /dev/null &
	local feeder=$!
	refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < "$T/fifo" > /dev/null 2>&1 &
	first=$!
	while ! grep -qs "^$first\$" "$T/c/lock"; do sleep 0.01; done
	run refurb-partial -c "$T/c" -p "$SPEC" train.idx < plan.txt
	expect_fail 1 "refurb-partial: $T/c: cache is locked by process $first"
	kill -9 "$first"
	wait "$first" || true
	kill "$feeder" 2> /dev/null || true
	# the lock file still names the dead writer; the kernel freed the lock
	grep -q "^$first\$" "$T/c/lock"
	chain 0 "$T/c" > "$T/r.txt"
	same_batches "$T/r.txt" 0
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
}

@test "refurb-final reads while refurb-partial compacts and deletes: no bad record, same batches" {
	local S='resize=160,randaug=n=2:m=9' stop healed=0 delay direct
	# big raw records in 1 MiB segments: every eviction group spans
	# segments; a run stopped in epoch 4 and resumed from epoch 3 leaves
	# records of epoch 4 that the resumed run drops as it starts (their
	# segments die then; copying compaction is in tests/unit/test_cache.c)
	refurb-plan -q -b 8 -e 0-11 train.evict > "$T/p.txt"
	refurb-partial -q -c "$T/ref" --codec raw --segment-size 1 -p "$S" train.idx < "$T/p.txt" |
		refurb-final -q -p 'crop=128,flip' | "$D" > "$T/ref.txt"
	stop=$(awk '$1 == "B" && $2 == 4 && $3 == 4 { print NR; exit }' "$T/p.txt")
	# delay:refurb-final options (the second round reads with O_DIRECT)
	for round in 0: 2000:--direct 50000:; do
		delay=${round%%:*} direct=${round#*:}
		rm -rf "$T/c"
		head -n "$stop" "$T/p.txt" |
			refurb-partial -q -c "$T/c" --codec raw --segment-size 1 -p "$S" train.idx > /dev/null 2>&1 || true
		# grace 1: dead segments go one batch after they die, while a
		# slow trainer (delay us per batch) keeps refurb-final behind
		refurb-plan -q -b 8 -e 3-11 train.evict |
			refurb-partial -c "$T/c" --no-handover --codec raw --segment-size 1 --grace 1 -p "$S" train.idx 2> "$T/p.err" |
			refurb-final $direct -p 'crop=128,flip' 2> "$T/f.err" | "$D" -s "$delay" > "$T/s.txt"
		echo "delay $delay $direct: $(tail -n 1 "$T/p.err")"
		[[ "$(tail -n 1 "$T/p.err")" =~ \ ([0-9]+)\ records\ compacted,\ ([1-9][0-9]*)\ segments\ deleted ]]
		grep -q '^END' "$T/s.txt"
		diff <(grep '^B' "$T/s.txt") <(awk '$1 == "B" && $2 >= 3' "$T/ref.txt")
		[[ "$(grep 'records recomputed' "$T/f.err")" =~ records\ recomputed\ ([0-9]+) ]]
		echo "  records recomputed by refurb-final: ${BASH_REMATCH[1]}"
		healed=$((healed + BASH_REMATCH[1]))
		# a recomputed record is only ever a deleted segment's
		awk '/record recomputed/ && !/segment is gone/ { print; bad = 1 }
			END { exit bad }' "$T/f.err"
		run refurb-dump --verify "$T/c"
		[ "$status" -eq 0 ]
	done
	# the slow trainer did make refurb-final read deleted segments
	[ "$healed" -gt 0 ]
}

@test "refurb-final does not keep deleted segments (their disk space) open" {
	local pp fp open_deleted
	mkfifo "$T/a" "$T/o"
	refurb-partial -q -c "$T/c" --grace 1 -p "$SPEC" train.idx < plan.txt > "$T/a" &
	pp=$!
	refurb-final -q -p "$FINAL" < "$T/a" > "$T/o" 2> /dev/null &
	fp=$!
	exec 7< "$T/o"
	head -c $(( $(stream_bytes) * 2 / 3 )) <&7 > /dev/null
	open_deleted=$(ls -l "/proc/$fp/fd" | grep -c '\.seg (deleted)' || true)
	cat <&7 > /dev/null
	exec 7<&-
	wait "$pp" "$fp"
	echo "deleted segments refurb-final held open: $open_deleted"
	# at most those read from in the last epoch (it held every one before)
	[ "$open_deleted" -le 4 ]
}

@test "the trainer stops reading (head -c): both stop cleanly, exit 0, the cache resumes" {
	# the plan from a file: refurb-plan writing into a pipe would die of
	# SIGPIPE when refurb-partial stops
	(refurb-partial -c "$T/c" -p "$SPEC" train.idx < plan.txt 2> "$T/p.err"; echo $? > "$T/p.rc") |
		(refurb-final -p "$FINAL" 2> "$T/f.err"; echo $? > "$T/f.rc") |
		head -c 1000 > /dev/null  # lint-bats: allow sigpipe (the test: refurb-final copes)
	[ "$(cat "$T/f.rc")" -eq 0 ] || { cat "$T/f.err"; false; }
	[ "$(cat "$T/p.rc")" -eq 0 ] || { cat "$T/p.err"; false; }
	grep -q "^refurb-final: the reader closed the stream at epoch 0" "$T/f.err"
	grep -q "^refurb-partial: the reader closed the stream at epoch [0-9]* (batch [0-9]*); the cache is checkpointed and resumable" "$T/p.err"
	[ -f "$T/c/records" ]
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
	chain 0 "$T/c" > "$T/r.txt"
	same_batches "$T/r.txt" 0
}

@test "the Python reader closes after 2 batches: both stop cleanly, the cache resumes" {
	need_numpy
	local ep
	(refurb-partial -c "$T/c" -p "$SPEC" train.idx < plan.txt 2> "$T/p.err"; echo $? > "$T/p.rc") |
		(refurb-final -p "$FINAL" 2> "$T/f.err"; echo $? > "$T/f.rc") |
		PYTHONPATH="$TOP/python" /usr/bin/python3 -c '
import sys
from refurb_stream import open_stream
with open_stream(sys.stdin.buffer) as s:
    for k, batch in enumerate(s):
        print(batch.epoch, batch.step, len(batch.ids))
        if k == 1:
            break
' > "$T/py.txt"
	[ "$(wc -l < "$T/py.txt")" -eq 2 ]
	[ "$(cat "$T/f.rc")" -eq 0 ] || { cat "$T/f.err"; false; }
	[ "$(cat "$T/p.rc")" -eq 0 ] || { cat "$T/p.err"; false; }
	grep -q "^refurb-final: the reader closed the stream" "$T/f.err"
	grep -q "the cache is checkpointed and resumable" "$T/p.err"
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
	ep=$(grep -o 'closed the stream at epoch [0-9]*' "$T/f.err" | grep -o '[0-9]*$')
	chain "$ep" "$T/c" > "$T/r.txt"
	same_batches "$T/r.txt" "$ep"
}
