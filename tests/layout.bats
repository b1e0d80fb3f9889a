#!/usr/bin/env bats
# tests/check-layout: lib/'s groups depend only on the groups below them
# (lib/README) and no two files depend on each other, read from the
# objects with nm.  On the build, and on small made-up builds that break
# each rule once.

load helpers

# obj GROUP NAME CODE: compile CODE into the fake build's lib/GROUP/NAME.o
obj() {
	mkdir -p "$fake/lib/$1"
	printf '%s\n' "$3" > "$BATS_TEST_TMPDIR/$2.c"
	cc -c -o "$fake/lib/$1/$2.o" "$BATS_TEST_TMPDIR/$2.c"
}

setup() {
	fake="$BATS_TEST_TMPDIR/build"
	# a legal layout: stage uses core, a file uses another of its group
	obj core clock 'int rfb_clock_now(void) { return 1; }'
	obj core meter 'int rfb_clock_now(void); int rfb_meter_tick(void) { return rfb_clock_now(); }'
	obj stage run 'int rfb_meter_tick(void); int rfb_run(void) { return rfb_meter_tick(); }'
}

@test "check-layout: the build's lib/ has no order violation and no cycle" {
	[ -d "$BUILD_DIR/lib/core" ] || skip "no build under $BUILD_DIR"
	run "$TOP/tests/check-layout" "$BUILD_DIR"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "${lines[-1]}" == *" 0 problems" ]] || false
}

@test "check-layout: a legal made-up layout passes" {
	run "$TOP/tests/check-layout" "$fake"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "check-layout: 3 files in 2 groups, 0 problems" ]
}

@test "check-layout: a file that uses a group above its own fails" {
	obj core bad 'int rfb_run(void); int rfb_bad(void) { return rfb_run(); }'
	run "$TOP/tests/check-layout" "$fake"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "order: lib/core/bad.c (core) uses rfb_run of lib/stage/run.c (stage, above it)" ]
	[ "${lines[-1]}" = "check-layout: 4 files in 2 groups, 1 problems" ]
}

@test "check-layout: two files that use each other fail" {
	obj core clock 'int rfb_meter_tick(void); int rfb_clock_now(void) { return 1; } int rfb_clock_both(void) { return rfb_meter_tick(); }'
	run "$TOP/tests/check-layout" "$fake"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "cycle: lib/core/clock.c <-> lib/core/meter.c" ]
	[ "${lines[-1]}" = "check-layout: 3 files in 2 groups, 1 problems" ]
}

@test "check-layout: a ring of three files fails" {
	obj core clock 'int rfb_c(void); int rfb_clock_now(void) { return rfb_c(); }'
	obj core third 'int rfb_meter_tick(void); int rfb_c(void) { return rfb_meter_tick(); }'
	run "$TOP/tests/check-layout" "$fake"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "cycle: lib/core/clock.c <-> lib/core/meter.c <-> lib/core/third.c" ]
}

@test "check-layout: a folder that is not a group fails" {
	obj misc stray 'int rfb_stray(void) { return 0; }'
	run "$TOP/tests/check-layout" "$fake"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "unknown: lib/misc/ is not a group of lib/README" ]
}

@test "check-layout: no objects at all fails" {
	mkdir -p "$BATS_TEST_TMPDIR/empty/lib"
	run "$TOP/tests/check-layout" "$BATS_TEST_TMPDIR/empty"
	[ "$status" -eq 1 ]
	[ "$output" = "check-layout: no objects under $BATS_TEST_TMPDIR/empty/lib (build first)" ]
}
