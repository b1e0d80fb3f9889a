#!/usr/bin/env bats
# refurb-index: options, ImageFolder semantics, bad files, round trip,
# determinism.

load helpers
bats_require_minimum_version 1.5.0
# a failure anywhere in a pipeline fails it (tests/lint-bats)
set -o pipefail

setup_file() {
	make_dataset "$BATS_FILE_TMPDIR/ds" 60 3
}

setup() {
	DS="$BATS_FILE_TMPDIR/ds"
	T="$BATS_TEST_TMPDIR"
}

@test "--help prints usage on stdout and exits 0" {
	run refurb-index --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Usage: refurb-index"* ]]
	[[ "$output" == *"--max-pixels"* ]]
}

@test "--version" {
	run refurb-index --version
	[ "$status" -eq 0 ]
	[[ "$output" == "refurb-index (refurb) "* ]]
}

@test "no directory is a usage error" {
	run refurb-index -o "$T/x.idx"
	expect_fail 2 "refurb-index: no dataset directory given"
}

@test "unknown option is a usage error" {
	run refurb-index --frobnicate "$DS"
	expect_fail 2 "refurb-index: unrecognized option"
}

@test "missing output is a usage error" {
	run refurb-index "$DS"
	expect_fail 2 "refurb-index: no output"
}

@test "bad --max-pixels is a usage error" {
	run refurb-index --max-pixels 12x -o "$T/x.idx" "$DS"
	expect_fail 2 "refurb-index: --max-pixels: '12x' is not a number"
}

@test "missing directory: exit 1 naming it" {
	run refurb-index -o "$T/x.idx" "$T/nope"
	expect_fail 1 "refurb-index: $T/nope: cannot open dataset directory: No such file"
	[ ! -e "$T/x.idx" ]
}

@test "a file given as the directory: exit 1" {
	run refurb-index -o "$T/x.idx" "$(sample_jpeg "$DS")"
	expect_fail 1 "refurb-index: $(sample_jpeg "$DS"): not a directory"
}

@test "directory without class directories: exit 1" {
	mkdir "$T/flat"
	cp "$(sample_jpeg "$DS")" "$T/flat/"
	run refurb-index -o "$T/x.idx" "$T/flat"
	expect_fail 1 "refurb-index: $T/flat: no class directories"
}

@test "class directories without images: exit 1" {
	mkdir -p "$T/empty/a" "$T/empty/b"
	echo hi > "$T/empty/a/readme.txt"
	run refurb-index -o "$T/x.idx" "$T/empty"
	expect_fail 1 "refurb-index: $T/empty: no image files"
}

@test "indexes every image with label, size and pixel size" {
	run refurb-index -q -o "$T/x.idx" "$DS"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run refurb-dump "$T/x.idx"
	[ "$status" -eq 0 ]
	[ "$(grep -vc '^#' <<< "$output")" -eq 60 ]
	# id 0 is the first file of the first class, with its real size
	first=$(grep -v '^#' <<< "$output" | sed -n 1p)
	f="$DS/$(cut -f8 <<< "$first")"
	[ "$(cut -f4 <<< "$first")" -eq "$(stat -c %s "$f")" ]
	[ "$(cut -f1-3 <<< "$first")" = "$(printf '0\t0\tclass000')" ]
}

@test "pixel sizes agree with an independent JPEG parser" {
	refurb-index -q -o "$T/x.idx" "$DS"
	refurb-dump "$T/x.idx" | grep -v '^#' | sed -n 1,10p | while IFS=$'\t' read -r id l c b w h ch p; do
		# file(1) prints "precision 8, WxH, components N"
		info=$(file -b "$DS/$p")
		[[ "$info" == *", ${w}x${h}, components $ch"* ]] || { echo "$p: $info vs ${w}x${h} $ch"; false; }
	done
}

@test "ImageFolder class order is code-point order, whatever the locale" {
	for c in B a _x Z é "a b" a-b ab 10 9; do
		mkdir -p "$T/loc/$c"
		cp "$(sample_jpeg "$DS")" "$T/loc/$c/i.jpg"
	done
	expected=$(printf '%s\n' 10 9 B Z _x a "a b" a-b ab é)
	for loc in C C.UTF-8 en_US.UTF-8; do
		LC_ALL=$loc refurb-index -q -o "$T/loc.idx" "$T/loc"
		got=$(refurb-dump "$T/loc.idx" | sed -n 's/^# class\t[0-9]*\t//p')
		[ "$got" = "$expected" ] || { echo "locale $loc: $got"; false; }
	done
}

