#!/usr/bin/env bats
# The disk bound of refurb-cache(5), DISK SPACE: while refurb-final reads
# the cache as the chain runs, the cache takes at most (1 + 1/r) times
# its live records plus a small slack, at every r and at batch sizes where
# an epoch is fewer batches than the old grace of 64.  A cache on a tmpfs
# sized by that rule runs to the end (mounting needs root: skipped else).

load helpers
bats_require_minimum_version 1.5.0

SPEC='resize=96'
FINAL='crop=64'

setup_file() {
	set -o pipefail
	cd "$BATS_FILE_TMPDIR"
	make_dataset ds 120 3
	refurb-index -q -o train.idx ds
}

setup() {
	set -o pipefail
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
}

teardown() {
	if [ -n "${MNT:-}" ] && mountpoint -q "$MNT"; then
		umount "$MNT"
	fi
}

# run_chain CACHE R B EPOCHS [OPTION]: the whole chain, refurb-final
# reading; OPTION for refurb-partial (default --no-handover: every record
# through the cache, whose bound is the subject here).
run_chain() {
	refurb-evict -q -r "$2" -s 7 -o "$T/r$2.evict" train.idx
	refurb-plan -q -b "$3" -e "0-$4" "$T/r$2.evict" |
		refurb-partial -q -c "$1" "${5:---no-handover}" -p "$SPEC" train.idx |
		refurb-final -q -p "$FINAL" -o /dev/null
}

# bound_of CACHE: the bound in bytes refurb-dump --stats gives.
bound_of() {
	refurb-dump --stats "$1" > "$T/stats"
	awk '$1 == "disk" && $2 == "bytes" { print $9 }' "$T/stats"
}

@test "refurb-dump --stats: bytes on disk, live, the bound; within it after a run at r = 1, 3 with 1 and 15 batches an epoch" {
	for r in 1 3; do
		for b in 8 120; do
			rm -rf "$T/c"
			run_chain "$T/c" "$r" "$b" 8
			run refurb-dump --stats "$T/c"
			[ "$status" -eq 0 ]
			grep -q "^disk         .* MiB on disk, .* MiB live (.*x); bound (1 + 1/r) x live + 1.0 MiB = .* MiB (r = $r): within$" <<< "$output"
			grep -q "^read         by refurb-final (process [0-9]*) to the end of its plan (epoch 8 step $(( (120 + b - 1) / b - 1 )))$" <<< "$output"
			set -- $(awk '$1 == "disk" && $2 == "bytes" { print $3, $6, $9 }' <<< "$output")
			[ "$1" -le "$3" ]
			# the bound is (1 + 1/r) x live + 1 MiB + 64 bytes a sample
			[ "$3" -eq $(( $2 + $2 / r + 1048576 + 64 * 120 )) ]
		done
	done
}

@test "the default (records that die at once handed over in memory): at r = 3 within the bound, at r = 1 nothing live" {
	rm -rf "$T/c"
	run_chain "$T/c" 3 8 8 --inflight=2
	run refurb-dump --stats "$T/c"
	[ "$status" -eq 0 ]
	grep -q "^disk         .* MiB on disk, .* MiB live (.*x); bound (1 + 1/r) x live + 1.0 MiB = .* MiB (r = 3): within$" <<< "$output"
	rm -rf "$T/c"
	run_chain "$T/c" 1 8 8 --inflight=2
	run refurb-dump --stats "$T/c"
	[ "$status" -eq 0 ]
	grep -q "^live         0 records" <<< "$output"
	grep -q "^segments     0, 0.0 MiB on disk" <<< "$output"
	set -- $(du -sb "$T/c")
	[ "$1" -le 1048576 ]
}

# polled COMMAND...: run it in the background, polling the used bytes of
# the file system at $MNT every 10 ms: $peak the most, $st its status,
# its stderr in $T/err.
polled() {
	"$@" 2> "$T/err" &
	local pid=$! used
	peak=0
	while kill -0 "$pid" 2> /dev/null; do
		used=$(df -B1 --output=used "$MNT" | tail -n 1)
		if [ "$used" -gt "$peak" ]; then peak=$used; fi
		sleep 0.01
	done
	st=0
	wait "$pid" || st=$?
}

