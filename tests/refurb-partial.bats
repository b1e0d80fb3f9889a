#!/usr/bin/env bats
# refurb-partial: the cache it builds, determinism, crash and resume,
# write amplification, lock, mismatch, bad images, bad input.

load helpers
bats_require_minimum_version 1.5.0
# a failure anywhere in a pipeline fails it (tests/lint-bats)
set -o pipefail

SPEC='resize=64,randaug=n=2:m=9'

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	make_train 60 3
	refurb-plan -q -b 8 -e 0-6 train.evict > plan.txt
}

setup() {
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
}

@test "--help, --version, usage errors" {
	run refurb-partial --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Usage: refurb-partial"* ]]
	# the help is printed as is, not through printf: no doubled %
	for p in index evict plan partial final dump advise; do
		help=$(refurb-$p --help)
		[[ "$help" != *%%* ]]
		# and ends with an example of the program at work
		example=$(sed -n '/^Example:$/,/^$/p' <<< "$help")
		[[ "$example" == *"refurb-$p "* ]]
	done
	run refurb-partial --version
	[ "$status" -eq 0 ]
	run refurb-partial -p "$SPEC" train.idx
	expect_fail 2 "refurb-partial: no cache directory"
	run refurb-partial -c "$T/c" train.idx
	expect_fail 2 "refurb-partial: no partial pipeline"
	run refurb-partial -c "$T/c" -p "$SPEC"
	expect_fail 2 "refurb-partial: no index given"
	run refurb-partial -c "$T/c" -p "$SPEC" --codec lz4 train.idx
	expect_fail 2 "refurb-partial: --codec: unknown codec 'lz4'"
}

@test "pipeline spec error: exit 2 pointing at it" {
	run refurb-partial -c "$T/c" -p 'resize=64,blur' train.idx < plan.txt
	[ "$status" -eq 2 ]
	[[ "$output" == *"blur"* ]]
}

@test "normalize in the partial pipeline is refused" {
	run refurb-partial -c "$T/c" -p 'resize=64,normalize' train.idx < plan.txt
	[ "$status" -eq 2 ]
	[[ "$output" == *"normalize belongs in the final pipeline"* ]]
}

@test "annotates every sample; misses per epoch as the schedule says" {
	refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < plan.txt > "$T/a.txt"
	[[ "$(head -n 1 "$T/a.txt")" == *" cache=$T/c "* ]]
	# every sample has an address of 4 hex fields
	awk '/^[BD] / { for (i = 1; i <= NF; i++) if ($i ~ /:/) { n++
		if ($i !~ /@[0-9a-f]*\.[0-9a-f]*\.[0-9a-f]*\.[0-9a-f]*$/) { print "no address: " $i; bad = 1 } } }
		END { exit bad || !n }' "$T/a.txt"
	# the plan underneath is unchanged
	diff <(sed 1d plan.txt) <(sed 1d "$T/a.txt" | sed 's/@[0-9a-f.]*//g')
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
	[[ "$output" == *" 0 problems"* ]]
}