@test "class order equals torchvision's class_to_idx (when installed)" {
	/usr/bin/python3 -c 'import torchvision' 2>/dev/null ||
		skip "python3-torchvision not installed"
	for c in B a _x Z é "a b" a-b ab; do
		mkdir -p "$T/tv/$c"
		cp "$(sample_jpeg "$DS")" "$T/tv/$c/i.jpg"
	done
	refurb-index -q -o "$T/tv.idx" "$T/tv"
	ours=$(refurb-dump "$T/tv.idx" | sed -n 's/^# class\t\([0-9]*\)\t\(.*\)/\2 \1/p')
	theirs=$(/usr/bin/python3 -c '
import sys
from torchvision.datasets.folder import find_classes
for c, i in find_classes(sys.argv[1])[1].items(): print(c, i)' "$T/tv")
	[ "$ours" = "$theirs" ]
}

@test "file order follows torchvision's make_dataset (sorted os.walk)" {
	j=$(sample_jpeg "$DS")
	mkdir -p "$T/ord/c/a/x" "$T/ord/c/a b" "$T/ord/c/a-b"
	for f in c/z.jpg c/B.JPG "c/a b/1.jpg" c/a/2.jpeg c/a/x/0.jpg c/a-b/3.jpg; do
		cp "$j" "$T/ord/$f"
	done
	echo x > "$T/ord/c/notes.txt"
	refurb-index -q -o "$T/o.idx" "$T/ord"
	got=$(refurb-dump "$T/o.idx" | grep -v '^#' | cut -f8)
	expected=$(printf '%s\n' c/B.JPG c/z.jpg c/a/2.jpeg "c/a b/1.jpg" c/a-b/3.jpg c/a/x/0.jpg)
	[ "$got" = "$expected" ]
}

make_bad_files() {
	j=$(sample_jpeg "$DS")
	cp -r "$DS" "$T/bad"
	: > "$T/bad/class001/empty.jpg"
	echo "plain text" > "$T/bad/class001/text.jpg"
	head -c 100 "$j" > "$T/bad/class001/trunc.jpg"
	ln -s "$T/nowhere.jpg" "$T/bad/class002/dangling.jpg"
	# SOF0 with width 0
	/usr/bin/python3 - "$j" "$T/bad/class002/zerowidth.jpg" <<'PY'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
i = d.index(b"\xff\xc0")
d[i + 7:i + 9] = b"\x00\x00"
open(sys.argv[2], "wb").write(d)
PY
}

@test "bad files: one line each naming path and reason, left out, counted" {
	make_bad_files
	run refurb-index -o "$T/b.idx" "$T/bad"
	[ "$status" -eq 0 ]
	[[ "$output" == *"refurb-index: class001/empty.jpg: empty file"* ]]
	[[ "$output" == *"refurb-index: class001/text.jpg: not a JPEG file"* ]]
	[[ "$output" == *"refurb-index: class001/trunc.jpg: JPEG header is truncated"* ]]
	[[ "$output" == *"refurb-index: class002/dangling.jpg: cannot open: No such file"* ]]
	[[ "$output" == *"refurb-index: class002/zerowidth.jpg: bad JPEG header"* ]]
	[[ "$output" == *"indexed 60 of 65 files in 3 classes (5 bad, left out)"* ]]
	[ "$(refurb-dump "$T/b.idx" | grep -vc '^#')" -eq 60 ]
}

@test "bad files do not change the rest of the index" {
	make_bad_files
	refurb-index -q -o "$T/good.idx" "$DS"
	refurb-index -q -o "$T/b.idx" "$T/bad"
	diff <(refurb-dump "$T/good.idx" | grep -v '^# root') \
	     <(refurb-dump "$T/b.idx" | grep -v '^# root')
}

@test "--strict: the first bad file is fatal" {
	make_bad_files
	run refurb-index --strict -o "$T/b.idx" "$T/bad"
	expect_fail 1 "refurb-index: class001/empty.jpg: empty file"
	[[ "$output" == *"stopped at the first bad file (--strict)"* ]]
	[ ! -e "$T/b.idx" ]
}

@test "--max-pixels: larger images are bad files" {
	run refurb-index --max-pixels 2000 -o "$T/m.idx" "$DS"
	[ "$status" -eq 0 ]
	[[ "$output" == *"pixels, more than the cap of 2000 pixels (--max-pixels)"* ]]
	n=$(refurb-dump "$T/m.idx" | grep -v '^#' | awk -F'\t' '$5 * $6 > 2000' | wc -l)
	[ "$n" -eq 0 ]
	# a PNG the same way: the cause and the option to raise
	mkdir -p "$T/p/c0"
	cp "$TOP/tests/data/png/rgb8.png" "$T/p/c0/a.png"
	run refurb-index --max-pixels 800 -o "$T/p.idx" "$T/p"
	[ "$status" -eq 1 ] # (no image left)
	[ "${lines[0]}" = "refurb-index: c0/a.png: PNG of 37x23 pixels, more than the cap of 800 pixels (--max-pixels)" ]
}

@test "unreadable file: named, left out (as root: run as nobody)" {
	# root reads everything: as root (CI), refurb-index runs as nobody,
	# which must reach the test's directory (bats makes its own private)
	local as=() d
	cp -r "$DS" "$T/unr"
	chmod -R a+rX "$T/unr"
	if [ "$(id -u)" -eq 0 ]; then
		command -v setpriv > /dev/null || skip "root reads everything, and no setpriv"
		as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
		d=$T
		while [ "$d" != "$(dirname "$BATS_RUN_TMPDIR")" ] && [ "$d" != / ]; do
			chmod a+x "$d"
			d=$(dirname "$d")
		done
		"${as[@]}" test -r "$T/unr/class000" ||
			skip "root reads everything, and nobody cannot reach $TMPDIR"
	fi
	chmod 000 "$T/unr/class000/"*.jpg
	mkdir "$T/out"
	chmod 777 "$T/out"
	run "${as[@]}" "$BUILD_DIR/bin/refurb-index" -o "$T/out/u.idx" "$T/unr"
	[ "$status" -eq 0 ]
	[[ "$output" == *"class000/"*".jpg: cannot open: Permission denied"* ]]
	[[ "$output" == *"indexed 40 of 60 files in 3 classes (20 bad, left out)"* ]]
}

@test "a FIFO named like an image is a bad file, not a hang" {
	cp -r "$DS" "$T/fifo"
	mkfifo "$T/fifo/class000/pipe.jpg"
	run timeout 20 refurb-index -o "$T/f.idx" "$T/fifo"
	[ "$status" -eq 0 ]
	[[ "$output" == *"class000/pipe.jpg: not a regular file"* ]]
}

@test "symlink cycles do not loop" {
	cp -r "$DS" "$T/cyc"
	ln -s .. "$T/cyc/class000/up"
	run timeout 20 refurb-index -q -o "$T/c.idx" "$T/cyc"
	[ "$status" -eq 0 ]
}

@test "deterministic: same tree, same bytes, any thread count" {
	refurb-index -q -j 1 -o "$T/a.idx" "$DS"
	refurb-index -q -j 2 -o "$T/b.idx" "$DS"
	refurb-index -q -j 7 -o "$T/c.idx" "$DS"
	cmp "$T/a.idx" "$T/b.idx"
	cmp "$T/a.idx" "$T/c.idx"
}

@test "round trip: dump then --from-tsv gives the same index" {
	refurb-index -q -o "$T/a.idx" "$DS"
	refurb-dump -o "$T/a.tsv" "$T/a.idx"
	(cd / && refurb-index -q --from-tsv "$T/a.tsv" -o "$T/b.idx")
	cmp "$T/a.idx" "$T/b.idx"
	refurb-dump "$T/a.idx" | refurb-index -q --list - -o "$T/c.idx"
	cmp "$T/a.idx" "$T/c.idx"
}

@test "round trip with tabs, newlines and backslashes in class and file names" {
	mkdir -p "$T/w/a	tab" "$T/w/back\\slash"
	cp "$DS/class000/$(ls "$DS/class000" | head -n 1)" "$T/w/a	tab/new
line.jpg"
	cp "$DS/class001/$(ls "$DS/class001" | head -n 1)" "$T/w/back\\slash/x\\ty.jpg"
	refurb-index -q -o "$T/a.idx" "$T/w"
	refurb-dump -o "$T/a.tsv" "$T/a.idx"
	# one line per record: the names are escaped
	[ "$(grep -c . "$T/a.tsv")" -eq 6 ]
	grep -qF 'a\ttab/new\nline.jpg' "$T/a.tsv"
	grep -qF 'back\\slash/x\\ty.jpg' "$T/a.tsv"
	refurb-index -q --list "$T/a.tsv" -o "$T/b.idx"
	cmp "$T/a.idx" "$T/b.idx"
}

@test "list input: PATH<TAB>LABEL with names and with numbers" {
	(
		cd "$DS"
		ls class000/*.jpg | sed -n '1,3s/$/\tcat/p'
		ls class001/*.jpg | sed -n '1,2s/$/\tdog/p'
	) > "$T/names.txt"
	refurb-index -q --root "$DS" --list "$T/names.txt" -o "$T/n.idx"
	[ "$(refurb-dump "$T/n.idx" | sed -n 's/^# class\t//p' | tr '\t\n' ': ')" = "0:cat 1:dog " ]
	(cd "$DS" && ls "$PWD"/class000/*.jpg | sed -n '1,2s/$/\t4/p') > "$T/nums.txt"
	refurb-index -q --list "$T/nums.txt" -o "$T/u.idx"
	[ "$(refurb-dump -S "$T/u.idx" | sed -n 's/^classes *//p')" -eq 5 ]
}

@test "list input: malformed line is an error naming the line" {
	printf 'a.jpg\t0\njust-a-path\n' > "$T/bad.txt"
	run refurb-index --list "$T/bad.txt" -o "$T/x.idx"
	expect_fail 1 "refurb-index: $T/bad.txt: line 2: expected PATH<TAB>LABEL"
}

@test "list input: blank lines count in the line number of an error" {
	printf 'a.jpg\t0\n\n\r\njust-a-path\n' > "$T/bad.txt"
	run refurb-index --list "$T/bad.txt" -o "$T/x.idx"
	expect_fail 1 "refurb-index: $T/bad.txt: line 4: expected PATH<TAB>LABEL"
}

@test "list input: missing list file" {
	run refurb-index --list "$T/none.txt" -o "$T/x.idx"
	expect_fail 1 "refurb-index: $T/none.txt: cannot open: No such file"
}

@test "output to stdout with -o -" {
	refurb-index -q -o - "$DS" > "$T/s.idx"
	refurb-index -q -o "$T/f.idx" "$DS"
	cmp "$T/s.idx" "$T/f.idx"
}

@test "unwritable output: exit 1, nothing half-written" {
	run refurb-index -o "$T/no/such/dir/x.idx" "$DS"
	expect_fail 1 "refurb-index: $T/no/such/dir/x.idx: cannot create: No such file or directory"
	# the message names the file asked for, not a temporary one
	run -1 grep -c "x\.idx\.tmp" <<< "$output"
	[ "$output" -eq 0 ]
}

@test "the summary's plurals: 1 file in 1 class" {
	mkdir -p "$T/one/c0"
	cp "$(sample_jpeg "$DS")" "$T/one/c0/a.jpg"
	run refurb-index -o "$T/one.idx" "$T/one"
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" == "refurb-index: indexed 1 of 1 file in 1 class (0 bad, left out), "* ]]
}

@test "classes without images are named, the first four, and kept in the class table" {
	cp -r "$DS" "$T/ds"
	mkdir "$T/ds/aaa-empty"
	mkdir "$T/ds/zzz-bad"
	echo "not an image" > "$T/ds/zzz-bad/x.jpg"
	run refurb-index -o "$T/x.idx" "$T/ds"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "refurb-index: 2 classes have no images: aaa-empty, zzz-bad (kept in the class table, so labels stay ImageFolder's)" ]
	for k in 1 2 3 4; do mkdir "$T/ds/e$k"; done
	run refurb-index -o "$T/x.idx" "$T/ds"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "refurb-index: 6 classes have no images: aaa-empty, e1, e2, e3, ... (kept in the class table, so labels stay ImageFolder's)" ]
}

