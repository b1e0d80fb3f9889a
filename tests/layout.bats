#!/usr/bin/env bats
# tests/check-layout: lib/'s groups depend only on the groups below them
# (lib/README), no two files depend on each other, only rfb_ (API) and
# rfbi_ (internal) symbols are exported, no writable static data; read
# from the objects with nm.  On the build, and on small made-up builds
# that break each rule once.

load helpers

# obj GROUP NAME CODE: compile CODE into the fake build's lib/GROUP/NAME.o
obj() {
	mkdir -p "$fake/lib/$1"
	printf '%s\n' "$3" > "$BATS_TEST_TMPDIR/$2.c"
	cc -c -o "$fake/lib/$1/$2.o" "$BATS_TEST_TMPDIR/$2.c"
}

# check: tests/check-layout on the fake build and source tree
check() {
	run "$TOP/tests/check-layout" "$fake" "$src"
}

setup() {
	fake="$BATS_TEST_TMPDIR/build"
	src="$BATS_TEST_TMPDIR/src"
	mkdir -p "$src/lib/include/refurb"
	cp "$TOP/lib/README" "$src/lib/README"
	printf '%s\n' 'int rfb_api(void);' 'int rfbi_oops(void); /* internal in the API */' \
		> "$src/lib/include/refurb/api.h"
	# a legal layout: stage uses core, a file uses another of its group
	obj core clock 'int rfbi_clock_now(void) { return 1; }'
	obj core meter 'int rfbi_clock_now(void); int rfbi_meter_tick(void) { return rfbi_clock_now(); }'
	obj stage run 'int rfbi_meter_tick(void); int rfbi_run(void) { return rfbi_meter_tick(); }'
	# read-only tables are fine, also tables of pointers (.data.rel.ro)
	obj core names 'static const char *const n[] = { "a", "b" }; const char *rfbi_name(int i) { return n[i]; }'
}

@test "check-layout: the build's lib/ has no order violation and no cycle" {
	[ -d "$BUILD_DIR/lib/core" ] || skip "no build under $BUILD_DIR"
	run "$TOP/tests/check-layout" "$BUILD_DIR"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "${lines[-1]}" == *" 0 problems" ]] || false
}

@test "check-layout: a legal made-up layout passes" {
	check
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "check-layout: 4 files in 2 groups, 0 problems" ]
}

@test "check-layout: a file that uses a group above its own fails" {
	obj core bad 'int rfbi_run(void); int rfbi_bad(void) { return rfbi_run(); }'
	check
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "order: lib/core/bad.c (core) uses rfbi_run of lib/stage/run.c (stage, above it)" ]
	[ "${lines[-1]}" = "check-layout: 5 files in 2 groups, 1 problems" ]
}

@test "check-layout: two files that use each other fail" {
	obj core clock 'int rfbi_meter_tick(void); int rfbi_clock_now(void) { return 1; } int rfbi_clock_both(void) { return rfbi_meter_tick(); }'
	check
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "cycle: lib/core/clock.c <-> lib/core/meter.c" ]
	[ "${lines[-1]}" = "check-layout: 4 files in 2 groups, 1 problems" ]
}

@test "check-layout: a ring of three files fails" {
	obj core clock 'int rfbi_c(void); int rfbi_clock_now(void) { return rfbi_c(); }'
	obj core third 'int rfbi_meter_tick(void); int rfbi_c(void) { return rfbi_meter_tick(); }'
	check
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "cycle: lib/core/clock.c <-> lib/core/meter.c <-> lib/core/third.c" ]
}

@test "check-layout: a folder that is not a group fails" {
	obj misc stray 'int rfbi_stray(void) { return 0; }'
	check
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "unknown: lib/misc/ is not a group of lib/README" ]
}

@test "check-layout: no objects at all fails" {
	mkdir -p "$BATS_TEST_TMPDIR/empty/lib"
	run "$TOP/tests/check-layout" "$BATS_TEST_TMPDIR/empty" "$src"
	[ "$status" -eq 1 ]
	[ "$output" = "check-layout: no objects under $BATS_TEST_TMPDIR/empty/lib (build first)" ]
}

