#!/usr/bin/env bats
# The cache's promises over a history (issue 29, refurb-cache(5)): a short
# scripts/soak (the full one has more runs, resumes and kills): one plan
# run again on one cache, resumes at random steps, kill -9 of random
# programs of the chain at random moments, trainers under launch() and
# under Chain killed with SIGKILL.  After each step the cache verifies, is
# within its disk bound, the stream is the uninterrupted run's batch for
# batch, and no process, temporary file, shared memory or lock is left.
# The seed is printed: SOAK_SEED=N replays a failure.
# tests/run: serial (kills at moments timed by sleeps, CPU on every core)

load helpers
bats_require_minimum_version 1.5.0

@test "soak: 3 runs, 2 resumes, 6 kill -9, 2 killed trainers (launch, Chain) on one cache: verified, within the bound, the same batches, nothing left" {
	run "$TOP/scripts/soak" -s "${SOAK_SEED:-$$}" -q -n 3 -R 2 -k 6 -t 2 -N 120 -b 16 -e 5
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" =~ ^soak:\ 1[34]\ steps\ passed\ \(3\ runs,\ 2\ resumes,\ 6\ kills,\ 2\ killed\ trainers\;\ seed\ [0-9]+\)$ ]]
}

@test "soak: a bad option is a usage error (exit 2)" {
	run "$TOP/scripts/soak" -k many
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "soak: -k must be a number, not 'many'" ]]
}
