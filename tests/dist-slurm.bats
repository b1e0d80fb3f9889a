#!/usr/bin/env bats
# A real Slurm cluster on this host: munged, slurmctld and two slurmd
# (node names n1 and n2, both on 127.0.0.1, started with slurmd -N) run
# the sbatch recipe of refurb(7) MULTIPLE NODES, extracted from the man
# page itself: 2 tasks, one rank and one refurb chain each, train a small
# CNN with DistributedDataParallel (tests/dist/ddp_train.py).  Checks equal
# steps, coverage of every epoch, and that no refurb process outlives the
# job, also when it is cancelled.  Every daemon is started by setup_file
# under the test's directory, on free ports, and stopped by
# teardown_file.
# tests/run: serial (a Slurm cluster on TCP ports)

load helpers
bats_require_minimum_version 1.5.0

# slurm_missing: why the cluster cannot run here, or nothing
slurm_missing() {
	[ "$(id -u)" -eq 0 ] ||
		{ echo "slurmd must run as root to start tasks (not root here)"; return 0; }
	for p in munged mungekey slurmctld slurmd sbatch srun scontrol sinfo squeue; do
		command -v $p > /dev/null ||
			{ echo "$p is not installed (slurm-wlm, munge: scripts/deps --dist)"; return 0; }
	done
	ddp_missing
}

