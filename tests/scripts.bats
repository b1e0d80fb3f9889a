#!/usr/bin/env bats
# Every script of scripts/ answers --help with its usage on
# stdout and exit 0, doing nothing else: no file written, no benchmark
# run, no package installed (get-fashion-mnist once took --help for its
# output folder and wrote 70,000 images into ./--help).

load helpers
bats_require_minimum_version 1.5.0

# the programs of scripts/: executables and *.py with a main, not
# golden_common.py and accuracy_stats.py (modules) or experiment.mk and
# accuracy.mk (make -f, see their heads)
scripts() {
	local f
	for f in "$TOP"/scripts/*; do
		# __pycache__ appears once a script imports a module of scripts/
		[ -f "$f" ] || continue
		case "$(basename "$f")" in
		golden_common.py|accuracy_stats.py|experiment.mk|accuracy.mk) continue ;;
		esac
		echo "$f"
	done
}

# help_of SCRIPT OPTION: runs it in an empty directory; fails unless it
# exits 0 with a usage on stdout, nothing on stderr, and leaves no file
help_of() {
	local s=$1 dir="$BATS_TEST_TMPDIR/$(basename "$1")$2"
	mkdir -p "$dir"
	cd "$dir"
	case "$s" in
	*.py) run --separate-stderr timeout 120 /usr/bin/python3 "$s" "$2" ;;
	*) run --separate-stderr timeout 120 "$s" "$2" ;;
	esac
	[ "$status" -eq 0 ] || { echo "$s $2: exit $status: $stderr"; return 1; }
	[ -z "$stderr" ] || { echo "$s $2: stderr: $stderr"; return 1; }
	[[ "$output" == *[Uu]sage* || "$output" == *"$(basename "$s")"* ]] ||
		{ echo "$s $2: no usage on stdout: $output"; return 1; }
	left=$(ls -A)
	[ -z "$left" ] || { echo "$s $2: wrote $left"; return 1; }
	cd "$BATS_TEST_TMPDIR"
}

@test "every script of scripts/ answers --help: usage on stdout, exit 0, nothing written" {
	bad=0
	for s in $(scripts); do
		help_of "$s" --help || bad=$((bad + 1))
	done
	[ "$bad" -eq 0 ]
}

@test "--help needs none of the optional Python modules (torch, torchvision, PIL, matplotlib, scipy): a pristine machine has none" {
	mkdir -p "$BATS_TEST_TMPDIR/absent"
	for m in torch torchvision PIL matplotlib scipy; do
		echo "raise ModuleNotFoundError('No module named $m', name='$m')" \
			> "$BATS_TEST_TMPDIR/absent/$m.py"
	done
	export PYTHONPATH="$BATS_TEST_TMPDIR/absent"
	bad=0
	for s in $(scripts); do
		help_of "$s" --help || bad=$((bad + 1))
	done
	[ "$bad" -eq 0 ]
}

@test "scripts/get-fashion-mnist --help writes no ./--help folder" {
	cd "$BATS_TEST_TMPDIR"
	run -0 "$TOP/scripts/get-fashion-mnist" --help
	[ ! -e ./--help ]
	[[ "${lines[0]}" == "scripts/get-fashion-mnist [OUTDIR] - "* ]]
	run -2 "$TOP/scripts/get-fashion-mnist" --out x
	expect_fail 2 "get-fashion-mnist: unknown option --out"
	[ ! -e x ]
}

@test "experiment.mk: make -f scripts/experiment.mk help prints its usage" {
	run -0 make -s -f "$TOP/scripts/experiment.mk" help
	[[ "$output" == *"make -f scripts/experiment.mk [-j2]"* ]]
}
