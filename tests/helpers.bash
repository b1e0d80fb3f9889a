# tests/helpers.bash - shared by the bats files: PATH to the fresh build,
# a small deterministic dataset, and assertions on exit status and stderr.

TOP="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
BUILD_DIR="${REFURB_BUILD:-$TOP/build}"
export PATH="$BUILD_DIR/bin:$PATH"

# make_dataset DIR [N] [K]: synthetic ImageFolder tree (small images).
make_dataset() {
	"$TOP/scripts/make-dataset" -n "${2:-60}" -k "${3:-3}" --min 40 --max 120 "$1"
}

# A JPEG to derive bad files from.  (sed reads to the end: head could
# kill ls with SIGPIPE, a failure in the many files that set pipefail)
sample_jpeg() {
	ls "$1"/class000/*.jpg | sed -n 1p
}

# expect_fail STATUS PREFIX: the last `run` exited with STATUS and the
# first line of its output (stderr is merged) starts with PREFIX.
expect_fail() {
	if [ "$status" -ne "$1" ]; then
		echo "expected exit status $1, got $status; output:" >&2
		echo "$output" >&2
		return 1
	fi
	case "${lines[0]}" in
	"$2"*) ;;
	*)
		echo "expected first line to start with: $2" >&2
		echo "got: ${lines[0]}" >&2
		return 1 ;;
	esac
}

# python3 with numpy (Debian's), or skip.
need_numpy() {
	/usr/bin/python3 -c 'import numpy' 2>/dev/null ||
		skip "python3-numpy is not installed (run make deps)"
}

# PIL is a reference the tests compare against, not a dependency of refurb
need_pil() {
	/usr/bin/python3 -c 'import PIL' 2>/dev/null ||
		skip "python3-pil is not installed (scripts/deps --bench): no PIL reference"
}
