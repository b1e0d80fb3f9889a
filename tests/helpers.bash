# tests/helpers.bash - shared by the bats files: PATH to the fresh build,
# a small deterministic dataset, and assertions on exit status and stderr.

TOP="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
BUILD_DIR="${REFURB_BUILD:-$TOP/build}"
export PATH="$BUILD_DIR/bin:$PATH"

# make_dataset DIR [N] [K]: synthetic ImageFolder tree (small images).
make_dataset() {
	"$TOP/scripts/make-dataset" -n "${2:-60}" -k "${3:-3}" --min 40 --max 120 "$1"
}

# make_train N K [R]: the start of most setup_files, in the current
# directory: a dataset ds of N images in K classes (make_dataset), its
# index train.idx and its schedule train.evict (R uses, default 3; seed 7).
make_train() {
	make_dataset ds "$1" "$2" || return 1
	refurb-index -q -o train.idx ds || return 1
	refurb-evict -q -r "${3:-3}" -s 7 -o train.evict train.idx
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

# The Python the reader's tests run (Debian's, which has numpy and torch
# from make deps); REFURB_TEST_PYTHON=PATH runs them on another, e.g. a
# venv with a current torch from PyPI.
PY="${REFURB_TEST_PYTHON:-/usr/bin/python3}"

# python3 with numpy (Debian's), or skip.
need_numpy() {
	"$PY" -c 'import numpy' 2>/dev/null ||
		skip "python3-numpy is not installed (run make deps)"
}

# PIL is a reference the tests compare against, not a dependency of refurb
need_pil() {
	/usr/bin/python3 -c 'import PIL' 2>/dev/null ||
		skip "python3-pil is not installed (scripts/deps --bench): no PIL reference"
}

# ddp_missing: why Debian's python3 cannot run a DDP trainer here (numpy,
# torch with gloo), or nothing.  For the *_missing functions of the
# distributed tests, which bats 1.8 cannot skip in setup_file.
ddp_missing() {
	/usr/bin/python3 -c 'import numpy' 2> /dev/null ||
		{ echo "python3-numpy is not installed (run make deps)"; return 0; }
	/usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null ||
		echo "python3-torch with gloo is not installed (scripts/deps --dist)"
	return 0
}

# skip_if_missing FUNC: skip the test with FUNC's reason, if it gives one.
skip_if_missing() {
	local why
	why=$("$1")
	[ -z "$why" ] || skip "$why"
}

# free_ports N: N TCP ports free on 127.0.0.1 now.
free_ports() {
	/usr/bin/python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

# sanitized: the programs under test are built by make asan (ASan's
# shadow memory and redzones make memory figures meaningless there)
sanitized() {
	grep -q __asan_init "$BUILD_DIR/bin/refurb-final" 2>/dev/null
}
