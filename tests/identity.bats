#!/usr/bin/env bats
# The plan identity (refurb-stream(5), Extra text; RefurbDataset.identity):
# a checkpoint taken on one chain is refused by the stream of a chain
# started with any option that changes the batches, naming the option,
# and accepted (with the same batches from there) when only options that
# change nothing the trainer sees differ (-j, codec, progress, quiet,
# the cache's path).  Each option is changed in turn.

load helpers
bats_require_minimum_version 1.5.0

setup_file() {
	set -o pipefail
	cd "$BATS_FILE_TMPDIR"
	make_dataset ds 22 2
	refurb-index -q -o train.idx ds
	"$TOP/scripts/make-dataset" -n 22 -k 2 --min 40 --max 120 -s 5 other # another index
	refurb-index -q -o other.idx other
}

setup() {
	set -o pipefail
	need_numpy
	"$PY" -c 'import torch' 2>/dev/null ||
		skip "torch is not installed (python3-torch): RefurbDataset not tested"
	cd "$BATS_FILE_TMPDIR"
	export PYTHONPATH="$TOP/python"
}

# stream NAME EVICT PLAN PARTIAL-OPTS FINAL-OPTS [PARTIAL-SPEC [FINAL-SPEC [INDEX]]]:
# run the base chain with the options added to each program (words) into
# NAME.bin, on its own cache c.NAME.  The base: r = 2, eviction seed 7,
# plan seed 3, batch 4, epochs 0-1.
stream() {
	local idx=${8:-train.idx}
	# shellcheck disable=SC2086  # the options are words
	refurb-evict -q -r 2 -s 7 $2 -o "$1.evict" "$idx"
	# shellcheck disable=SC2086
	refurb-plan -q -b 4 -e 0-1 -s 3 $3 "$1.evict" |
		refurb-partial -q -c "c.$1" -p "${6:-resize=32}" $4 "$idx" |
		refurb-final -q -p "${7:-crop=24,flip}" $5 -o "$1.bin"
}

# check BASE NAME KEY VALUE: note that a checkpoint of BASE at epoch 0
# step 1 must be refused by NAME's stream with a message naming KEY and
# BASE's VALUE ("with r=2, this stream has r=3"), and NAME's checkpoint
# by BASE's stream ("with r=3, this stream has r=2"); KEY "same": that
# both are accepted, and the batches from there are BASE's.  checked
# runs the checks noted (one Python: torch is slow to import).
check() {
	printf '%s\t%s\t%s\t%s\n' "$1.bin" "$2.bin" "$3" "${4:-}" >> "$BATS_TEST_TMPDIR/checks"
}

checked() {
	"$PY" - "$BATS_TEST_TMPDIR/checks" <<'EOF'
import hashlib, sys, warnings
from refurb_stream import RefurbDataset, StreamError
warnings.simplefilter("error", UserWarning)  # an identity not checked fails

def checkpoint(path):
    with RefurbDataset(path) as ds:
        for x, y in ds:
            break
        return ds.state_dict()

def rest(ds):
    return [hashlib.sha1(x.numpy().tobytes() + y.numpy().tobytes()).hexdigest()
            for epoch in range(2) for x, y in ds]

for line in open(sys.argv[1], errors="surrogateescape"):  # paths as bytes
    base, other, key, value = line.rstrip("\n").split("\t")
    for a, b in ((base, other), (other, base)):
        state = checkpoint(a)
        with RefurbDataset(b) as ds:
            try:
                ds.load_state_dict(state)
            except StreamError as e:
                print("refused:", e)
                assert key != "same", e
                want = ("with %s=%s" % (key, value), ", this stream has %s=" % key) \
                    if a == base else ("this stream has %s=%s" % (key, value),)
                assert all(w in str(e) for w in want), (want, str(e))
                continue
            assert key == "same", "%s's checkpoint accepted by %s" % (a, b)
            with RefurbDataset(a) as whole:
                whole.load_state_dict(state)
                assert rest(ds) == rest(whole), "not the same batches"
            print("accepted")
EOF
}

