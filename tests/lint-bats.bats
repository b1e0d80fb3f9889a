#!/usr/bin/env bats
# tests/lint-bats: the check of the test suite itself.  It must pass on
# the real suite, and catch each pattern of an assertion that cannot fail
# (one small bad file per pattern), and accept the ways to write them.
#
# The files under test are written from heredocs, with @TEST for @test:
# bats would otherwise take those lines for tests of this file.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	T="$BATS_TEST_TMPDIR"
	LINT="$TOP/tests/lint-bats"
}

# bats_file NAME < TEXT: TEXT as $T/NAME.bats, @TEST read as @test
bats_file() {
	sed 's/^\([[:blank:]]*\)@TEST /\1@test /' > "$T/$1.bats"
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
	bats_file bang <<'EOF'
@TEST "x" {
	run true
	! grep -q foo "$BATS_TEST_FILENAME"
	[ "$status" -eq 0 ]
}
EOF
	expect_problem bang 3 bang
	[[ "${lines[0]}" == *"write \`run ! cmd\` or \`! cmd || false\`"* ]]
}

@test "bang: inside a helper function and inside a loop" {
	bats_file bang-func <<'EOF'
check() {
	! grep -q x "$1"
	echo checked
}
EOF
	expect_problem bang-func 2 bang
	bats_file bang-loop <<'EOF'
@TEST "x" {
	for f in a b; do ! test -e "$f"; done
}
EOF
	expect_problem bang-loop 2 bang
}

@test "and-chain: a && b before the last line" {
	bats_file and <<'EOF'
@TEST "x" {
	run true
	[ "$status" -eq 0 ] && [ -z "$output" ]
	true
}
EOF
	expect_problem and 3 and-chain
	[[ "${lines[0]}" == *"errexit ignores a failing \`a\`"* ]]
}

@test "and-chain: cd dir && cmd; { a && b; } is no exception" {
	bats_file and-cd <<'EOF'
@TEST "x" {
	cd / && ls
	true
}
EOF
	expect_problem and-cd 2 and-chain
	bats_file and-brace <<'EOF'
@TEST "x" {
	{ false && true; }
}
EOF
	expect_problem and-brace 2 and-chain
}

@test "swallow: [ ... ] || true, || echo, || { echo; }" {
	bats_file swallow-true <<'EOF'
@TEST "x" {
	[ -e /nonexistent ] || true
}
EOF
	expect_problem swallow-true 2 swallow
	bats_file swallow-echo <<'EOF'
@TEST "x" {
	grep -q foo /dev/null || echo "no foo"
	true
}
EOF
	expect_problem swallow-echo 2 swallow
	bats_file swallow-group <<'EOF'
@TEST "x" {
	[ 1 -eq 2 ] ||
		{ echo "not equal"; }
}
EOF
	expect_problem swallow-group 3 swallow
}

@test "pipefail: a | b without pipefail, in a test and in x=\$(a | b)" {
	bats_file pipe <<'EOF'
@TEST "x" {
	echo ok
	refurb-dump x.idx |
		grep -c sample
}
EOF
	expect_problem pipe 3 pipefail
	[[ "${lines[0]}" == *"a failure of \`refurb-dump\` is lost"* ]]
	bats_file pipe-assign <<'EOF'
@TEST "x" {
	n=$(refurb-dump x.idx | wc -l)
	[ "$n" -eq 3 ]
}
EOF
	expect_problem pipe-assign 2 pipefail
}

@test "pipefail: in a sh -c or bash -c string" {
	bats_file pipe-sh <<'EOF'
@TEST "x" {
	set -o pipefail
	run sh -c "refurb-final -p crop=8 < ann.txt | head -c 10"
	[ "$status" -eq 0 ]
}
EOF
	expect_problem pipe-sh 3 pipefail
	[[ "${lines[0]}" == *"the shell it starts has no pipefail"* ]]
}

@test "neg-pipe: ! a | b, even with pipefail" {
	bats_file negpipe <<'EOF'
set -o pipefail
@TEST "x" {
	! refurb-dump x.idx | grep bad
}
EOF
	expect_problem negpipe 3 neg-pipe
}

@test "run-pipe: run in a pipeline" {
	bats_file runpipe <<'EOF'
set -o pipefail
@TEST "x" {
	run refurb-dump x.idx | cat
	[ "$status" -eq 0 ]
}
EOF
	expect_problem runpipe 3 run-pipe
}