@test "a cache on a tmpfs sized by the man page's rule runs to the end, no ENOSPC, the peak within the bound (r = 1, 2, 3; batch 8 and 120; with and without the handover)" {
	[ "$(id -u)" -eq 0 ] || skip "mounting a tmpfs needs root"
	command -v mountpoint > /dev/null || skip "mountpoint (util-linux) is not installed"
	MNT="$T/mnt"
	mkdir -p "$MNT"
	for r in 1 2 3; do
		for b in 8 120; do
			rm -rf "$T/sizing"
			run_chain "$T/sizing" "$r" "$b" 9
			bound=$(bound_of "$T/sizing")
			[ "$bound" -gt 1048576 ]
			mount -t tmpfs -o "size=$bound" tmpfs "$MNT" ||
				skip "cannot mount a tmpfs here"
			# through the cache, then with the handover (records that die
			# at once in memory, refurb-partial's output pipe at 64 KiB)
			for opt in --no-handover --handover; do
				rm -rf "$MNT/c"
				polled run_chain "$MNT/c" "$r" "$b" 9 "$opt"
				echo "r $r batch $b $opt: bound $bound, peak $peak, status $st"
				cat "$T/err"
				[ "$st" -eq 0 ]
				[ ! -s "$T/err" ]
				[ "$peak" -le "$bound" ]
				run refurb-dump --verify "$MNT/c"
				[ "$status" -eq 0 ]
			done
			umount "$MNT"
		done
	done
}

@test "a run that starts just after another on its cache does not trust the position the old reader left: a slow reader gets every record from the cache" {
	rm -rf "$T/c"
	run_chain "$T/c" 3 8 5
	# the position of the run before, as if it had ended an instant ago
	touch "$T/c/read-position"
	refurb-plan -q -b 8 -e 0-5 "$T/r3.evict" |
		refurb-partial -q -c "$T/c" --no-handover -p "$SPEC" train.idx |
		refurb-final -p "$FINAL" 2> "$T/err" |
		{ sleep 2; cat > /dev/null; }
	cat "$T/err"
	run ! grep -q 'segment is gone' "$T/err"
	grep -q 'records recomputed 0,' "$T/err"
}

@test "a cache on a full disk: exit 1 naming the file, the reason and what the cache needs; consistent, and resumed once there is room" {
	[ "$(id -u)" -eq 0 ] || skip "mounting a tmpfs needs root"
	command -v mountpoint > /dev/null || skip "mountpoint (util-linux) is not installed"
	MNT="$T/mnt"
	mkdir -p "$MNT"
	mount -t tmpfs -o size=1m tmpfs "$MNT" || skip "cannot mount a tmpfs here"
	refurb-evict -q -r 3 -s 7 -o "$T/r3.evict" train.idx
	refurb-plan -q -b 8 -e 0-2 "$T/r3.evict" > "$T/plan"
	run sh -c "refurb-partial -c '$MNT/c' --no-handover -p '$SPEC' train.idx < '$T/plan' > /dev/null"
	expect_fail 1 "refurb-partial: $MNT/c/"
	[[ "${lines[0]}" == *": No space left on device (the cache needs up to (1 + 1/r) times its live records and a little more: refurb-cache(5), DISK SPACE; it is left consistent: resume once there is room)" ]]
	run refurb-dump --verify "$MNT/c"
	[ "$status" -eq 0 ]
	mount -o remount,size=64m "$MNT"
	refurb-partial -q -c "$MNT/c" --no-handover -p "$SPEC" train.idx < "$T/plan" > /dev/null
	run refurb-dump --verify "$MNT/c"
	[ "$status" -eq 0 ]
}

