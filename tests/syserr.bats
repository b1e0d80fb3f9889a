#!/usr/bin/env bats
# System errors are not bad images (issue 33, item 3): running out of
# descriptors or memory, or a disk that fails, while refurb-partial and
# refurb-final open or read a shard, an image or a cache segment stops
# the program (exit 1, one message with the file, the error and the fix,
# the cache checkpointed) and never makes a bad sample or a recomputed
# record; EINTR and EAGAIN are retried; the open-file limit is checked
# before the first batch.  Faults come from a low `ulimit -n` and from
# build/tools/io_fault_shim.so (LD_PRELOAD: FAULT_PATH, FAULT_OPEN,
# FAULT_READ, FAULT_AIO, FAULT_EVERY_OTHER; see its source).

load helpers
bats_require_minimum_version 1.5.0
set -o pipefail

SPEC='resize=48'
FINAL='crop=40'

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	make_dataset ds 200 3 > /dev/null
	# 100 shards of 2 samples: more than a low limit keeps open
	"$TOP/scripts/make-shards" -n 100 ds sh > /dev/null
	refurb-index -q -o sh.idx --classes sh/classes.txt sh/train-*.tar
	refurb-evict -q -r 3 -s 7 -o sh.evict sh.idx
	refurb-plan -q -b 8 -e 0-3 sh.evict > plan.txt
	refurb-partial -q -c c -p "$SPEC" sh.idx < plan.txt |
		refurb-final -q -p "$FINAL" | "$BUILD_DIR/tools/stream_digest" > ref.txt
	rm -rf c
}

setup() {
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	D="$BUILD_DIR/tools/stream_digest"
	SHIM="$BUILD_DIR/tools/io_fault_shim.so"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
	# every test's cache is ./c (the stream's header names it)
	rm -rf c
}

# chain FROM [PARTIAL-OPTIONS...]: epochs FROM-3 through both programs
# on cache c, the stream's digest on stdout.
chain() {
	local from=$1
	shift
	refurb-plan -q -b 8 -e "$from-3" sh.evict |
		refurb-partial -q -c c -p "$SPEC" "$@" sh.idx |
		refurb-final -q -p "$FINAL" | "$D"
}

# same_batches DIGEST FROM: its batches are the reference's from epoch FROM.
same_batches() {
	diff <(grep '^B' "$1") <(awk -v e="$2" '$1 == "B" && $2 >= e' ref.txt)
}

# resumes PLAN-OUT: refurb-partial's output stops at a whole line, the
# cache verifies, and the chain resumed from its last epoch gives the
# reference's batches.
resumes() {
	local ep last
	last=$(tail -c 1 "$1")
	[ -z "$last" ]
	run refurb-dump --verify c
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	ep=$(awk '$1 == "B" { e = $2 } END { print e + 0 }' "$1")
	chain "$ep" > "$T/r.txt"
	grep -q '^END' "$T/r.txt"
	same_batches "$T/r.txt" "$ep"
}

@test "ulimit -n 16: refurb-partial stops before the first batch, naming the limit and the fix" {
	run bash -c "ulimit -n 16; refurb-partial -c c -p '$SPEC' sh.idx < plan.txt > '$T/a.txt'"
	expect_fail 1 "refurb-partial: the open-file limit is 16, "
	[[ "${lines[0]}" == *" more: raise it (ulimit -n "*" or more; refurb(7), RESOURCE LIMITS); nothing was run"* ]]
	[ "${#lines[@]}" -eq 1 ]
	# not a line of the plan passed on
	[ ! -s "$T/a.txt" ]
}

@test "ulimit -n 16: refurb-final stops before the first batch too" {
	refurb-partial -q -c c --no-handover -p "$SPEC" sh.idx < plan.txt > "$T/a.txt"
	run bash -c "ulimit -n 16; refurb-final -p '$FINAL' < '$T/a.txt' > '$T/s.bin'"
	expect_fail 1 "refurb-final: the open-file limit is 16, "
	[[ "${lines[0]}" == *"raise it (ulimit -n "*"; nothing was written: run it again once that is fixed" ]]
	[ ! -s "$T/s.bin" ]
}

@test "ulimit -n 40 and 100 shards: fewer shards kept open, said before the first batch, the same stream" {
	run bash -c "set -o pipefail; ulimit -n 40; refurb-plan -q -b 8 -e 0-3 sh.evict |
		refurb-partial -q -c c -p '$SPEC' sh.idx |
		refurb-final -q -p '$FINAL' | '$D' > '$T/s.txt'"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "${lines[0]}" == "refurb-partial: the open-file limit is 40: "*" of the 100 shard files are kept open, the others are opened again for every read (slower); ulimit -n "*" keeps them all open"* ]]
	diff "$T/s.txt" ref.txt
}

@test "a soft limit too low is raised toward the hard one: every shard kept open, nothing said, the same stream" {
	[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 1024 ] ||
		skip "the hard open-file limit is $(ulimit -Hn)"
	run bash -c "set -o pipefail; ulimit -Sn 40; refurb-plan -q -b 8 -e 0-3 sh.evict |
		refurb-partial -q -c c -p '$SPEC' sh.idx |
		refurb-final -q -p '$FINAL' | '$D' > '$T/s.txt'"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ -z "$output" ]
	diff "$T/s.txt" ref.txt
}

# partial_fault VAR=VALUE...: refurb-partial over the whole plan with the
# shim and these settings; its output in $T/a.txt.
partial_fault() {
	run env "$@" LD_PRELOAD="$SHIM" \
		sh -c "refurb-partial -c c -p '$SPEC' sh.idx < plan.txt > '$T/a.txt'"
}