@test "empty-sub: [ -z \"\$(cmd)\" ] passes when cmd fails" {
	bats_file emptysub <<'EOF'
@TEST "x" {
	[ -z "$(refurb-dump --help | grep '%%')" ]
}
EOF
	expect_problem emptysub 2 empty-sub
	bats_file emptysub-ok <<'EOF'
@TEST "x" {
	help=$(refurb-dump --help)
	[ -z "$help" ]
	[ -n "$(refurb-dump --help)" ]
}
EOF
	run "$LINT" "$T/emptysub-ok.bats"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "local-mask: local x=\$(cmd) hides cmd's status" {
	bats_file localmask <<'EOF'
f() {
	local n=$(refurb-dump x.idx | wc -l)
	[ "$n" -gt 0 ]
}
EOF
	expect_problem localmask 2 local-mask
	bats_file localmask-ok <<'EOF'
f() {
	local n end=$((SECONDS + 1))
	n=$(refurb-dump x.idx)
	[ -n "$n" ]
}
EOF
	run "$LINT" "$T/localmask-ok.bats"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "run-status: a run whose \$status nothing checks" {
	bats_file runstatus <<'EOF'
@TEST "x" {
	run refurb-dump x.idx
	[ "$status" -eq 0 ]
	run refurb-dump -S x.idx
	[[ "$output" == *samples* ]]
	run refurb-dump y.idx
	expect_fail 1 "refurb-dump: y.idx: "
}
EOF
	expect_problem runstatus 4 run-status
	bats_file runstatus-end <<'EOF'
@TEST "x" {
	run refurb-dump x.idx
	[ -n "$output" ]
}
EOF
	expect_problem runstatus-end 2 run-status
	bats_file runstatus-ok <<'EOF'
@TEST "x" {
	run -1 cmp -s a b
	run ! grep -q x y
	run --separate-stderr refurb-dump x.idx
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	for f in a b; do
		run refurb-dump "$f"
		[ "$status" -eq 1 ]
	done
}
helper() {
	run refurb-dump "$1"
}
EOF
	run "$LINT" "$T/runstatus-ok.bats"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "sigpipe: a | head and a | grep -q under pipefail; the comment allows it" {
	bats_file sigpipe <<'EOF'
set -o pipefail
@TEST "x" {
	refurb-dump x.idx | head -n 1
}
EOF
	expect_problem sigpipe 3 sigpipe
	bats_file sigpipe-grep <<'EOF'
@TEST "x" {
	set -o pipefail
	refurb-dump x.idx | grep -qs sample
}
EOF
	expect_problem sigpipe-grep 3 sigpipe
	bats_file sigpipe-ok <<'EOF'
@TEST "x" {
	set -o pipefail
	refurb-final -p crop=8 < ann.txt | head -c 10  # lint-bats: allow sigpipe
}
EOF
	run "$LINT" "$T/sigpipe-ok.bats"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "good: the ways to write them, heredoc bodies and strings" {
	bats_file good <<'EOF'
set -o pipefail

helper() {
	cd / && ls
}

@TEST "fixed forms" {
	run ! grep -q foo /dev/null
	! grep -q foo /dev/null || false
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ -e x ] || skip "no x"
	[ -e y ] && skip "y is there"
	[ 1 -eq 1 ] || [ 2 -eq 2 ]
	[ 1 -eq 1 ] || { echo "bad"; false; }
	grep -q x y || { echo "no x"; return 1; }
	[[ a == a && b == b ]]
	if [ -e a ] && [ -e b ]; then echo both; fi
	while ! test -e z && true; do break; done
	(cd / && ls)
	refurb-dump x.idx | grep -c sample
	echo hi | refurb-dump -
	printf 'x' | dd of=f bs=1 conv=notrunc
	kill "$pid" 2>/dev/null || true
	run -0 bash -c "set -o pipefail; a | b"
	run -0 bash -o pipefail -c 'a | b'
	python3 - <<'PY'
import sys
! not shell; a && b; x | y
PY
	cat > f <<-END
	! grep; a && b
	END
	echo "! not a command && neither | this"
	[ "$status" -eq 1 ] && [ "$output" = x ]
}

@TEST "the last line may be a negation" {
	! grep -q foo /dev/null
}
EOF
	run "$LINT" "$T/good.bats"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "several problems: one line each, FILE:LINE order, and the count" {
	bats_file many <<'EOF'
@TEST "x" {
	[ a = a ] && [ b = b ]
	! true
	a | b
	true
}
EOF
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
	bats_file broken <<'EOF'
@TEST "x" {
	if true; then
}
EOF
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
