#!/usr/bin/env bats
# scripts/deps: its options (the Debian packages themselves are proven on
# a pristine root by tests/fresh-root).

load helpers
bats_require_minimum_version 1.5.0

@test "deps: an unknown option is refused" {
	run -2 "$TOP/scripts/deps" --torch-env
	expect_fail 2 "scripts/deps: unknown option --torch-env"
}

@test "deps --torch-venv: a venv that already imports torch is kept (no download)" {
	mkdir -p "$BATS_TEST_TMPDIR/b/venv/torch/bin"
	py="$BATS_TEST_TMPDIR/b/venv/torch/bin/python"
	# a stand-in that answers the import check as a ready venv does
	printf '#!/bin/sh\necho "scripts/deps: $3: torch 9.9 torchvision 9.9"\n' > "$py"
	chmod +x "$py"
	export BUILD="$BATS_TEST_TMPDIR/b"
	run -0 "$TOP/scripts/deps" --torch-venv
	[ "$output" = "scripts/deps: $BATS_TEST_TMPDIR/b/venv/torch: torch 9.9 torchvision 9.9" ]
}

@test "deps --ffcv: a venv that already imports ffcv is kept (no download), under \$BUILD" {
	for p in python3-torch python3-venv python3-dev g++ libopencv-dev libturbojpeg0-dev; do
		[[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"ok installed"* ]] ||
			skip "$p is not installed (scripts/deps --ffcv would install it)"
	done
	mkdir -p "$BATS_TEST_TMPDIR/b/venv/ffcv/bin"
	py="$BATS_TEST_TMPDIR/b/venv/ffcv/bin/python"
	# a stand-in that answers the import check as a ready venv does, and
	# shows the threading layer it was given
	printf '#!/bin/sh\necho "scripts/deps: $3: ffcv 9.9 numba $NUMBA_THREADING_LAYER"\n' > "$py"
	chmod +x "$py"
	export BUILD="$BATS_TEST_TMPDIR/b"
	run -0 "$TOP/scripts/deps" --ffcv
	[ "$output" = "scripts/deps: $BATS_TEST_TMPDIR/b/venv/ffcv: ffcv 9.9 numba omp" ]
}

@test "deps --help names --ffcv and the venv it builds" {
	run -0 "$TOP/scripts/deps" --help
	[[ "$output" == *"--ffcv adds scripts/bench-bound's optional FFCV peer: a venv build/venv/ffcv"* ]]
}