@test "check-layout: an exported symbol without a prefix fails" {
	obj core leak 'int cache_recover(void) { return 0; }'
	check
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "export: lib/core/leak.c exports cache_recover (neither rfb_ nor rfbi_)" ]
}

@test "check-layout: an rfb_ symbol that no installed header declares fails" {
	obj core hidden 'int rfb_nobody_declares_this(void) { return 0; }'
	check
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "export: lib/core/hidden.c exports rfb_nobody_declares_this, which no header of lib/include/refurb/ declares (static, or rfbi_)" ]
}

@test "check-layout: an API symbol passes, an rfbi_ one in an API header fails" {
	obj core api 'int rfb_api(void) { return 0; }'
	obj core oops 'int rfbi_oops(void) { return 0; }'
	check
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "export: lib/core/oops.c exports rfbi_oops, internal but in a header of lib/include/refurb/" ]
	[ "${lines[-1]}" = "check-layout: 6 files in 2 groups, 1 problems" ]
}

@test "check-layout: writable static data fails, global or in a function" {
	obj core counter 'static int calls; int rfbi_count(void) { return ++calls; }'
	obj core header 'struct h { char path[4096]; }; char *rfbi_head(void) { static struct h a; return a.path; }'
	obj core global 'int rfbi_global_level = 3;'
	check
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "static: lib/core/counter.c has writable data calls" ]
	[ "${lines[1]}" = "static: lib/core/global.c has writable data rfbi_global_level" ]
	[ "${lines[2]}" = "static: lib/core/header.c has writable data a.0" ]
	[ "${lines[-1]}" = "check-layout: 7 files in 2 groups, 3 problems" ]
}

@test "check-layout: a file that includes another group's private header fails" {
	mkdir -p "$src/lib/ops" "$src/lib/pipeline"
	printf 'int rfbi_kernel(void);\n' > "$src/lib/ops/ops_internal.h"
	# its own group's private header and the API are fine
	printf '#include "ops_internal.h"\n#include "refurb/api.h"\n' > "$src/lib/ops/ops_a.c"
	printf '#include <string.h>\n#include "../ops/ops_internal.h"\n' > "$src/lib/pipeline/win.c"
	check
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "include: lib/pipeline/win.c includes lib/ops/ops_internal.h, private to lib/ops/ (use a header of lib/include/refurb/)" ]
	[ "${lines[-1]}" = "check-layout: 4 files in 2 groups, 1 problems" ]
}

@test "check-layout: a static function named rfb_ (in a private header or a source) fails" {
	mkdir -p "$src/lib/ops"
	printf 'static inline int clip8(int v) { return v; }\n' > "$src/lib/ops/ops_internal.h"
	printf 'static inline unsigned char\nrfb_pil_blend(int a, int b)\n{ return a + b; }\n' >> "$src/lib/ops/ops_internal.h"
	printf 'static int rfb_local(void) { return 0; }\nint rfb_api(void) { return rfb_local(); }\n' > "$src/lib/ops/ops_a.c"
	check
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "prefix: lib/ops/ops_a.c has a static rfb_local: rfb_ is the API's prefix (drop it, or rfbi_ across files)" ]
	[ "${lines[1]}" = "prefix: lib/ops/ops_internal.h has a static rfb_pil_blend: rfb_ is the API's prefix (drop it, or rfbi_ across files)" ]
	[ "${lines[-1]}" = "check-layout: 4 files in 2 groups, 2 problems" ]
}

@test "check-layout: an API header implemented by two groups fails" {
	# a function its comments only mention does not count
	printf '%s\n' '/* see rfb_helper() */' 'int rfb_api_two(void);' \
		>> "$src/lib/include/refurb/api.h"
	obj core api 'int rfb_api(void) { return 0; }'
	obj pipeline helper 'int rfb_helper(void) { return 1; }'
	obj stage two 'int rfb_api_two(void) { return 2; }'
	check
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "header: lib/include/refurb/api.h is implemented in lib/core/ (rfb_api), lib/stage/ (rfb_api_two) (one group per header)" ]
	[ "${lines[-1]}" = "check-layout: 7 files in 3 groups, 1 problems" ]
}
