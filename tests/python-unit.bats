#!/usr/bin/env bats
# The Python unit tests of refurb_stream (python/tests/, unittest): the
# reader, the Header type, RefurbDataset's DataLoader rule, the converter.
# With Debian's /usr/bin/python3 here; tests/torch-venv runs this file on
# torch from PyPI (REFURB_TEST_PYTHON).

load helpers
bats_require_minimum_version 1.5.0

@test "python/tests: the unittest suite passes" {
	need_numpy
	cd "$TOP/python"
	run "$PY" -m unittest discover -s . -t . -p 'test_*.py' -v
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "OK" ] || [[ "${lines[-1]}" == "OK (skipped="* ]]
	# torch's tests ran wherever torch is installed
	if "$PY" -c 'import torch' 2>/dev/null; then
		[[ "$output" == *"test_default_dataloader_refused"*"... ok"* ]]
	fi
}
