#!/usr/bin/env bats
# The chain as a whole: SIGINT/SIGTERM stop every program cleanly with a
# line saying how to resume, one progress meter on a terminal, a reader
# that waits says so, refurb_stream.chain.Chain cleans up.
# tests/run: serial (signals timed by sleeps)

load helpers
bats_require_minimum_version 1.5.0

SPEC='resize=64,randaug=n=2:m=9'
FINAL='crop=48,flip'

setup_file() {
	set -o pipefail
	cd "$BATS_FILE_TMPDIR"
	make_train 40 2
}

setup() {
	set -o pipefail
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	export PYTHONPATH="$TOP/python"
}

# wait_for FILE BYTES: until FILE has at least BYTES (at most 20 s).
wait_for() {
	for _ in $(seq 200); do
		[ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

@test "SIGINT to the chain's process group: each program stops at a batch, checkpointed, exit 130, one line with the resume point" {
	setsid bash -c "set -o pipefail; refurb-plan -q -b 8 -e 0-999 train.evict |
		refurb-partial -q -c '$T/c' -p '$SPEC' train.idx |
		refurb-final -q -p '$FINAL' -o '$T/s'; echo \$? > '$T/status'" 2> "$T/err" &
	pid=$!
	wait_for "$T/s" 2000000
	kill -INT -- -"$pid"
	wait "$pid" || true
	[ "$(cat "$T/status")" -eq 130 ]
	cat "$T/err"
	[ "$(grep -c '^refurb-partial: interrupted (SIGINT) at epoch [0-9]*, batch [0-9]*; the cache is checkpointed: resume the chain at the trainer.s saved step with refurb-plan --start EPOCH:STEP' "$T/err")" -eq 1 ]
	[ "$(grep -c '^refurb-final: interrupted (SIGINT) after writing epoch [0-9]* step [0-9]* (no END frame); resume: refurb-plan --start [0-9]*:[0-9]* with the same other options (-b 8 -e 0-999 -s 7)' "$T/err")" -eq 1 ]
	# nothing else was said
	[ "$(wc -l < "$T/err")" -eq 2 ]
	run refurb-dump --verify "$T/c"
	[ "$status" -eq 0 ]
	# the point refurb-final names is the one after the stream's last batch
	need_numpy
	last=$("$PY" -c '
import sys
from refurb_stream import open_stream, Truncated
b = None
try:
    for b in open_stream(sys.argv[1]): pass
except Truncated:
    pass
e, s = b.epoch, b.step + 1
print("%d:%d" % ((e + 1, 0) if s == 5 else (e, s)))' "$T/s")
	grep -q -- "--start $last with" "$T/err"
}

@test "SIGTERM to refurb-final blocked on its input: after a few seconds the last line and exit 143 at once" {
	refurb-plan -q -b 8 -e 0-3 train.evict |
		refurb-partial -q -c "$T/c" -p "$SPEC" train.idx > "$T/ann"
	mkfifo "$T/plan"
	refurb-final -q -p "$FINAL" -i "$T/plan" -o "$T/s" 2> "$T/err" &
	pid=$!
	exec 5> "$T/plan"          # the writer stays, silent after 8 lines
	head -n 8 "$T/ann" >&5
	wait_for "$T/s" 250000
	sleep 0.5
	kill -TERM "$pid"
	st=0
	wait "$pid" || st=$?
	exec 5>&-
	[ "$st" -eq 143 ]
	run -0 cat "$T/err"
	echo "$output"
	[ "$output" = "refurb-final: interrupted after writing epoch 0 step 4 (no END frame); resume: refurb-plan --start 1:0 with the same other options (-b 8 -e 0-3 -s 7), or at the trainer's saved step if it read less" ]
}

@test "progress: on a terminal only the last program of a chain draws a meter; --progress forces one" {
	command -v script > /dev/null || skip "script (bsdutils) is not installed"
	script -qec "refurb-plan -b 8 -e 0-30 train.evict | refurb-partial -c '$T/c' -p '$SPEC' train.idx | refurb-final -p '$FINAL' -o /dev/null" /dev/null > "$T/tty" < /dev/null
	grep -q $'\r''refurb-final: ' "$T/tty"
	run -1 grep -c $'\r''refurb-partial: ' "$T/tty"
	[ "$output" -eq 0 ]
	run -1 grep -c $'\r''refurb-plan: ' "$T/tty"
	[ "$output" -eq 0 ]
	script -qec "refurb-plan -b 8 -e 0-30 train.evict | refurb-partial --progress -c '$T/c2' -p '$SPEC' train.idx > /dev/null" /dev/null > "$T/tty" < /dev/null
	grep -q $'\r''refurb-partial: ' "$T/tty"
}

@test "a reader waiting for the chain says so after a few seconds" {
	need_numpy
	mkfifo "$T/fifo"
	export REFURB_STREAM_WAIT=1
	( sleep 5; refurb-plan -q -b 8 -e 0 train.evict |
		refurb-partial -q -c "$T/c" -p "$SPEC" train.idx |
		refurb-final -q -p "$FINAL" -o "$T/fifo" ) &
	run "$PY" -c '
import sys
from refurb_stream import open_stream
s = open_stream(sys.argv[1])
print(sum(len(b.ids) for b in s))' "$T/fifo"
	wait
	[ "$status" -eq 0 ]
	echo "$output"
	[ "${lines[0]}" = "refurb_stream: $T/fifo: waiting for the chain to open it (start the refurb chain with -o $T/fifo beside the trainer)" ]
	[ "${lines[1]}" = 40 ]
}

@test "refurb_stream.chain.Chain: the chain on a FIFO of its own, stopped and removed at the end; a failed chain is an error" {
	"$PY" -c 'import torch' 2>/dev/null || skip "torch is not installed"
	run "$PY" - <<'EOF'
import os, time
from refurb_stream import RefurbDataset, StreamError
from refurb_stream.chain import Chain, ChainError
cmd = ("refurb-plan -q -b 8 -e 0-9 train.evict | refurb-partial -q -c {c} -p 'resize=64' "
       "train.idx | refurb-final -q -p 'crop=48' -o {{fifo}}")
with Chain(cmd.format(c=os.environ["BATS_TEST_TMPDIR"] + "/c")) as fifo:
    ds = RefurbDataset(fifo)
    print([sum(len(x) for x, y in ds) for epoch in range(2)])  # 2 of 10 epochs
print(os.path.exists(fifo), os.path.exists(os.path.dirname(fifo)))
try:
    with Chain("refurb-final --no-such-option -o {fifo}") as fifo:
        for x, y in RefurbDataset(fifo):
            pass
except StreamError as e:
    print("ChainStopped:", "empty stream" in str(e))
try:
    with Chain("exit 3") as fifo:
        time.sleep(1)           # it exits on its own before the block ends
except ChainError as e:
    print(e)
EOF
	[ "$status" -eq 0 ]
	# the stopped chain's messages (stderr) may come before, between or
	# after the lines Python prints: look for each line, not at a place
	grep -qx "\[40, 40\]" <<< "$output"
	grep -qx "False False" <<< "$output"
	grep -qx "ChainStopped: True" <<< "$output"
	grep -qx "the refurb chain exited with status 3: exit 3" <<< "$output"
	# leaving the block early stopped the chain, which said where
	grep -q "^refurb-final: interrupted (SIGTERM) after writing epoch" <<< "$output"
}

@test "refurb_stream.chain.Chain: leaving the block early waits for every program, so the next chain on the same cache runs" {
	"$PY" -c 'import torch' 2>/dev/null || skip "torch is not installed"
	run "$PY" - <<'EOF'
import os, signal
from refurb_stream import RefurbDataset
from refurb_stream.chain import Chain
cmd = ("refurb-plan -q -b 8 -e 0-99 train.evict | refurb-partial -q -c {c} -p 'resize=64' "
       "train.idx | refurb-final -q -p 'crop=48' -o {{fifo}}")
for run in range(3):
    chain = Chain(cmd.format(c=os.environ["BATS_TEST_TMPDIR"] + "/c"))
    with chain as fifo:
        group = chain.proc.pid
        print("run", run, sum(len(x) for x, y in RefurbDataset(fifo)))
    try:
        os.killpg(group, 0)
        print("still running")
    except ProcessLookupError:
        print("all gone")
EOF
	[ "$status" -eq 0 ]
	echo "$output"
	grep -qx "run 2 40" <<< "$output"
	[ "$(grep -cx "all gone" <<< "$output")" -eq 3 ]
	run ! grep -q "locked" <<< "$output"
}

@test "refurb_stream.chain.Chain: stop() returns only when no program of the chain is left, though its shell ends first" {
	"$PY" -c 'import torch' 2>/dev/null || skip "torch is not installed"
	# a member that outlives SIGTERM by 1.5 s (as refurb-partial does
	# while it checkpoints a large cache); sh itself ends at SIGTERM
	run "$PY" - <<'EOF'
import os, time
from refurb_stream import open_stream
from refurb_stream.chain import Chain
cmd = ("sh -c 'trap \"\" TERM; sleep 1.5' & "
       "refurb-plan -q -b 8 -e 0-99 train.evict | refurb-partial -q -c {c} -p 'resize=64' "
       "train.idx | refurb-final -q -p 'crop=48' -o {{fifo}}")
chain = Chain(cmd.format(c=os.environ["BATS_TEST_TMPDIR"] + "/c"))
with chain as fifo:
    group = chain.proc.pid
    with open_stream(fifo) as s:
        next(iter(s))
    start = time.monotonic()
print("stopped after %.1f s" % (time.monotonic() - start))
try:
    os.killpg(group, 0)
    print("still running")
except ProcessLookupError:
    print("all gone")
EOF
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "all gone" <<< "$output"
}

# killed_trainer MODE: a trainer starts a Chain on the cache $T/c
# (writing the FIFO's directory, the chain's process group and the pid of
# the holder below into $T/dir, for teardown), then, by MODE: "waiting"
# does not open the FIFO (refurb-final waits for its reader), "reading"
# reads a batch, "holder" reads a batch and forks a child that keeps the
# FIFO open (no EPIPE reaches refurb-final); then it is killed with -9.
# Every program of the chain (and its shell) must be gone within 5 s, the
# directory too, and the cache must take a new chain at once.
killed_trainer() {
	"$PY" - "$1" "$T/c" "$T/dir" <<'EOF' &
import os, sys, time
from refurb_stream import open_stream
from refurb_stream.chain import Chain
mode, cache, info = sys.argv[1:]
chain = Chain("refurb-plan -q -b 8 -e 0-999 train.evict | refurb-partial -q -c %s "
              "-p 'resize=64' train.idx | refurb-final -q -p 'crop=48' -o {fifo}" % cache)
fifo = chain.start()
if mode != "waiting":
    stream = open_stream(fifo)
    next(iter(stream))
holder = 0
if mode == "holder":
    holder = os.fork()
    if holder == 0:
        time.sleep(30)           # holds the stream's FIFO open, reads nothing
        os._exit(0)
with open(info + ".tmp", "w") as f:
    f.write("%s %d %d\n" % (os.path.dirname(fifo), chain.proc.pid, holder))
os.rename(info + ".tmp", info)
time.sleep(600)
EOF
	local pid=$!
	echo "$pid" >> "$T/bg"
	for _ in $(seq 300); do [ -s "$T/dir" ] && break; sleep 0.1; done
	[ -s "$T/dir" ]
	read -r dir group holder < "$T/dir"
	echo "-$group" >> "$T/bg"
	if [ "$holder" -ne 0 ]; then echo "$holder" >> "$T/bg"; fi
	[ -d "$dir" ]
	sleep 1
	pgrep -f -- "refurb-final .*-o $dir" > /dev/null   # the chain runs
	kill -9 "$pid"
	wait "$pid" || true
	local gone=0
	for _ in $(seq 50); do
		if ! pgrep -f -- "refurb-[a-z]+ .*$T/c" > /dev/null && [ ! -e "$dir" ]; then
			gone=1
			break
		fi
		sleep 0.1
	done
	pgrep -a -f -- "refurb-[a-z]+ .*$T/c" >&2 || true
	ls -la "$dir" >&2 || true
	[ "$gone" -eq 1 ]
	# the cache is unlocked and whole: a chain runs on it at once
	refurb-plan -q -b 8 -e 0 train.evict |
		refurb-partial -q -c "$T/c" -p 'resize=64' train.idx |
		refurb-final -q -p 'crop=48' > "$T/again"
	refurb-dump --verify "$T/c"
}

# what a failed test leaves running: the trainers, the chains' process
# groups and the holders, by id
teardown() {
	[ -s "$T/bg" ] || return 0
	kill -9 -- $(cat "$T/bg") 2> /dev/null || true
}

@test "Chain: a trainer killed with -9 before it opens the FIFO leaves no program, no directory, an unlocked cache" {
	need_numpy
	killed_trainer waiting
}

@test "Chain: a trainer killed with -9 while it reads leaves no program, no directory, an unlocked cache" {
	need_numpy
	killed_trainer reading
}

@test "Chain: a trainer killed with -9 whose forked child holds the FIFO: the chain still dies with the trainer" {
	need_numpy
	killed_trainer holder
}

# shell_chain FIFO CACHE READER: the chain of a shell script, in the
# background, refurb-final watching READER (--reader-pid); its stderr in
# $T/err, its exit status in $T/status, its pid in $chain
shell_chain() {
	( set +e -o pipefail
	  refurb-plan -q -b 8 -e 0-999 train.evict |
		refurb-partial -q -c "$2" -p 'resize=64' train.idx |
		refurb-final -q -p 'crop=48' -o "$1" --reader-pid "$3"
	  echo $? > "$T/status" ) 2> "$T/err" &
	chain=$!
	echo "$chain" >> "$T/bg"
}

# chain_gone CACHE SECONDS: no program of the chain on CACHE after SECONDS
chain_gone() {
	for _ in $(seq $(($2 * 10))); do
		pgrep -f -- "refurb-[a-z]+ .*$1" > /dev/null || return 0
		sleep 0.1
	done
	pgrep -a -f -- "refurb-[a-z]+ .*$1" >&2
	return 1
}

@test "shell: a trainer killed before it opens the FIFO: refurb-final --reader-pid stops, says why, the chain ends" {
	mkfifo "$T/fifo"
	sleep 600 &                 # a trainer that never opens the FIFO
	trainer=$!
	echo "$trainer" >> "$T/bg"
	shell_chain "$T/fifo" "$T/c" "$trainer"
	sleep 1
	pgrep -f -- "refurb-final .*-o $T/fifo" > /dev/null
	kill -9 "$trainer"
	chain_gone "$T/c" 3
	wait "$chain"
	cat "$T/err"
	[ "$(cat "$T/status")" -eq 143 ]
	grep -qx "refurb-final: $T/fifo: its reader, process $trainer (--reader-pid), is gone; stopping" "$T/err"
	grep -qx "refurb-final: interrupted before writing a batch" "$T/err"
	refurb-dump --verify "$T/c"
}

@test "shell: a trainer killed while a forked child holds the FIFO: refurb-final --reader-pid stops the chain" {
	need_numpy
	mkfifo "$T/fifo"
	"$PY" - "$T/fifo" "$T/holder" <<'EOF' &
import os, sys, time
from refurb_stream import open_stream
stream = open_stream(sys.argv[1])
next(iter(stream))
holder = os.fork()
if holder == 0:
    time.sleep(30)               # holds the FIFO open, reads nothing
    os._exit(0)
open(sys.argv[2], "w").write("%d\n" % holder)
time.sleep(600)
EOF
	trainer=$!
	echo "$trainer" >> "$T/bg"
	shell_chain "$T/fifo" "$T/c" "$trainer"
	for _ in $(seq 300); do [ -s "$T/holder" ] && break; sleep 0.1; done
	cat "$T/holder" >> "$T/bg"
	sleep 1
	kill -9 "$trainer"
	chain_gone "$T/c" 8          # refurb-final blocked on the full FIFO: 5 s
	wait "$chain"
	cat "$T/err"
	[ "$(cat "$T/status")" -eq 143 ]
	grep -qx "refurb-final: $T/fifo: its reader, process $trainer (--reader-pid), is gone; stopping" "$T/err"
	grep -q "^refurb-final: interrupted .*after writing epoch 0" "$T/err"
	refurb-dump --verify "$T/c"
}

@test "--reader-pid: a bad value is a usage error" {
	run refurb-final -p crop=48 --reader-pid 0 -i /dev/null
	expect_fail 2 "refurb-final: --reader-pid"
}
