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