@test "EMFILE opening a shard mid-run: exit 1 with the limit to raise, no bad sample, resume identical" {
	partial_fault FAULT_PATH=.tar FAULT_OPEN=EMFILE@60
	expect_fail 1 "refurb-partial: $PWD/sh/train-"
	[[ "${lines[0]}" == *".tar: cannot open the shard: Too many open files (the open-file limit is "*": raise it, e.g. ulimit -n "*"; no image was counted bad for it, the cache is checkpointed"* ]]
	[ "${#lines[@]}" -eq 1 ]
	grep -q '^B' "$T/a.txt"
	resumes "$T/a.txt"
}

@test "EIO reading a shard: exit 1 naming the shard and the member, no bad sample, resume identical" {
	partial_fault FAULT_PATH=.tar FAULT_READ=EIO@90
	expect_fail 1 "refurb-partial: $PWD/sh/train-"
	[[ "${lines[0]}" == *".jpg: read failed: Input/output error (the device failed: see dmesg, check the disk); no image was counted bad"* ]]
	[ "${#lines[@]}" -eq 1 ]
	resumes "$T/a.txt"
}

@test "ENOMEM opening an image file (an ImageFolder tree): exit 1, free memory, not a bad sample" {
	refurb-index -q -o "$T/tree.idx" ds
	refurb-evict -q -r 3 -s 7 -o "$T/tree.evict" "$T/tree.idx"
	refurb-plan -q -b 8 -e 0 "$T/tree.evict" > "$T/plan.txt"
	run env FAULT_PATH=/ds/ FAULT_OPEN=ENOMEM@20 LD_PRELOAD="$SHIM" \
		sh -c "refurb-partial -c '$T/c' -p '$SPEC' '$T/tree.idx' < '$T/plan.txt' > /dev/null"
	expect_fail 1 "refurb-partial: $PWD/ds/class"
	[[ "${lines[0]}" == *".jpg: cannot open: Cannot allocate memory (free memory, or use fewer threads with -j); no image was counted bad"* ]]
	[ "${#lines[@]}" -eq 1 ]
}

@test "EINTR and EAGAIN on shard reads, shard opens and AIO completions are retried: the same stream" {
	run env FAULT_PATH=.tar FAULT_READ=EAGAIN@3 FAULT_OPEN=EINTR@2 FAULT_EVERY_OTHER=1 \
		LD_PRELOAD="$SHIM" sh -c "refurb-partial -q -c c --no-handover -p '$SPEC' sh.idx < plan.txt > '$T/a.txt'"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ -z "$output" ]
	run env FAULT_PATH=.seg FAULT_AIO=EAGAIN@2 FAULT_EVERY_OTHER=1 LD_PRELOAD="$SHIM" \
		bash -c "set -o pipefail; refurb-final -q -p '$FINAL' < '$T/a.txt' | '$D' > '$T/s.txt'"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# (a recorded plan outlives the segments deleted after their epoch:
	# those records are recomputed, as always; no other message)
	run ! grep -v 'segment is gone' <<< "$output"
	diff "$T/s.txt" ref.txt
}

@test "refurb-final: EIO reading a segment (AIO), EMFILE opening one: exit 1, nothing recomputed or left out" {
	refurb-partial -q -c c --no-handover -p "$SPEC" sh.idx < plan.txt > "$T/a.txt"
	run env FAULT_PATH=.seg FAULT_AIO=EIO@40 LD_PRELOAD="$SHIM" \
		sh -c "refurb-final -p '$FINAL' < '$T/a.txt' > /dev/null"
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == "refurb-final: $PWD/c/"*".seg: record at segment "*": read failed: Input/output error (the device failed: see dmesg, check the disk); no sample was left out for it"* ]]
	# the records before it that are gone (deleted after their epoch)
	# are recomputed, as always; none for the error
	run ! grep -v 'segment is gone' <<< "${output%$'\n'*}"
	run env FAULT_PATH=.seg FAULT_OPEN=EMFILE@3 LD_PRELOAD="$SHIM" \
		sh -c "refurb-final -p '$FINAL' < '$T/a.txt' > /dev/null"
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == "refurb-final: $PWD/c/"*".seg: cannot open segment: Too many open files (the open-file limit is "* ]]
	run ! grep -q 'left out of its batch' <<< "$output"
}

@test "refurb-index: EMFILE or EIO reading an image stops it (no index, no file left out); EACCES is the file's" {
	run env FAULT_PATH=class0 FAULT_OPEN=EMFILE@50 LD_PRELOAD="$SHIM" \
		refurb-index -o "$T/t.idx" ds
	expect_fail 1 "refurb-index: class0"
	[[ "${lines[0]}" == *".jpg: cannot open: Too many open files (the open-file limit is "* ]]
	[ ! -e "$T/t.idx" ]
	run env FAULT_PATH=.tar FAULT_READ=EIO@50 LD_PRELOAD="$SHIM" \
		refurb-index -o "$T/t.idx" --classes sh/classes.txt sh/train-*.tar
	expect_fail 1 "refurb-index: sh/train-"
	[[ "${lines[0]}" == *": Input/output error (the device failed: see dmesg, check the disk)" ]]
	[ ! -e "$T/t.idx" ]
	# a file that cannot be read for its own sake is left out, as always
	run env FAULT_PATH=class0 FAULT_OPEN=EACCES@50 LD_PRELOAD="$SHIM" \
		refurb-index -o "$T/t.idx" ds
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" =~ indexed\ [0-9]+\ of\ 200\ files\ in\ 3\ classes\ \(([0-9]+)\ bad,\ left\ out\) ]]
	[ "${BASH_REMATCH[1]}" -gt 100 ]
	grep -q "Permission denied" <<< "$output"
}