@test "deterministic: -j 1 and -j 2 give the same annotated plan and cache" {
	refurb-partial -q -j 1 -c "$T/c1" -p "$SPEC" train.idx < plan.txt > "$T/a1.txt"
	refurb-partial -q -j 2 --inflight 3 -c "$T/c2" -p "$SPEC" train.idx < plan.txt > "$T/a2.txt"
	diff <(sed 1d "$T/a1.txt") <(sed 1d "$T/a2.txt")
	for f in "$T"/c1/*.seg; do cmp "$f" "$T/c2/$(basename "$f")"; done
}

@test "write amplification is 1.0 under balanced eviction over 2r+1 epochs" {
	run refurb-partial -c "$T/c" --grace 1 -p "$SPEC" train.idx < plan.txt
	[ "$status" -eq 0 ]
	[[ "$output" == *"write amplification 1.000"* ]]
	[[ "$output" == *" 0 records compacted"* ]]
	# dead segments were deleted whole
	[[ "$output" =~ \ [1-9][0-9]*\ segments\ deleted ]]
	run refurb-dump -S "$T/c"
	[ "$status" -eq 0 ]
	[[ "$output" == *"write amplification 1.000"* ]]
}

@test "runs shorter than the grace leave no dead segments behind, unless someone reads" {
	local n1 n
	# 56 batches, less than the default grace (64): the segments that die
	# late in a run are still in their grace when it ends
	refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < plan.txt > /dev/null
	n1=$(ls "$T/c"/*.seg | wc -l)
	[ -e "$T/c/readers" ]
	for run in 2 3; do
		refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < plan.txt > /dev/null
		n=$(ls "$T/c"/*.seg | wc -l)
		[ "$n" -eq "$n1" ] || { echo "run $run: $n segments, $n1 after the first"; false; }
	done
	# a reader (shared lock on readers, as refurb-final holds): kept
	( exec 9< "$T/c/readers"; flock -s 9; touch "$T/locked"; sleep 3 ) &
	while [ ! -e "$T/locked" ]; do sleep 0.1; done
	refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < plan.txt > /dev/null
	n=$(ls "$T/c"/*.seg | wc -l)
	[ "$n" -gt "$n1" ]
	wait
	# the reader gone: the next writer deletes them
	refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < plan.txt > /dev/null
	[ "$(ls "$T/c"/*.seg | wc -l)" -eq "$n1" ]
	refurb-dump --verify "$T/c" > /dev/null
}

@test "kill -9 at random points, resume: identical plan and records" {
	refurb-partial -q -c "$T/ref" -p "$SPEC" train.idx < plan.txt > "$T/ref.txt"
	# the whole run takes some 20 ms: the plan is fed a line every 20
	# ms, so that each kill lands in another batch of another epoch
	for delay in 0.05 0.3 0.6 0.9; do
		rm -rf "$T/c"
		while IFS= read -r line; do
			printf '%s\n' "$line" || exit 0
			sleep 0.02
		done < plan.txt |
			refurb-partial -q -c "$T/c" -p "$SPEC" train.idx > "$T/p1.txt" &
		pid=$!
		sleep "$delay"
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		# resume from the epoch it was in (or from the start): after
		# an epoch's E line it was in the next one, whose first batch
		# may have evicted records the ended epoch read
		ep=$(awk '$1 == "B" { e = $2 } $1 == "E" { e = $2 + 1 }
			  END { print e }' "$T/p1.txt")
		ep=${ep:-0}
		# killed before its end, else the test would resume nothing
		[ "$ep" -le 6 ] || { echo "delay $delay: it had finished"; false; }
		refurb-plan -q -b 8 -e "$ep-6" train.evict |
			refurb-partial -q -c "$T/c" -p "$SPEC" train.idx > "$T/p2.txt"
		run refurb-dump --verify "$T/c"
		[ "$status" -eq 0 ] || { echo "delay $delay: $output"; false; }
		diff <(grep -v '^#' "$T/p2.txt") \
		     <(grep -v '^#' "$T/ref.txt" | awk -v e="$ep" '$2 >= e')
		for s in 0 17 42 59; do
			refurb-dump -x $s -o "$T/x.ppm" "$T/c"
			refurb-dump -x $s -o "$T/y.ppm" "$T/ref"
			cmp "$T/x.ppm" "$T/y.ppm"
		done
	done
}

@test "resumed behind where it stopped (the trainer's step): the same batches" {
	refurb-partial -q -c "$T/ref" -p "$SPEC" train.idx < plan.txt > "$T/ref.txt"
	refurb-final -q -p crop=48,flip < "$T/ref.txt" > "$T/ref.out"
	# the run stops in epoch 3's second batch: epoch 3 has begun, and
	# with it the eviction of what only epoch 2 read
	awk '$1 == "B" && $2 == 3 && $3 >= 1 { exit } { print }' plan.txt > "$T/cut"
	run bash -c "refurb-partial -q -c '$T/c' -p '$SPEC' train.idx < '$T/cut' > /dev/null"
	expect_fail 1 "refurb-partial: (stdin): ends in epoch 3, batch 1"
	# the trainer had saved epoch 2: the run resumes there
	run bash -c "set -o pipefail; refurb-plan -q -b 8 -e 2-6 train.evict |
		refurb-partial -c '$T/c' -p '$SPEC' train.idx 2>'$T/err' |
		refurb-final -q -p crop=48,flip > '$T/out'"
	[ "$status" -eq 0 ]
	# records evicted were made again, elsewhere in the cache...
	grep -q "recomputed [1-9]" "$T/err"
	# ...and the trainer gets the same bytes as without the stop
	"$BUILD_DIR/tools/stream_digest" "$T/out" | grep '^B' > "$T/got"
	"$BUILD_DIR/tools/stream_digest" "$T/ref.out" | grep '^B' |
		awk '$2 >= 2' > "$T/want"
	[ -s "$T/want" ]
	diff "$T/got" "$T/want"
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
}

@test "a torn tail is cut when the cache is opened" {
	refurb-plan -q -b 8 -e 0 train.evict | refurb-partial -q -c "$T/c" -p "$SPEC" train.idx > /dev/null
	seg=$(ls "$T"/c/*.seg | sed -n 1p)
	printf 'RFR\001garbage' >> "$seg"
	# what a writer killed while appending leaves: no problem, named
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
	[[ "$output" == *"torn tail: a record header cut short by the end of the segment (11 of 40 bytes)"* ]]
	refurb-plan -q -b 8 -e 1 train.evict | refurb-partial -c "$T/c" -p "$SPEC" train.idx > /dev/null 2> "$T/err"
	grep -q "torn tail was cut" "$T/err"
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
}

@test "a lost record is recomputed, identical" {
	refurb-partial -q -c "$T/ref" -p "$SPEC" train.idx < plan.txt > /dev/null
	refurb-plan -q -b 8 -e 0-1 train.evict | refurb-partial -q -c "$T/c" -p "$SPEC" train.idx > /dev/null
	rm "$T"/c/records
	rm "$(ls "$T"/c/*.seg | head -n 1)"
	run bash -c "set -o pipefail; refurb-plan -q -b 8 -e 2-6 train.evict | refurb-partial -c '$T/c' -p '$SPEC' train.idx > /dev/null"
	[ "$status" -eq 0 ]
	[[ "$output" =~ recomputed\ [1-9] ]]
	for s in 0 1 2 3 30 59; do
		refurb-dump -x $s -o "$T/x.ppm" "$T/c"
		refurb-dump -x $s -o "$T/y.ppm" "$T/ref"
		cmp "$T/x.ppm" "$T/y.ppm"
	done
}

@test "a second writer is refused naming the first one's pid" {
	mkfifo "$T/fifo"
	# the first writer waits for the rest of its plan, holding the lock
	(head -n 1 plan.txt; sleep 2) > "$T/fifo" &
	refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < "$T/fifo" > /dev/null 2>&1 &
	pid=$!
	sleep 0.5
	run refurb-partial -c "$T/c" -p "$SPEC" train.idx < plan.txt
	wait "$pid" || true
	expect_fail 1 "refurb-partial: $T/c: cache is locked by process $pid"
}

@test "a cache made by another pipeline is refused, --reset starts over" {
	refurb-plan -q -b 8 -e 0 train.evict > "$T/p0"
	refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < "$T/p0" > /dev/null
	run refurb-partial -c "$T/c" -p 'resize=32' train.idx < "$T/p0"
	expect_fail 1 "refurb-partial: $T/c: cache was made with a different pipeline"
	run refurb-partial -c "$T/c" -p "$SPEC" --codec zstd train.idx < "$T/p0"
	expect_fail 1 "refurb-partial: $T/c: cache was made with a different codec"
	refurb-partial -q --reset -c "$T/c" -p 'resize=32' train.idx < "$T/p0" > /dev/null
}

@test "a directory with other files is not taken for a cache" {
	mkdir "$T/home"
	echo precious > "$T/home/notes.txt"
	run refurb-partial -c "$T/home" -p "$SPEC" train.idx < plan.txt
	expect_fail 1 "refurb-partial: $T/home: not a refurb cache and not empty"
	[ -f "$T/home/notes.txt" ]
}

@test "a plan for another index is refused" {
	make_dataset "$T/other" 20 2
	refurb-index -q -o "$T/other.idx" "$T/other"
	run refurb-partial -c "$T/c" -p "$SPEC" "$T/other.idx" < plan.txt
	expect_fail 1 "refurb-partial: (stdin): plan was made for another index than $T/other.idx: give the index the schedule was made from (refurb-evict INDEX), or make the schedule and the plan again from this one"
}

@test "a plan of a shard that is not the schedule rebuilt is refused: make both again" {
	# a plan made before the shards' partition changed (schedule version
	# 2) names a schedule that refurb-partial does not rebuild
	refurb-evict -q -r 3 -s 7 --shard 1/2 -o "$T/s.evict" train.idx
	refurb-plan -q -b 8 -e 0 "$T/s.evict" |
		sed '1s/schedule=[0-9a-f]*/schedule=0123456789abcdef/' > "$T/p"
	run refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < "$T/p"
	expect_fail 1 "refurb-partial: (stdin): the plan's header does not match its schedule"
	[[ "$output" == *"make the schedule and the plan again with refurb-evict and refurb-plan" ]]
}

