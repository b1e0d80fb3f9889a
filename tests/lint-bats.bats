#!/usr/bin/env bats
# tests/lint-bats: the check of the test suite itself.  It must pass on
# the real suite, and catch each pattern of an assertion that cannot fail
# (one small bad file per pattern), and accept the ways to write them.
#
# The files under test are tests/data/lint-bats/NAME.bats.txt, kept out
# of tests/*.bats so that neither bats nor a scan of the suite takes their
# deliberately weak lines for tests of this project.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	T="$BATS_TEST_TMPDIR"
	LINT="$TOP/tests/lint-bats"
}

# bats_file NAME: tests/data/lint-bats/NAME.bats.txt as $T/NAME.bats
bats_file() {
	cp "$TOP/tests/data/lint-bats/$1.bats.txt" "$T/$1.bats"
}

# expect_problem NAME LINE RULE: the linter rejects NAME.bats with exactly
# one problem, RULE at LINE
expect_problem() {
	run --separate-stderr "$LINT" "$T/$1.bats"
	[ "$status" -eq 1 ] || { echo "status $status: $output"; false; }
	[ "${#lines[@]}" -eq 1 ] || { echo "$output"; false; }
	[[ "${lines[0]}" == "$T/$1.bats:$2: $3: "* ]] || { echo "${lines[0]}"; false; }
	[ "$stderr" = "lint-bats: 1 problem; tests/lint-bats --help says why and how to fix each" ]
}

@test "the real suite passes" {
	run "$LINT"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "bang: ! cmd before the last line" {
	bats_file bang
	expect_problem bang 3 bang
	[[ "${lines[0]}" == *"write \`run ! cmd\` or \`! cmd || false\`"* ]]
}

@test "bang: inside a helper function and inside a loop" {
	bats_file bang-func
	expect_problem bang-func 2 bang
	bats_file bang-loop
	expect_problem bang-loop 2 bang
}

@test "and-chain: a && b before the last line" {
	bats_file and
	expect_problem and 3 and-chain
	[[ "${lines[0]}" == *"errexit ignores a failing \`a\`"* ]]
}

@test "and-chain: cd dir && cmd; { a && b; } is no exception" {
	bats_file and-cd
	expect_problem and-cd 2 and-chain
	bats_file and-brace
	expect_problem and-brace 2 and-chain
}

@test "swallow: [ ... ] || true, || echo, || { echo; }" {
	bats_file swallow-true
	expect_problem swallow-true 2 swallow
	bats_file swallow-echo
	expect_problem swallow-echo 2 swallow
	bats_file swallow-group
	expect_problem swallow-group 3 swallow
}

@test "pipefail: a | b without pipefail, in a test and in x=\$(a | b)" {
	bats_file pipe
	expect_problem pipe 3 pipefail
	[[ "${lines[0]}" == *"a failure of \`refurb-dump\` is lost"* ]]
	bats_file pipe-assign
	expect_problem pipe-assign 2 pipefail
}

@test "pipefail: in a sh -c or bash -c string" {
	bats_file pipe-sh
	expect_problem pipe-sh 3 pipefail
	[[ "${lines[0]}" == *"the shell it starts has no pipefail"* ]]
}

@test "neg-pipe: ! a | b, even with pipefail" {
	bats_file negpipe
	expect_problem negpipe 3 neg-pipe
}

@test "run-pipe: run in a pipeline" {
	bats_file runpipe
	expect_problem runpipe 3 run-pipe
}

@test "empty-sub: [ -z \"\$(cmd)\" ] passes when cmd fails" {
	bats_file emptysub
	expect_problem emptysub 2 empty-sub
	bats_file emptysub-ok
	run "$LINT" "$T/emptysub-ok.bats"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "local-mask: local x=\$(cmd) hides cmd's status" {
	bats_file localmask
	expect_problem localmask 2 local-mask
	bats_file localmask-ok
	run "$LINT" "$T/localmask-ok.bats"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "run-status: a run whose \$status nothing checks" {
	bats_file runstatus
	expect_problem runstatus 4 run-status
	bats_file runstatus-end
	expect_problem runstatus-end 2 run-status
	bats_file runstatus-ok
	run "$LINT" "$T/runstatus-ok.bats"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "sigpipe: a | head and a | grep -q under pipefail; the comment allows it" {
	bats_file sigpipe
	expect_problem sigpipe 3 sigpipe
	bats_file sigpipe-grep
	expect_problem sigpipe-grep 3 sigpipe
	bats_file sigpipe-ok
	run "$LINT" "$T/sigpipe-ok.bats"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "good: the ways to write them, heredoc bodies and strings" {
	bats_file good
	run "$LINT" "$T/good.bats"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "several problems: one line each, FILE:LINE order, and the count" {
	bats_file many
	run --separate-stderr "$LINT" "$T/many.bats"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[0]}" == "$T/many.bats:2: and-chain: "* ]]
	[[ "${lines[1]}" == "$T/many.bats:3: bang: "* ]]
	[[ "${lines[2]}" == "$T/many.bats:4: pipefail: "* ]]
	[ "$stderr" = "lint-bats: 3 problems; tests/lint-bats --help says why and how to fix each" ]
}

@test "a missing file or one it cannot parse: exit 2 naming it" {
	run "$LINT" "$T/none.bats"
	expect_fail 2 "lint-bats: $T/none.bats: cannot read: No such file or directory"
	bats_file broken
	run "$LINT" "$T/broken.bats"
	expect_fail 2 "lint-bats: $T/broken.bats: cannot parse: line 3: unexpected \`}\`"
}

@test "an unknown option is a usage error" {
	run "$LINT" --strict
	expect_fail 2 "lint-bats: unknown option --strict"
	[ "${lines[1]}" = "Usage: tests/lint-bats [FILE...]  (--help says more)" ]
}

@test "--help says what each rule means" {
	run "$LINT" --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "tests/lint-bats [FILE...] - reject bats assertions that can never fail." ]]
	for rule in bang and-chain swallow pipefail neg-pipe run-pipe run-status empty-sub local-mask sigpipe; do
		[[ "$output" == *"  $rule "* ]] || { echo "no $rule"; false; }
	done
}