start_cluster() {
	local C="$BATS_FILE_TMPDIR/slurm" p
	mkdir -p "$C/state" "$C/spool"
	chmod 755 "$C"
	mungekey -c -k "$C/munge.key"
	munged -f --socket="$C/munge.sock" --key-file="$C/munge.key" \
		--log-file="$C/munged.log" --pid-file="$C/munged.pid" \
		--seed-file="$C/munged.seed"
	set -- $(free_ports 4)
	echo "$4" > "$C/master-port"
	cat > "$C/slurm.conf" <<CONF
ClusterName=refurbtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$2
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$C/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$C/state
SlurmdSpoolDir=$C/spool/%n
SlurmctldPidFile=$C/slurmctld.pid
SlurmdPidFile=$C/slurmd-%n.pid
SlurmctldLogFile=$C/slurmctld.log
SlurmdLogFile=$C/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$2 CPUs=1
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$3 CPUs=1
PartitionName=test Nodes=n1,n2 Default=YES MaxTime=10 State=UP
CONF
	export SLURM_CONF="$C/slurm.conf"
	slurmctld -f "$SLURM_CONF"
	slurmd -f "$SLURM_CONF" -N n1
	slurmd -f "$SLURM_CONF" -N n2
	for _ in $(seq 300); do
		if [ "$(sinfo -h -o '%T %D' 2> /dev/null)" = "idle 2" ]; then return 0; fi
		sleep 0.1
	done
	echo "the cluster did not come up:" >&2
	sinfo >&2 || true
	tail -n 5 "$C"/*.log >&2
	return 1
}

# stop_cluster: SIGTERM to the daemons setup_file started (their pid
# files), and wait up to 10 s for each to end.
stop_cluster() {
	local C="$BATS_FILE_TMPDIR/slurm" f pid
	for f in slurmd-n1.pid slurmd-n2.pid slurmctld.pid munged.pid; do
		[ -s "$C/$f" ] || continue
		pid=$(cat "$C/$f")
		kill "$pid" 2> /dev/null || continue
		for _ in $(seq 100); do
			kill -0 "$pid" 2> /dev/null || break
			sleep 0.1
		done
	done
	return 0
}

setup_file() {
	# bats 1.8 cannot skip in setup_file: every test's setup() skips instead
	local why
	why=$(slurm_missing)
	[ -z "$why" ] || return 0
	make_dataset "$BATS_FILE_TMPDIR/ds" 65 3
	refurb-index -q -o "$BATS_FILE_TMPDIR/ds.idx" "$BATS_FILE_TMPDIR/ds"
	# the batch script, as refurb(7) prints it
	sed -n '/recipe: slurm begin/,/recipe: slurm end/p' "$TOP/man/man7/refurb.7" |
		grep -v '^\.' | sed 's/\\-/-/g; s/\\e/\\/g' > "$BATS_FILE_TMPDIR/train.sbatch"
	start_cluster
}

teardown_file() {
	stop_cluster
}

setup() {
	set -o pipefail
	skip_if_missing slurm_missing
	C="$BATS_FILE_TMPDIR/slurm"
	IDX="$BATS_FILE_TMPDIR/ds.idx"
	T="$BATS_TEST_TMPDIR"
	export SLURM_CONF="$C/slurm.conf"
	export MASTER_ADDR=127.0.0.1 MASTER_PORT="$(cat "$C/master-port")"
	# the recipe runs $PYTHON: Debian's, which has torch, whatever
	# python3 comes first on PATH
	export PYTHON=/usr/bin/python3 PYTHONPATH="$TOP/python"
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

@test "the recipe of refurb(7) is a batch script for 2 tasks" {
	[ "$(sed -n 1p "$BATS_FILE_TMPDIR/train.sbatch")" = '#!/bin/sh' ]
	[ "$(grep -c '^#SBATCH --nodes=2 --ntasks-per-node=1$' "$BATS_FILE_TMPDIR/train.sbatch")" -eq 1 ]
	[ "$(grep -c '^exec srun --kill-on-bad-exit=1 sh -c' "$BATS_FILE_TMPDIR/train.sbatch")" -eq 1 ]
	sh -n "$BATS_FILE_TMPDIR/train.sbatch"
}

@test "sbatch runs the recipe on n1 and n2: equal steps, every sample once per epoch plus the pad, no refurb process left" {
	mkdir "$T/out"
	timeout 300 sbatch --wait -o "$T/job.out" "$BATS_FILE_TMPDIR/train.sbatch" \
		"$TOP/tests/dist/ddp_train.py" "$T/out" "$IDX" "$T/cache" ||
		{ cat "$T/job.out" >&2; false; }
	[ "$(cat "$T/out/rank-0.done")" = "steps 15 epochs 0-2" ]
	[ "$(cat "$T/out/rank-1.done")" = "steps 15 epochs 0-2" ]
	for e in 0 1 2; do
		awk -v e=$e '$1 == e { print $4 }' "$T"/out/rank-?.log | tr ',' '\n' | sort -n > "$T/ids"
		[ "$(wc -l < "$T/ids")" -eq 66 ]
		[ "$(seq 0 64)" = "$(sort -nu "$T/ids")" ]
		[ "$(uniq -d "$T/ids" | wc -l)" -eq 1 ]
	done
	# one rank on each node, each with its own cache
	ls -d "$T/cache/shard-0-of-2" "$T/cache/shard-1-of-2"
	no_chain_left "$T/cache"
}

@test "scancel of a running job stops every task and every chain" {
	mkdir "$T/out"
	job=$(sbatch --parsable -o "$T/job.out" "$BATS_FILE_TMPDIR/train.sbatch" \
		"$TOP/tests/dist/ddp_train.py" "$T/out" "$IDX" "$T/cache" --epochs 40 \
		--step-sleep 0.2)
	for _ in $(seq 600); do
		if [ -s "$T/out/rank-1.log" ]; then break; fi
		sleep 0.1
	done
	[ -s "$T/out/rank-1.log" ]
	[ "$(pgrep -c -f -- "refurb-final .*$T/cache")" -eq 2 ]
	scancel "$job"
	for _ in $(seq 300); do
		queued=$(squeue -h -j "$job" 2> /dev/null) || queued=
		if [ -z "$queued" ]; then break; fi
		sleep 0.1
	done
	queued=$(squeue -h -j "$job" 2> /dev/null) || queued=
	[ -z "$queued" ]
	no_chain_left "$T/cache"
	[ ! -e "$T/out/rank-0.done" ]
}