@test "garbage instead of a plan" {
	run sh -c "echo hello | refurb-partial -c '$T/c' -p '$SPEC' train.idx"
	expect_fail 1 "refurb-partial: (stdin)"
	run bash -c "set -o pipefail; head -c 300 plan.txt | refurb-partial -c '$T/c2' -p '$SPEC' train.idx"
	[ "$status" -eq 1 ]
}

@test "an image broken since indexing: named, left out, counted; --strict fatal" {
	cp -r ds "$T/ds"
	refurb-index -q -o "$T/t.idx" "$T/ds"
	refurb-evict -q -r 3 -s 7 -o "$T/t.evict" "$T/t.idx"
	victim=$(refurb-dump "$T/t.idx" | grep -v '^#' | sed -n 5p | cut -f8)
	id=$(refurb-dump "$T/t.idx" | grep -v '^#' | sed -n 5p | cut -f1)
	head -c 2000 "$T/ds/$victim" > "$T/x"
	mv "$T/x" "$T/ds/$victim"
	refurb-plan -q -b 8 -e 0-5 "$T/t.evict" > "$T/p"
	run sh -c "refurb-partial --max-bad 2% -c '$T/c' -p '$SPEC' '$T/t.idx' < '$T/p' > '$T/a'"
	[ "$status" -eq 0 ]
	[[ "$output" == *"$victim"*"(sample $id left out of its batch; reported once)"* ]]
	# named once in six epochs, though it is read (and fails) in several
	[ "$(grep -c "$victim" <<< "$output")" -eq 1 ]
	[[ "$output" == *"left out "[2-6]* ]]
	grep -q " $id:m[0-9]*@0\( \|$\)" "$T/a"
	run sh -c "refurb-partial --strict -c '$T/c2' -p '$SPEC' '$T/t.idx' < '$T/p' > /dev/null"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$victim"* ]]
}

@test "a dataset moved since indexing: nothing read, exit 1, one message naming the file, the root and --root" {
	cp -r ds "$T/ds"
	refurb-index -q -o "$T/t.idx" "$T/ds"
	refurb-evict -q -r 3 -s 7 -o "$T/t.evict" "$T/t.idx"
	refurb-plan -q -b 8 -e 0-2 "$T/t.evict" > "$T/p"
	mv "$T/ds" "$T/moved"
	run sh -c "refurb-partial -c '$T/c' -p '$SPEC' '$T/t.idx' < '$T/p' > '$T/a'"
	expect_fail 1 "refurb-partial: nothing read: all 8 images of the first batch failed, the first: $T/ds/class"
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == *": cannot open: No such file or directory; the index $T/t.idx has its images under $T/ds: if the dataset moved, give its directory with --root DIR" ]]
	# nothing was passed on but the header
	[ "$(grep -c '^B' "$T/a")" -eq 0 ]
	# a wrong --root is named as such
	run sh -c "refurb-partial --root '$T/nowhere' -c '$T/c' -p '$SPEC' '$T/t.idx' < '$T/p' > /dev/null"
	expect_fail 1 "refurb-partial: nothing read: all 8 images of the first batch failed, the first: $T/nowhere/class"
	[[ "${lines[0]}" == *"has its images under $T/ds, read from --root $T/nowhere instead: check --root" ]]
	# --root to where it went: the run goes through
	run sh -c "refurb-partial -q --root '$T/moved' -c '$T/c' -p '$SPEC' '$T/t.idx' < '$T/p' > /dev/null"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "a corrupt image alone in the first batch that reads images is one bad image, not nothing read" {
	cp -r ds "$T/ds"
	refurb-index -q -o "$T/t.idx" "$T/ds"
	refurb-evict -q -r 3 -s 7 -o "$T/t.evict" "$T/t.idx"
	# batches of one: the first batch's only image is sample 0
	refurb-plan -q -b 1 --shuffle none -e 0 "$T/t.evict" > "$T/p"
	first=$(refurb-dump "$T/t.idx" | awk -F '\t' '$1 == "0" { print $8 }')
	head -c 300 "$T/ds/$first" > "$T/cut"
	cp "$T/cut" "$T/ds/$first"
	run sh -c "refurb-partial --max-bad 2 -c '$T/c' -p '$SPEC' '$T/t.idx' < '$T/p' > /dev/null"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "refurb-partial: $T/ds/$first: "*"(sample 0 left out of its batch; reported once)" ]]
	# a missing one still means the dataset is not where the index says
	rm "$T/ds/$first"
	run sh -c "refurb-partial --max-bad 2 -c '$T/c2' -p '$SPEC' '$T/t.idx' < '$T/p' > /dev/null"
	expect_fail 1 "refurb-partial: nothing read: all 1 images of the first batch failed, the first: $T/ds/$first: cannot open"
}