@test "every option that changes the batches: a checkpoint of the other run is refused, naming it" {
	stream base "" "" "" ""
	stream r "-r 3" "" "" ""
	check base r r 2
	stream eseed "-s 8" "" "" ""
	check base eseed evict-seed 7
	stream policy "--policy refcount" "" "" ""
	check base policy policy balanced
	stream pseed "" "-s 4" "" ""
	check base pseed plan-seed 3
	stream shuffle "" "--shuffle random" "" ""
	check base shuffle shuffle cache-aware
	stream balance "" "--balance pixels -i train.idx" "" ""
	check base balance balance none
	stream drop "" "--drop-last" "" ""
	check base drop drop-last 0
	stream batch "" "-b 5" "" ""
	check base batch batch-size 4
	# the partial's seed apart from the final's (refurb-final -s keeps 3)
	stream aseed "" "" "-s 11" "-s 3"
	check base aseed partial-seed 3
	stream fseed "" "" "" "-s 12"
	check base fseed final-seed 3
	stream partial "" "" "" "" "resize=30"
	check base partial partial-pipeline resize=32
	stream final "" "" "" "" "" "crop=24"
	check base final final-pipeline crop=24
	stream views "" "" "" "--views 2"
	check base views views 1
	stream norm "" "" "" "" "" "crop=24,flip,normalize"
	check base norm dtype uint8
	stream index "" "" "" "" "" "" other.idx
	check base index index ""
	checked
}

@test "refurb-partial --max-pixels: a checkpoint of the other cap is refused, naming it (an image over one cap is left out)" {
	# the base's images are 40 to 100 pixels a side: a cap of 4000
	# leaves some out, and the batches repeat others in their place
	stream cap "" "" "--max-pixels 4000 --max-bad 100%" ""
	stream base "" "" "" ""
	check base cap partial-max-pixels 100000000
	stream cap2 "" "" "--max-pixels 5000 --max-bad 100%" ""
	check cap cap2 partial-max-pixels 4000
	checked
}

@test "shards and --even: another shard or mode is refused, naming it" {
	stream s0 "--shard 0/2" "--shard 0/2" "" ""
	stream s1 "--shard 1/2" "--shard 1/2" "" ""
	check s0 s1 shard 0/2
	stream pad "--shard 0/2" "--shard 0/2 --even pad" "" ""
	check s0 pad even none
	checked
}

@test "options that change nothing the trainer sees: accepted, the same batches from there" {
	stream base "" "" "" ""
	stream threads "-j 1" "-j 1" "-j 1" "-j 1"
	check base threads same
	stream codec "" "" "--codec zstd:3" ""
	check base codec same
	stream progress "" "--progress" "--progress" "--progress"
	check base progress same
	# another cache directory (and its path in the extra text)
	stream "$(printf 'elsewhere\377')" "" "" "" ""
	check base "$(printf 'elsewhere\377')" same
	checked
}

@test "a checkpoint of an older reader (a hash, no identity) is checked as far as it goes" {
	stream base "" "" "" ""
	stream r "-r 3" "" "" ""
	run -0 "$PY" - base.bin r.bin <<'EOF'
import sys, warnings
from refurb_stream import RefurbDataset, StreamError
base = RefurbDataset(sys.argv[1])
old = {"epoch": 0, "step": 1, "plan": base._legacy_identity()}   # what 0.1 saved
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    base.load_state_dict(old)
    print(len(w), "r" in str(w[0].message))
try:
    RefurbDataset(sys.argv[1]).load_state_dict({**old, "plan": "0123456789abcdef"})
except StreamError as e:
    print("refused:", "another plan" in str(e))
EOF
	[ "${lines[0]}" = "1 True" ]
	[ "${lines[1]}" = "refused: True" ]
}

@test "--balance cost: a plan from another cost file (or the same file grown) is refused, naming costs" {
	refurb-evict -q -r 2 -s 7 -o m.evict train.idx
	refurb-plan -q -b 4 -e 0-0 -s 3 m.evict |
		refurb-partial -q -c c.m1 -p resize=32 --costs m.costs train.idx > /dev/null
	cp m.costs m1.costs
	refurb-plan -q -b 4 -e 1-1 -s 3 m.evict |
		refurb-partial -q -c c.m1 -p resize=32 --costs m.costs train.idx > /dev/null
	[ "$(wc -l < m.costs)" -gt "$(wc -l < m1.costs)" ]
	stream cost1 "" "--balance cost=m1.costs -i train.idx" "" ""
	stream cost2 "" "--balance cost=m.costs -i train.idx" "" ""
	run -0 grep -c '^#refurb-plan .* balance=cost .* costs=[0-9a-f]\{16\}' <(refurb-plan -q -b 4 -s 3 --balance cost=m1.costs -i train.idx m.evict)
	check cost1 cost2 costs ""
	checked
}
