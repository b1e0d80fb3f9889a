#!/usr/bin/env bats
# tests/run, the runner of make check: one line per test file as it ends
# (running count, name, passed, failed, seconds), files in parallel but
# those marked serial, the TAP logs kept, "N passed, N failed" at the end.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	T="$BATS_TEST_TMPDIR"
	mkdir -p "$T/tests"
	cd "$T"
	# two parallel files that each take a second, one serial failing file
	printf '@test "a1" { true; }\n@test "a2" { sleep 1; }\n' > tests/a.bats
	printf '@test "c1" { sleep 1; }\n' > tests/c.bats
	printf '# tests/run: serial (a test)\n@test "b1" { echo why; false; }\n' > tests/b.bats
}

@test "tests/run -j 2: a line per file, the serial one last, the failure's log, the totals" {
	run -1 env BUILD="$T/b" "$TOP/tests/run" -j 2 tests/a.bats tests/b.bats tests/c.bats
	[[ "${lines[0]}" =~ ^\[1/3\]\ [ac]\.bats\ +[12]\ passed,\ 0\ failed\ +[0-9.]+s$ ]]
	[[ "${lines[1]}" =~ ^\[2/3\]\ [ac]\.bats\ +[12]\ passed,\ 0\ failed\ +[0-9.]+s$ ]]
	[[ "${lines[2]}" =~ ^\[3/3\]\ b\.bats\ +0\ passed,\ 1\ failed\ +[0-9.]+s$ ]]
	[ "${lines[3]}" = "    b.bats: not ok 1 b1" ]
	[ "${lines[-1]}" = "3 passed, 1 failed" ]
	grep -q '^# why' "$T/b/test-logs/b.bats.tap"
	# the next run starts the longest first
	[ "$(wc -l < "$T/b/test-logs/times")" -eq 3 ]
}

@test "tests/run -j 2 runs two files at once; -j 1 one after the other" {
	# each file waits (up to 5 s) for the other to have started
	printf '@test "x" { touch "%s/x"; for i in $(seq 50); do [ -e "%s/y" ] && return 0; sleep 0.1; done; false; }\n' "$T" "$T" > tests/x.bats
	printf '@test "y" { touch "%s/y"; for i in $(seq 50); do [ -e "%s/x" ] && return 0; sleep 0.1; done; false; }\n' "$T" "$T" > tests/y.bats
	run -0 env BUILD="$T/b" "$TOP/tests/run" -j 2 tests/x.bats tests/y.bats
	[ "${lines[-1]}" = "2 passed, 0 failed" ]
	rm "$T/x" "$T/y"
	run -1 env BUILD="$T/b" "$TOP/tests/run" -j 1 tests/x.bats tests/y.bats
	[ "${lines[-1]}" = "1 passed, 1 failed" ]
}

@test "tests/run: a bad -j is a usage error" {
	run -2 "$TOP/tests/run" -j x
	expect_fail 2 "tests/run: -j x: not a count of files"
}

@test "make check passes make's -j to tests/run" {
	run -0 make -s -n -j3 -C "$TOP" check
	[[ "$output" == *"tests/run -j 3 "* ]]
}

@test "tests/run leaves BUILD as given (scripts read it relative to the tree), REFURB_BUILD absolute" {
	printf '@test "e" { [ "$BUILD" = rel/b ]; [ "$REFURB_BUILD" = "%s/rel/b" ]; }\n' "$T" > tests/e.bats
	run -0 env BUILD=rel/b "$TOP/tests/run" -j 1 tests/e.bats
	[ "${lines[-1]}" = "1 passed, 0 failed" ]
	[ -f "$T/rel/b/test-logs/e.bats.tap" ]
}