@test "--max-bad: images that are there but broken: the message says to repair or remove them, not --root" {
	cp -r ds "$T/ds"
	refurb-index -q -o "$T/t.idx" "$T/ds"
	refurb-evict -q -r 3 -s 7 -o "$T/t.evict" "$T/t.idx"
	refurb-plan -q -b 8 -e 0 "$T/t.evict" > "$T/p"
	victim=$(ls "$T"/ds/class001/*.jpg | sed -n 2p)
	head -c 400 "$victim" > "$T/cut"
	cp "$T/cut" "$victim"
	run sh -c "refurb-partial -c '$T/c' -p '$SPEC' '$T/t.idx' < '$T/p' > /dev/null"
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == "refurb-partial: 1 image cannot be read, more than --max-bad 1% allows (0 of 60 samples per epoch), the first: $victim: "*"; repair or remove $victim and index again, or allow more with --max-bad (a count, or a percentage)" ]] || false
	[[ "${lines[-1]}" != *"--root"* ]] || false
}

@test "--max-bad: more unreadable images than allowed stop the run; P% or a count" {
	cp -r ds "$T/ds"
	refurb-index -q -o "$T/t.idx" "$T/ds"
	refurb-evict -q -r 3 -s 7 -o "$T/t.evict" "$T/t.idx"
	refurb-plan -q -b 8 -e 0-1 "$T/t.evict" > "$T/p"
	rm $(ls "$T"/ds/class001/*.jpg | head -n 3)   # 3 of 60 images: 5%
	# default 1% of 60: none allowed
	run sh -c "refurb-partial -c '$T/c1' -p '$SPEC' '$T/t.idx' < '$T/p' > /dev/null"
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == "refurb-partial: 1 image cannot be read, more than --max-bad 1% allows (0 of 60 samples per epoch), the first: $T/ds/class001/img0000"[0-9][0-9]".jpg: cannot open: No such file or directory; the index $T/t.idx has its images under $T/ds: if the dataset moved, give its directory with --root DIR" ]]
	run sh -c "refurb-partial --max-bad 2 -c '$T/c2' -p '$SPEC' '$T/t.idx' < '$T/p' > /dev/null"
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == "refurb-partial: 3 images cannot be read, more than --max-bad 2 allows (2 of 60 samples per epoch)"* ]]
	run sh -c "refurb-partial --max-bad 5% -c '$T/c3' -p '$SPEC' '$T/t.idx' < '$T/p' > '$T/a'"
	[ "$status" -eq 0 ]
	[[ "${lines[-2]}" == *"left out 3;"* ]] || [[ "${lines[-2]}" == *"left out "[3-9]* ]]
	run sh -c "refurb-partial --max-bad 3 -c '$T/c4' -p '$SPEC' '$T/t.idx' < '$T/p' > /dev/null"
	[ "$status" -eq 0 ]
	for bad in x 5x% -1% 101% 1.5.% '%' ''; do
		run refurb-partial --max-bad "$bad" -c "$T/c5" -p "$SPEC" "$T/t.idx"
		expect_fail 2 "refurb-partial: --max-bad: "
	done
}

@test "the reader closing the stream stops it cleanly, resumable" {
	# pipefail: the status is refurb-partial's, not head's
	run bash -c "set -o pipefail; refurb-partial -c '$T/c' -p '$SPEC' train.idx < plan.txt | head -n 3 > /dev/null"  # lint-bats: allow sigpipe
	[ "$status" -eq 0 ]
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
	refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < plan.txt > /dev/null
}

@test "a corrupt manifest: exit 1 naming it and --reset, which starts the cache again" {
	refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < plan.txt > /dev/null
	printf 'XXXX' | dd of="$T/c/manifest" bs=1 seek=20 conv=notrunc 2> /dev/null
	run sh -c "refurb-partial -c '$T/c' -p '$SPEC' train.idx < plan.txt > /dev/null"
	expect_fail 1 "refurb-partial: $T/c/manifest: manifest is truncated or corrupt (use --reset to empty the cache and start again)"
	run sh -c "refurb-partial -q --reset -c '$T/c' -p '$SPEC' train.idx < plan.txt > /dev/null"
	[ "$status" -eq 0 ]
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
}

@test "full disk: clear error, cache consistent afterwards" {
	[ -w /dev/full ] || skip "no /dev/full"
	run sh -c "refurb-partial -c '$T/c' -p '$SPEC' train.idx < plan.txt > /dev/full"
	expect_fail 1 "refurb-partial: (output): cannot write the plan: No space left"
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
}

@test "--stats: a line per batch, misses as planned and computed" {
	refurb-partial -q -c "$T/c" -p "$SPEC" --stats "$T/s.tsv" train.idx \
		< plan.txt > /dev/null
	[ "$(head -n 1 "$T/s.tsv")" = "epoch	step	samples	misses	computed	healed	reused	skipped	worker_us	cpu_us" ]
	[ "$(sed 1d "$T/s.tsv" | wc -l)" -eq "$(grep -c '^B' plan.txt)" ]
	# per epoch: planned and computed misses equal the plan's E lines
	diff <(grep '^E' plan.txt | awk '{print $2, $5}') \
	     <(sed 1d "$T/s.tsv" | awk '{m[$1] += $4; c[$1] += $5} END {
		for (e in m) print e, m[e], c[e]}' | sort -n | awk '$2 == $3 {print $1, $2}')
	# every field is a number
	sed 1d "$T/s.tsv" > "$T/rows"
	run -1 grep -v '^[0-9]*\(	[0-9]*\)\{9\}$' "$T/rows"
	run refurb-partial -q -c "$T/c2" -p "$SPEC" --stats /nonexistent/s.tsv train.idx < plan.txt
	expect_fail 1 "refurb-partial: /nonexistent/s.tsv: cannot open"
}

@test "resize=S:dct=1: scaled decodes, deterministic, a cache of its own" {
	"$TOP/scripts/make-dataset" -n 12 -k 2 --min 300 --max 400 "$T/big" > /dev/null
	refurb-index -q -o "$T/big.idx" "$T/big"
	refurb-evict -q -r 1 -s 7 -o "$T/big.evict" "$T/big.idx"
	refurb-plan -q -b 4 -e 0 "$T/big.evict" > "$T/p0"
	refurb-partial -q -j 1 -c "$T/c1" -p 'resize=64:dct=1' "$T/big.idx" < "$T/p0" > "$T/a1"
	refurb-partial -q -j 2 -c "$T/c2" -p 'resize=64:dct=1' "$T/big.idx" < "$T/p0" > "$T/a2"
	diff <(sed 1d "$T/a1") <(sed 1d "$T/a2")
	for f in "$T"/c1/*.seg; do cmp "$f" "$T/c2/$(basename "$f")"; done
	refurb-partial -q -c "$T/c3" -p 'resize=64' "$T/big.idx" < "$T/p0" > "$T/a3"
	refurb-final -q -p crop=56 < "$T/a1" > "$T/s1"
	refurb-final -q -p crop=56 < "$T/a3" > "$T/s3"
	# the frames (past the headers, which name the pipelines) have the
	# same sizes and other pixels: the decode was scaled
	o1=$(refurb-dump "$T/s1" | awk -F'\t' '$3 == "BATCH" { print $2; exit }')
	o3=$(refurb-dump "$T/s3" | awk -F'\t' '$3 == "BATCH" { print $2; exit }')
	tail -c +$((o1 + 1)) "$T/s1" > "$T/f1"
	tail -c +$((o3 + 1)) "$T/s3" > "$T/f3"
	[ -s "$T/f1" ]
	[ "$(stat -c %s "$T/f1")" -eq "$(stat -c %s "$T/f3")" ]
	run cmp -s "$T/f1" "$T/f3"
	[ "$status" -eq 1 ]
	# the option is part of the cache's pipeline
	run refurb-partial -c "$T/c1" -p 'resize=64' "$T/big.idx" < "$T/p0"
	expect_fail 1 "refurb-partial: $T/c1: cache was made with a different pipeline"
}

@test "resize=S:dct=R out of range: exit 2 naming it" {
	run refurb-partial -c "$T/c" -p 'resize=64:dct=0.5' train.idx < plan.txt
	expect_fail 2 "refurb-partial: bad pipeline spec at column 15: dct 0.5 out of range 1..64"
	[ ! -e "$T/c" ]
}

# frames STREAM OUT: the stream's bytes from its first frame on (the
# header names the cache and the pipelines, which differ between runs)
frames() {
	local o
	o=$(refurb-dump "$1" | awk -F'\t' '$3 == "BATCH" { print $2; exit }')
	[ -n "$o" ]
	tail -c +$((o + 1)) "$1" > "$2"
}

@test "--handover at r = 1: the same stream, no record in the cache" {
	set -o pipefail
	refurb-evict -q -r 1 -s 7 -o "$T/r1.evict" train.idx
	refurb-plan -q -b 8 -e 0-2 "$T/r1.evict" > "$T/p"
	refurb-partial -q --no-handover -c "$T/c0" -p "$SPEC" train.idx < "$T/p" |
		refurb-final -q -p crop=48 > "$T/s0"
	refurb-partial --handover -c "$T/c1" -p "$SPEC" train.idx < "$T/p" 2> "$T/e1" |
		refurb-final -p crop=48 > "$T/s1" 2> "$T/e2"
	frames "$T/s0" "$T/f0"
	frames "$T/s1" "$T/f1"
	cmp "$T/f0" "$T/f1"
	grep -q "^refurb-partial: 180 records handed to the reader in shared memory" "$T/e1"
	grep -q "^refurb-partial: cache: 0 live records, 0.0 MiB; appended 0.0 MiB" "$T/e1"
	grep -q "^refurb-final: 180 records read from refurb-partial's handover" "$T/e2"
	# read, not recomputed from the images (which would hide a bad record)
	grep -q "records recomputed 0, samples left out 0" "$T/e2"
	run refurb-dump --verify "$T/c1"
	[ "$status" -eq 0 ]
}

@test "--handover: -j 1 and -j 2, a ring smaller than a batch: same stream and plan" {
	set -o pipefail
	# records of 64 x 64 and more: a 1 MiB ring holds part of a batch of
	# 60; the rest goes to the cache
	refurb-evict -q -r 1 -s 7 -o "$T/r1.evict" train.idx
	refurb-plan -q -b 60 -e 0-1 "$T/r1.evict" > "$T/p"
	refurb-partial -q --no-handover -c "$T/c0" -p 'resize=96' train.idx < "$T/p" |
		refurb-final -q -p crop=64 > "$T/s0"
	for j in 1 2; do
		refurb-partial -q -j $j --handover=1 -c "$T/c$j" -p 'resize=96' \
			train.idx < "$T/p" | tee "$T/a$j" |
			refurb-final -j $j --prefetch $j -p crop=64 > "$T/s$j" 2> "$T/e$j"
		grep -q "records recomputed 0, samples left out 0" "$T/e$j"
		frames "$T/s$j" "$T/f$j"
		cmp "$T/f$j" <(frames "$T/s0" /dev/stdout)
	done
	diff <(sed 1d "$T/a1") <(sed 1d "$T/a2")
	# both kinds of address: in the ring and in the cache
	grep -q '@ffffffff\.' "$T/a1"
	grep -q '@[0-9a-f]\{1,7\}\.' "$T/a1"
	head -n 1 "$T/a1" > "$T/h1"
	grep -q ' handover=/proc/[0-9]*/fd/[0-9]* ' "$T/h1"
}

@test "--handover at r = 3: the stream of a run without it" {
	set -o pipefail
	refurb-partial -q --no-handover -c "$T/c0" -p "$SPEC" train.idx < plan.txt |
		refurb-final -q -p crop=48 > "$T/s0"
	refurb-partial -q --handover -c "$T/c1" -p "$SPEC" train.idx < plan.txt |
		refurb-final -q -p crop=48 > "$T/s1"
	frames "$T/s0" "$T/f0"
	frames "$T/s1" "$T/f1"
	cmp "$T/f0" "$T/f1"
}

@test "--handover to a file, or a bad size: usage error, exit 2" {
	run refurb-partial --handover -c "$T/c" -p "$SPEC" -o "$T/a" train.idx < plan.txt
	expect_fail 2 "refurb-partial: --handover needs the output to be a pipe to refurb-final"
	run refurb-partial --handover=0 -c "$T/c" -p "$SPEC" train.idx < plan.txt
	expect_fail 2 "refurb-partial: --handover"
	run refurb-partial --handover=lots -c "$T/c" -p "$SPEC" train.idx < plan.txt
	expect_fail 2 "refurb-partial: --handover"
	[ ! -e "$T/a" ]
}

@test "a plan with handover addresses, its refurb-partial gone: refurb-final names it" {
	set -o pipefail
	refurb-evict -q -r 1 -s 7 -o "$T/r1.evict" train.idx
	refurb-plan -q -b 8 -e 0 "$T/r1.evict" > "$T/p"
	refurb-partial -q --handover -c "$T/c" -p "$SPEC" train.idx < "$T/p" |
		tee "$T/a" | refurb-final -q -p crop=48 > /dev/null
	grep -q '@ffffffff\.' "$T/a"
	run refurb-final -p crop=48 -o "$T/s" < "$T/a"
	expect_fail 1 "refurb-final: /proc/"
	[[ "${lines[0]}" == *"cannot open the handover of refurb-partial"* ]]
	# without its header key, the addresses are refused, not misread
	sed '1s/ handover=[^ ]*//' "$T/a" > "$T/b"
	run refurb-final -p crop=48 -o "$T/s" < "$T/b"
	expect_fail 1 "refurb-final: (stdin): batch 0 of epoch 0: sample"
	[[ "${lines[0]}" == *"has no handover= in the header"* ]]
}

@test "--handover into a reader that is no refurb-final: the cache, after a wait" {
	set -o pipefail
	refurb-evict -q -r 1 -s 7 -o "$T/r1.evict" train.idx
	refurb-plan -q -b 8 -e 0 "$T/r1.evict" > "$T/p"
	refurb-partial --handover -c "$T/c" -p "$SPEC" train.idx < "$T/p" 2> "$T/e" |
		cat > "$T/a"
	grep -q "^refurb-partial: --handover: nothing opened the handover" "$T/e"
	run -1 grep -c '@ffffffff\.' "$T/a"
	[ "$output" = 0 ]
	# the recorded plan replays (the ring it names is gone, unused)
	refurb-final -q -p crop=48 -o "$T/s" < "$T/a"
	[ "$(refurb-dump "$T/s" | grep -c BATCH)" -eq 8 ]
}

@test "the default into refurb-final hands over (as --handover); --no-handover does not; the same stream" {
	set -o pipefail
	refurb-evict -q -r 1 -s 7 -o "$T/r1.evict" train.idx
	refurb-plan -q -b 8 -e 0-2 "$T/r1.evict" > "$T/p"
	refurb-partial --no-handover -c "$T/c0" -p "$SPEC" train.idx < "$T/p" 2> "$T/e0" |
		tee "$T/a0" | refurb-final -p crop=48 > "$T/s0" 2> "$T/f0"
	refurb-partial -c "$T/c1" -p "$SPEC" train.idx < "$T/p" 2> "$T/e1" |
		tee "$T/a1" | refurb-final -p crop=48 > "$T/s1" 2> "$T/f1"
	frames "$T/s0" "$T/x0"
	frames "$T/s1" "$T/x1"
	cmp "$T/x0" "$T/x1"
	# --no-handover: no ring offered, every record through the cache
	head -n 1 "$T/a0" > "$T/h0"
	run -1 grep -c 'handover=' "$T/h0"
	[ "$output" = 0 ]
	run -1 grep -c '@ffffffff\.' "$T/a0"
	[ "$output" = 0 ]
	run -1 grep -c 'handover' "$T/e0"
	[ "$output" = 0 ]
	grep -q "^refurb-partial: cache: 60 live records" "$T/e0"
	# the default: the ring is offered and refurb-final opens it; the
	# records of the batches placed after that go there (how many
	# depends on when it opened it: refurb-partial does not wait), and
	# refurb-final reads every one of them from it
	head -n 1 "$T/a1" > "$T/h1"
	grep -q ' handover=/proc/[0-9]*/fd/[0-9]* ' "$T/h1"
	[[ "$(cat "$T/e1")" =~ refurb-partial:\ ([0-9]+)\ records\ handed\ to\ the\ reader ]]
	handed=${BASH_REMATCH[1]}
	[ "$handed" -gt 0 ]
	[ "$handed" -le 180 ]
	[ "$(grep -c '@ffffffff\.' "$T/a1")" -gt 0 ]
	grep -q "^refurb-final: $handed records read from refurb-partial's handover" "$T/f1"
	grep -q "records recomputed 0, samples left out 0" "$T/f1"
}

@test "the default into a reader that is no refurb-final: the cache, no wait, no message" {
	set -o pipefail
	refurb-evict -q -r 1 -s 7 -o "$T/r1.evict" train.idx
	refurb-plan -q -b 8 -e 0 "$T/r1.evict" > "$T/p"
	refurb-partial -c "$T/c" -p "$SPEC" train.idx < "$T/p" 2> "$T/e" |
		cat > "$T/a"
	head -n 1 "$T/a" > "$T/h"
	grep -q ' handover=/proc/[0-9]*/fd/[0-9]* ' "$T/h"
	run -1 grep -c '@ffffffff\.' "$T/a"
	[ "$output" = 0 ]
	run -1 grep -c 'handover' "$T/e"
	[ "$output" = 0 ]
	grep -q "^refurb-partial: cache: 60 live records" "$T/e"
	# the recorded plan replays from the cache
	refurb-final -q -p crop=48 -o "$T/s" < "$T/a"
	[ "$(refurb-dump "$T/s" | grep -c BATCH)" -eq 8 ]
	# into a regular file: no ring is offered at all
	refurb-partial -q -c "$T/c2" -p "$SPEC" -o "$T/b" train.idx < "$T/p"
	head -n 1 "$T/b" > "$T/hb"
	run -1 grep -c 'handover=' "$T/hb"
	[ "$output" = 0 ]
}

# alive PID: the process runs (not a zombie)
alive() {
	[ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat"
}

@test "--handover: kill -9 of either side mid-run, then a rerun: the same stream" {
	set -o pipefail
	refurb-evict -q -r 1 -s 7 -o "$T/r1.evict" train.idx
	refurb-plan -q -b 8 -e 0-5 "$T/r1.evict" > "$T/p"
	refurb-partial -q -c "$T/c0" -p resize=300 train.idx < "$T/p" |
		refurb-final -q -p crop=48 > "$T/s0"
	frames "$T/s0" "$T/f0"
	for victim in partial final; do
		rm -rf "$T/c" "$T/plan.fifo" "$T/out.fifo"
		mkfifo "$T/plan.fifo" "$T/out.fifo"
		exec 7<> "$T/out.fifo" # a reader of the stream that never reads
		# refurb-final blocks on its output, refurb-partial on the full
		# 1 MiB ring or the pipe
		refurb-partial -q --handover=1 -c "$T/c" -p 'resize=300' train.idx \
			< "$T/p" > "$T/plan.fifo" 2> /dev/null 7>&- &
		partial=$!
		refurb-final -q -p crop=48 < "$T/plan.fifo" > "$T/out.fifo" 2> /dev/null 7>&- &
		final=$!
		sleep 1
		alive $partial
		alive $final
		if [ $victim = partial ]; then
			kill -9 $partial
			cat "$T/out.fifo" > /dev/null 7>&- & # let refurb-final write
		else
			kill -9 $final
		fi
		# the other side ends by itself (it must not wait for ever)
		for i in $(seq 200); do
			alive $partial || alive $final || break
			sleep 0.1
		done
		run alive $partial
		[ "$status" -eq 1 ]
		run alive $final
		[ "$status" -eq 1 ]
		exec 7>&-
		wait || true
		run refurb-dump --verify "$T/c"
		[ "$status" -eq 0 ]
		refurb-partial -q --handover -c "$T/c" -p resize=300 train.idx < "$T/p" |
			refurb-final -q -p crop=48 > "$T/s"
		frames "$T/s" "$T/f"
		cmp "$T/f0" "$T/f"
	done
}

@test "-c creates the missing parents of the cache directory; a file in the way is named" {
	run sh -c "refurb-partial -q -c '$T/a/b/cache' -p '$SPEC' train.idx < plan.txt > /dev/null"
	[ "$status" -eq 0 ]
	[ -f "$T/a/b/cache/manifest" ]
	touch "$T/file"
	run sh -c "refurb-partial -q -c '$T/file/b/cache' -p '$SPEC' train.idx < plan.txt > /dev/null"
	expect_fail 1 "refurb-partial: $T/file/b/cache: cannot create cache directory: Not a directory"
}

@test "--costs: a line per computed sample, appended across runs, checked" {
	refurb-partial -q -c "$T/c" -p "$SPEC" --costs "$T/costs" train.idx \
		< plan.txt > /dev/null
	head -n 1 "$T/costs" > "$T/head"
	grep -q '^#refurb-costs 1 index=[0-9a-f]\{16\} seed=7 pipeline=resize=64:' "$T/head"
	# one line per miss computed: the E lines' misses
	misses=$(grep '^E' plan.txt | awk '{m += $5} END {print m}')
	[ "$(sed 1d "$T/costs" | wc -l)" -eq "$misses" ]
	sed 1d "$T/costs" > "$T/rows"
	run -1 grep -v '^[0-9]*	[0-6]	[0-9]*$' "$T/rows"
	# every id of epoch 0 once
	[ "$(awk '$2 == 0' "$T/rows" | cut -f1 | sort -u | wc -l)" -eq 60 ]
	# a second run appends, under the same header
	refurb-partial -q -c "$T/c2" -p "$SPEC" --costs "$T/costs" train.idx \
		< plan.txt > /dev/null
	[ "$(grep -c '^#' "$T/costs")" -eq 1 ]
	[ "$(sed 1d "$T/costs" | wc -l)" -eq $((2 * misses)) ]
	# another pipeline, seed or index: refused, the file untouched
	cp "$T/costs" "$T/before"
	run refurb-partial -q -c "$T/c3" -p 'resize=32' --costs "$T/costs" train.idx < plan.txt
	expect_fail 1 "refurb-partial: $T/costs: cost file made for pipeline 'resize=64:"
	run refurb-partial -q -c "$T/c4" -p "$SPEC" -s 8 --costs "$T/costs" train.idx < plan.txt
	expect_fail 1 "refurb-partial: $T/costs: cost file made with seed 7, not 8"
	make_dataset "$T/other" 20 2
	refurb-index -q -o "$T/other.idx" "$T/other"
	refurb-evict -q -r 3 -s 7 "$T/other.idx" | refurb-plan -q -b 8 -e 0 - > "$T/oplan"
	run refurb-partial -q -c "$T/c5" -p "$SPEC" --costs "$T/costs" "$T/other.idx" < "$T/oplan"
	expect_fail 1 "refurb-partial: $T/costs: cost file made for another index"
	cmp "$T/costs" "$T/before"
	echo 'id	epoch	us' > "$T/junk"
	run refurb-partial -q -c "$T/c6" -p "$SPEC" --costs "$T/junk" train.idx < plan.txt
	expect_fail 1 "refurb-partial: $T/junk: bad magic (not a refurb cost file)"
	run refurb-partial -q -c "$T/c7" -p "$SPEC" --costs /nonexistent/costs train.idx < plan.txt
	expect_fail 1 "refurb-partial: /nonexistent/costs: cannot open the cost file"
}

@test "a reader that lags by a full pipe finds every segment: the default grace counts the pipe's batches" {
	# batches of 2 over 30 epochs: about 900 short lines; refurb-partial
	# runs as far ahead as the pipe lets it while the reader sleeps, and
	# segments die every epoch meanwhile
	refurb-plan -q -b 2 -e 0-29 train.evict > "$T/plan"
	refurb-partial -q -c "$T/c" -p "$SPEC" train.idx < "$T/plan" |
		{ sleep 3; refurb-final -p crop=48 -o "$T/st" 2> "$T/err"; }
	[ "$(grep -c 'segment is gone' "$T/err")" -eq 0 ]
	# the same with the grace of one epoch (at least 64 batches), as before
	# (an explicit --grace leaves the pipe at its 64 KiB)
	refurb-partial -q -c "$T/c64" -p "$SPEC" --grace 64 train.idx < "$T/plan" |
		{ sleep 3; refurb-final -p crop=48 -o "$T/st64" 2> "$T/err64"; }
	[ "$(grep -c 'segment is gone' "$T/err64")" -gt 0 ]
	# (whose recomputed records are the same: the batches agree)
	diff <("$BUILD_DIR/tools/stream_digest" < "$T/st" | grep '^B') \
	     <("$BUILD_DIR/tools/stream_digest" < "$T/st64" | grep '^B')
}

# setpipe_calls FILE: the F_SETPIPE_SZ calls an strace -e fcntl log holds
setpipe_calls() {
	awk '/F_SETPIPE_SZ/ { n++ } END { print n + 0 }' "$1"
}

@test "the output pipe is shrunk to a page only for a reader that does not tell its position" {
	command -v strace > /dev/null || skip "strace is not installed"
	set -o pipefail
	# LeakSanitizer cannot run under ptrace (make asan): no leak check here
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	# a refurb-final that opened the handover tells the cache its read
	# position: the pipe keeps its 64 KiB
	strace -f -o "$T/t1" -e trace=fcntl refurb-partial -q --handover -c "$T/c1" \
		-p "$SPEC" train.idx < plan.txt | refurb-final -q -p crop=48 > "$T/s1"
	[ "$(setpipe_calls "$T/t1")" -eq 0 ]
	# without the handover nothing says the reader does: one page, and
	# the grace counts what it holds
	strace -f -o "$T/t2" -e trace=fcntl refurb-partial -q --no-handover -c "$T/c2" \
		-p "$SPEC" train.idx < plan.txt | refurb-final -q -p crop=48 > "$T/s2"
	[ "$(setpipe_calls "$T/t2")" -eq 1 ]
	grep -q 'F_SETPIPE_SZ, 4096' "$T/t2"
	# an explicit --grace leaves the pipe alone
	strace -f -o "$T/t3" -e trace=fcntl refurb-partial -q --no-handover --grace 5 \
		-c "$T/c3" -p "$SPEC" train.idx < plan.txt | refurb-final -q -p crop=48 > "$T/s3"
	[ "$(setpipe_calls "$T/t3")" -eq 0 ]
	frames "$T/s1" "$T/f1"
	frames "$T/s2" "$T/f2"
	cmp "$T/f1" "$T/f2"
}