# ---- -M/--memory: records and paths flushed to temporary files ----

# A tree of 600 copies of the dataset's JPEGs in 3 classes, with long
# names, so that a 16K budget (8K of paths) is flushed many times over.
big_tree() {
	local src=("$DS"/*/*.jpg) cls=(a b c) i long
	long=$(printf 'x%.0s' {1..60})
	mkdir -p "$1/a" "$1/b" "$1/c"
	for ((i = 0; i < 600; i++)); do
		cp "${src[i % ${#src[@]}]}" "$1/${cls[i % 3]}/$long-$i.jpg"
	done
}

@test "-M: a tiny budget writes the same index (tree, list, stdout)" {
	big_tree "$T/tree"
	refurb-index -q -o "$T/a.idx" "$T/tree"
	refurb-index -q -M 16K -o "$T/b.idx" "$T/tree"
	cmp "$T/a.idx" "$T/b.idx"
	refurb-index -q --memory 16384 -o - "$T/tree" > "$T/c.idx"
	cmp "$T/a.idx" "$T/c.idx"
	refurb-dump "$T/a.idx" > "$T/a.tsv"
	refurb-index -q --list "$T/a.tsv" -o "$T/d.idx"
	refurb-index -q -M 16k --list "$T/a.tsv" -o "$T/e.idx"
	cmp "$T/d.idx" "$T/e.idx"
	run refurb-dump --stats "$T/e.idx"
	[ "$status" -eq 0 ]
	[[ "$output" == *600* ]]
}

@test "-M: a tiny budget writes the same index (tar shards)" {
	"$TOP/scripts/make-scale-dataset" -n 1500 -s 7 "$T/wds" >/dev/null
	refurb-index -q -o "$T/a.idx" --classes "$T/wds/classes.txt" "$T"/wds/*.tar
	refurb-index -q -M 16K -o "$T/b.idx" --classes "$T/wds/classes.txt" \
		"$T"/wds/*.tar
	cmp "$T/a.idx" "$T/b.idx"
}

@test "-M: the temporary files go to TMPDIR for stdout, and are flushed to" {
	big_tree "$T/tree"
	mkdir "$T/tmp"
	TMPDIR="$T/tmp" refurb-index -q -M 16K -o - "$T/tree" > "$T/a.idx"
	run ls -A "$T/tmp"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	# a budget the samples fit in needs no temporary file at all
	TMPDIR="$T/none" refurb-index -q -o - "$T/tree" > "$T/b.idx"
	cmp "$T/a.idx" "$T/b.idx"
	TMPDIR="$T/none" run refurb-index -q -M 16K -o - "$T/tree"
	expect_fail 1 "refurb-index: $T/none: cannot create a temporary file"
}

@test "-M: no temporary file is left after success or failure" {
	big_tree "$T/tree"
	mkdir "$T/out"
	refurb-index -q -M 16K -o "$T/out/a.idx" "$T/tree"
	run -0 ls -A "$T/out"
	[ "$output" = "a.idx" ]
	# a bad file sorted last: --strict fails after many flushes
	echo "not a jpeg" > "$T/tree/c/zzz.jpg"
	rm "$T/out/a.idx"
	run refurb-index -q --strict -M 16K -o "$T/out/b.idx" "$T/tree"
	[ "$status" -eq 1 ]
	run ls -A "$T/out"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

# shards of N samples made by make-scale-dataset in $T/wds-N, with one
# shard again under another name (its keys seen before: duplicates)
scale_shards() {
	"$TOP/scripts/make-scale-dataset" -n "$1" -s $(($1 / 100)) "$T/wds-$1" >/dev/null
	cp "$T/wds-$1/train-000001.tar" "$T/wds-$1/zz-again.tar"
}

# a list of N lines: the dataset's files over and over, labelled by name
scale_list() {
	find "$DS" -name '*.jpg' | sort > "$T/files.txt"
	awk -v n="$1" '{ f[NR] = $0 } END { for (i = 0; i < n; i++) {
		p = f[i % NR + 1]; split(p, d, "/"); print p "\t" d[length(d) - 1] } }' \
		"$T/files.txt" > "$T/list-$1.txt"
}

# peak_kib CMD...: run CMD (its stderr dropped), print its peak RSS in KiB
peak_kib() {
	/usr/bin/time -f %M -o "$T/peak" "$@" 2>/dev/null
	cat "$T/peak"
}

@test "-M 1M and 16K: shards (keys seen before) and a list give the default's index, in many runs" {
	scale_shards 20000
	refurb-index -q -o "$T/a.idx" "$T"/wds-20000/*.tar 2>/dev/null
	refurb-index -q -M 1M -o "$T/b.idx" "$T"/wds-20000/*.tar 2>/dev/null
	cmp "$T/a.idx" "$T/b.idx"
	# 16K: the sorts merge in passes, two runs at a time
	refurb-index -q -M 16K -o "$T/c.idx" "$T"/wds-20000/*.tar 2>/dev/null
	cmp "$T/a.idx" "$T/c.idx"
	run -0 refurb-dump --stats "$T/c.idx"
	[[ "$output" == *20000* ]]
	scale_list 20000
	refurb-index -q -o "$T/d.idx" --list "$T/list-20000.txt"
	refurb-index -q -M 1M -o "$T/e.idx" --list "$T/list-20000.txt"
	cmp "$T/d.idx" "$T/e.idx"
	refurb-index -q -M 16K -o "$T/f.idx" --list - < "$T/list-20000.txt"
	cmp "$T/d.idx" "$T/f.idx"
	run -0 ls -A "$T"
	[[ "$output" != *.refurb-index* ]]
}

@test "-M 1M: the peak memory does not grow with the samples of shards or a list" {
	local a b
	if sanitized; then
		skip "peak memory is not measured under make asan (shadow memory)"
	fi
	# from 20000 samples on the records' budget is full; what still
	# grows is bounded (the merges' buffers, up to a quarter of -M) or
	# small (the shards' table): about 0.7 MiB here, against 3.2 MiB
	# (shards) and 3.6 MiB (list) when all the candidates were held
	scale_shards 20000
	scale_shards 60000
	a=$(peak_kib refurb-index -q -M 1M -o "$T/a.idx" "$T"/wds-20000/*.tar)
	b=$(peak_kib refurb-index -q -M 1M -o "$T/b.idx" "$T"/wds-60000/*.tar)
	echo "shards: $a KiB at 20000 samples, $b KiB at 60000"
	[ $((b - a)) -lt 1200 ]
	scale_list 20000
	scale_list 60000
	a=$(peak_kib refurb-index -q -M 1M -o "$T/c.idx" --list "$T/list-20000.txt")
	b=$(peak_kib refurb-index -q -M 1M -o "$T/d.idx" --list "$T/list-60000.txt")
	echo "list: $a KiB at 20000 lines, $b KiB at 60000"
	[ $((b - a)) -lt 1200 ]
}

@test "-M: a full disk while the candidates are written names the directory and the fix" {
	local shim="$BUILD_DIR/tools/enospc_shim.so" dir
	[ -f "$shim" ]
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
	scale_shards 10000
	mkdir "$T/out"
	dir=$(cd "$T/out" && pwd -P)
	run env ENOSPC_DIR="$dir" ENOSPC_AFTER=100000 LD_PRELOAD="$shim" \
		refurb-index -q -M 1M -o "$dir/a.idx" "$T"/wds-10000/*.tar
	expect_fail 1 "refurb-index: $dir: cannot write a temporary file of candidates (free space there, write the index elsewhere, or raise -M): No space left on device"
	run -0 ls -A "$dir"
	[ -z "$output" ]
	scale_list 10000
	run env ENOSPC_DIR="$dir" ENOSPC_AFTER=100000 LD_PRELOAD="$shim" \
		refurb-index -q -M 1M -o "$dir/b.idx" --list "$T/list-10000.txt"
	expect_fail 1 "refurb-index: $dir: cannot write a temporary file of candidates"
	run -0 ls -A "$dir"
	[ -z "$output" ]
}

@test "-M: a temporary file of candidates that cannot be read back (EIO) names the directory" {
	local shim="$BUILD_DIR/tools/io_fault_shim.so" dir
	[ -f "$shim" ]
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
	scale_shards 10000
	mkdir "$T/out"
	dir=$(cd "$T/out" && pwd -P)
	run env FAULT_PATH="$dir/.refurb-index." FAULT_READ=EIO LD_PRELOAD="$shim" \
		refurb-index -q -M 1M -o "$dir/a.idx" "$T"/wds-10000/*.tar
	expect_fail 1 "refurb-index: $dir: cannot read back a temporary file of candidates: Input/output error (the device failed"
	run -0 ls -A "$dir"
	[ -z "$output" ]
}

@test "-M: SIGTERM while the candidates are on temporary files leaves none behind" {
	local pid
	scale_shards 60000
	mkdir "$T/out"
	refurb-index -q -M 16K -o "$T/out/a.idx" "$T"/wds-60000/*.tar 2>/dev/null &
	pid=$!
	sleep 0.5
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" || true
	run -0 ls -A "$T/out"
	[[ "$output" != *.refurb-index.* ]]
}

@test "-M: a budget too small or not a size is a usage error" {
	run refurb-index -M 1K -o "$T/a.idx" "$DS"
	expect_fail 2 "refurb-index: --memory 1K: an index needs at least 16K"
	run refurb-index --memory 16383 -o "$T/a.idx" "$DS"
	expect_fail 2 "refurb-index: --memory 16383: an index needs at least 16K"
	run refurb-index -M 12X -o "$T/a.idx" "$DS"
	expect_fail 2 "refurb-index: --memory: '12X' is not a number of bytes"
	run refurb-index -M -5 -o "$T/a.idx" "$DS"
	expect_fail 2 "refurb-index: --memory: '-5' is not a number of bytes"
}