# within CACHE: refurb-dump --stats says the cache is within its bound.
within() {
	refurb-dump --stats "$1" > "$T/stats"
	grep '^disk  ' "$T/stats"
	grep -q "^disk         .*: within$" "$T/stats"
}

@test "the same plan run again and again on one cache (r = 3, 12 epochs): within the bound after each run, not 1x, 2x, 3x its live records" {
	rm -rf "$T/c"
	for run in 1 2 3 4; do
		run_chain "$T/c" 3 32 11
		echo "run $run"
		within "$T/c"
	done
}

@test "resumes at --start E:S and plans of other sizes and epochs on one cache: within the bound after each" {
	rm -rf "$T/c"
	run_chain "$T/c" 3 32 11
	for start in 4:1 9:2 0:3; do
		refurb-plan -q -b 32 -e 0-11 --start "$start" "$T/r3.evict" |
			refurb-partial -q -c "$T/c" --no-handover -p "$SPEC" train.idx |
			refurb-final -q -p "$FINAL" -o /dev/null
		echo "resumed at $start"
		within "$T/c"
	done
	run_chain "$T/c" 3 8 3
	within "$T/c"
	run_chain "$T/c" 3 120 20
	within "$T/c"
}

@test "a plan of another schedule (r = 2) on the cache of r = 3: refused, naming the schedule and --reset; --reset starts again within the bound" {
	rm -rf "$T/c"
	run_chain "$T/c" 3 32 5
	run run_chain "$T/c" 2 32 5
	expect_fail 1 "refurb-partial: $T/c: cache was made with a different schedule (another r, eviction seed, policy or shard of refurb-evict) (use --reset to empty it and start again, or give this plan a cache of its own)"
	run_chain "$T/c" 2 32 5 --reset
	within "$T/c"
}

@test "runs after runs on a tmpfs sized by the bound (the same plan 3 times, resumes, another batch size): no ENOSPC, the peak within the bound during each" {
	[ "$(id -u)" -eq 0 ] || skip "mounting a tmpfs needs root"
	command -v mountpoint > /dev/null || skip "mountpoint (util-linux) is not installed"
	rm -rf "$T/sizing"
	run_chain "$T/sizing" 3 32 11
	bound=$(bound_of "$T/sizing")
	MNT="$T/mnt"
	mkdir -p "$MNT"
	mount -t tmpfs -o "size=$bound" tmpfs "$MNT" || skip "cannot mount a tmpfs here"
	for run in 1 2 3 4:1 9:2 b16; do
		case "$run" in
		*:*) polled bash -c "set -o pipefail; refurb-plan -q -b 32 -e 0-11 --start $run '$T/r3.evict' |
			refurb-partial -q -c '$MNT/c' --no-handover -p '$SPEC' train.idx |
			refurb-final -q -p '$FINAL' -o /dev/null" ;;
		b16) polled run_chain "$MNT/c" 3 16 11 ;;
		*) polled run_chain "$MNT/c" 3 32 11 ;;
		esac
		echo "run $run: bound $bound, peak $peak, status $st"
		cat "$T/err"
		[ "$st" -eq 0 ]
		[ "$peak" -le "$bound" ]
	done
}

@test "a trainer gone mid-epoch (the stream closed): the chain stops within the bound, the dead segments it left deleted" {
	rm -rf "$T/c"
	refurb-evict -q -r 3 -s 7 -o "$T/r3.evict" train.idx
	for bytes in 10000000 7000000 12500000; do
		# the chain stops cleanly when its reader goes (EPIPE)
		run -0 bash -c "set -o pipefail; refurb-plan -q -b 32 -e 0-11 '$T/r3.evict' |
			refurb-partial -q -c '$T/c' --no-handover -p '$SPEC' train.idx |
			refurb-final -q -p '$FINAL' 2> /dev/null |
			dd of=/dev/null bs=100000 count=$((bytes / 100000)) iflag=fullblock status=none"
		echo "a trainer gone after $bytes bytes"
		within "$T/c"
	done
}
