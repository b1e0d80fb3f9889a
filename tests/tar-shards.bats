#!/usr/bin/env bats
# WebDataset tar shards read in place: refurb-index over shards (GNU,
# ustar and pax headers, brace patterns, labels from .cls, .json or the
# directory), byte ranges checked against Python's tarfile, the same
# stream as the tree, and every bad shard or member the issue names.

bats_require_minimum_version 1.5.0
set -o pipefail
load helpers

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	make_dataset ds 60 3
	refurb-index -q -o tree.idx ds
	"$TOP/scripts/make-shards" -n 3 ds sh > sh.list
}

setup() {
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	TARMAKE="$TOP/tests/tools/tarmake.py"
	JPG=$(sample_jpeg ds)
}

# check_ranges INDEX: every sample's shard, offset, size and label agree
# with what Python's tarfile reads from the shards (.cls members).
check_ranges() {
	refurb-dump "$1" > "$T/dump.tsv"
	/usr/bin/python3 - "$T/dump.tsv" "${2:-cls}" <<'PY'
import os, sys, tarfile
rows, shards, root, classes = [], {}, None, {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if f[0] == "# root": root = f[1]
    elif f[0] == "# shard": shards[int(f[1])] = f[4]
    elif f[0] == "# class": classes[int(f[1])] = f[2]
    elif not f[0].startswith("#"): rows.append(f)
assert rows, "no samples"
members = {}
for k, name in shards.items():
    path = name if name.startswith("/") else os.path.join(root, name)
    with tarfile.open(path, "r:") as t:
        for m in t.getmembers():
            data = t.extractfile(m).read() if m.name.endswith(".cls") else None
            members[(k, m.name)] = (m.offset_data, m.size, data)
for f in rows:
    label, path, shard, offset, size = int(f[1]), f[7], int(f[8]), int(f[9]), int(f[3])
    off, sz, _ = members[(shard, path)]
    assert (off, sz) == (offset, size), (path, off, sz, offset, size)
    key = path.rsplit(".", 1)[0]
    if sys.argv[2] == "cls":
        cls = members[(shard, key + ".cls")][2].decode()
        assert classes[label] == cls or int(cls) == label, (path, cls, label)
    else:
        p = path
        while p.startswith("./"):
            p = p[2:]
        assert classes[label] == p.split("/")[0], (path, classes[label])
print(len(rows), "samples agree with tarfile")
PY
}

# labels_and_sizes INDEX: "label<TAB>bytes<TAB>width<TAB>height" per sample
labels_and_sizes() {
	refurb-dump "$1" | awk -F'\t' '!/^#/ { print $2 "\t" $4 "\t" $5 "\t" $6 }'
}

@test "make-shards: --help, usage errors, deterministic output" {
	run "$TOP/scripts/make-shards" --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "scripts/make-shards"* ]]
	run "$TOP/scripts/make-shards"
	expect_fail 2 "make-shards: give TREE and OUTDIR"
	run "$TOP/scripts/make-shards" -n 0 ds "$T/x"
	expect_fail 2 "make-shards: -n: '0' is not a positive number"
	run "$TOP/scripts/make-shards" "$T/none" "$T/x"
	expect_fail 1 "make-shards: $T/none: not a directory"
	"$TOP/scripts/make-shards" -n 3 ds "$T/again" > /dev/null
	for s in 0 1 2; do
		cmp "sh/train-00000$s.tar" "$T/again/train-00000$s.tar"
	done
	[ "$(wc -l < sh.list)" -eq 3 ]
	diff sh/classes.txt <(printf 'class000\nclass001\nclass002\n')
}

@test "make-shards --dirs: names with dots, spaces or in subdirectories keep every sample; --json escapes class names" {
	mkdir -p "$T/t/a/sub" "$T/t/a/other" "$T/t/b \"q\"" "$T/t/ü"
	cp "$JPG" "$T/t/a/img 1.v2.jpg"
	cp "$JPG" "$T/t/a/sub/x.jpg"
	cp "$JPG" "$T/t/a/other/x.jpg"
	cp "$JPG" "$T/t/b \"q\"/plain.JPG"
	cp "$JPG" "$T/t/ü/é 2.jpg"
	refurb-index -q -o "$T/t.idx" "$T/t"
	"$TOP/scripts/make-shards" -n 1 --dirs --json "$T/t" "$T/d" > /dev/null
	refurb-index -o "$T/d.idx" --label dir "$T/d/train-000000.tar" 2> "$T/err"
	[[ "$(cat "$T/err")" == "refurb-index: indexed 5 of 5 samples in 3 classes from 1 shard (0 bad, left out)"* ]]
	diff <(labels_and_sizes "$T/t.idx" | sort) <(labels_and_sizes "$T/d.idx" | sort)
	refurb-index -q -o "$T/j.idx" --label json:class "$T/d/train-000000.tar"
	diff <(labels_and_sizes "$T/t.idx" | sort) <(labels_and_sizes "$T/j.idx" | sort)
	cp "$JPG" "$T/t/a/img 1_v2.jpg"
	run "$TOP/scripts/make-shards" -n 1 --dirs "$T/t" "$T/d2"
	expect_fail 1 "make-shards: $T/t/a/img 1_v2.jpg: key 'a/img 1_v2' is also the key of $T/t/a/img 1.v2.jpg (--dirs keys replace dots by _): rename one, or leave out --dirs"
}

@test "index over shards: byte ranges and labels agree with tarfile" {
	refurb-index -q -o "$T/sh.idx" sh/train-00000{0,1,2}.tar
	run check_ranges "$T/sh.idx"
	[ "$status" -eq 0 ]
	[[ "$output" == "60 samples agree with tarfile" ]]
	# same labels, sizes and order as the tree
	diff <(labels_and_sizes tree.idx) <(labels_and_sizes "$T/sh.idx")
	refurb-dump --stats "$T/sh.idx" > "$T/stats"
	grep -qx 'shards       3' "$T/stats"
	grep -qx 'version      2' "$T/stats"
}

@test "a member name past the index's 4096 bytes (pax path) is a bad sample, named short; the others are indexed" {
	long=$(printf 'n%.0s' {1..5000})
	"$TARMAKE" "$T/huge.tar" --format pax "a.jpg=$JPG" "a.cls=text:0" \
		"$long.jpg=$JPG" "$long.cls=text:1" "b.jpg=$JPG" "b.cls=text:1"
	run refurb-index -o "$T/huge.idx" "$T/huge.tar"
	[ "$status" -eq 0 ]
	shown="$(printf 'n%.0s' {1..96})...$(printf 'n%.0s' {1..36}).jpg (5004 bytes)"
	[ "${lines[0]}" = "refurb-index: $T/huge.tar: member $shown: member name of 5004 bytes, more than the 4096 an index keeps (rename it shorter)" ]
	[[ "${lines[1]}" == "refurb-index: indexed 2 of 3 samples in 2 classes from 1 shard (1 bad, left out)"* ]]
	refurb-dump "$T/huge.idx" | awk -F'\t' '!/^#/ { print $2, $8 }' > "$T/got"
	diff "$T/got" <(printf '0 a.jpg\n1 b.jpg\n')
	# a damaged header after it names the member short too
	"$TARMAKE" "$T/cut.tar" --format pax "$long.jpg=$JPG" "b.jpg=$JPG"
	at=$("$TARMAKE" --list "$T/cut.tar" | awk -F'\t' '$2 == "b.jpg" { print $3 - 512 }')
	printf 'x%.0s' {1..512} | dd of="$T/cut.tar" bs=1 seek="$at" conv=notrunc status=none
	run refurb-index -o "$T/cut.idx" "$T/cut.tar"
	[ "$status" -eq 1 ]
	[[ "$output" == *"after member $shown)"* ]]
}

@test "--shards expands a brace range; a missing shard is an error" {
	refurb-index -q -o "$T/a.idx" sh/train-00000{0,1,2}.tar
	refurb-index -q -o "$T/b.idx" --shards 'sh/train-{000000..000002}.tar'
	cmp "$T/a.idx" "$T/b.idx"
	refurb-index -q -o "$T/c.idx" --shards 'sh/train-00000{0,1}.tar' \
		sh/train-000002.tar
	cmp "$T/a.idx" "$T/c.idx"
	run refurb-index -q -o "$T/d.idx" --shards 'sh/train-{000000..000003}.tar'
	expect_fail 1 "refurb-index: sh/train-000003.tar: cannot open the shard: No such file"
	[ ! -e "$T/d.idx" ]
	run refurb-index -q -o "$T/d.idx" --shards 'sh/train-{000002..000000}.tar'
	expect_fail 2 "refurb-index: --shards 'sh/train-{000002..000000}.tar': bad range"
	run refurb-index -q -o "$T/d.idx" --shards 'sh/train-{000000..000002.tar'
	expect_fail 2 "refurb-index: --shards 'sh/train-{000000..000002.tar': '{' without '}'"
	run refurb-index -q -o "$T/d.idx" sh/train-000000.tar ds
	expect_fail 2 "refurb-index: give one dataset directory, or tar shards"
	run refurb-index -q -o "$T/d.idx" --label dir ds
	expect_fail 2 "refurb-index: --label and --classes apply to tar shards only"
	run refurb-index -q -o "$T/d.idx" --label xml sh/train-000000.tar
	expect_fail 2 "refurb-index: --label: 'xml' is not cls, json:FIELD or dir"
}

@test "tree and shards of the same JPEGs give byte-identical streams" {
	refurb-index -q -o "$T/sh.idx" --classes sh/classes.txt \
		--shards 'sh/train-{000000..000002}.tar'
	# the identity covers what the samples are, not where they are
	[ "$(refurb-dump --stats tree.idx | grep identity)" = \
	  "$(refurb-dump --stats "$T/sh.idx" | grep identity)" ]
	for x in tree "$T/sh"; do
		rm -rf "$T/cache"
		refurb-evict -q -r 2 -s 5 "$x.idx" > "$x.evict"
		refurb-plan -q -b 16 -e 0-2 -s 5 "$x.evict" |
			refurb-partial -q -j 2 -c "$T/cache" -p 'resize=48,randaug=n=2:m=9' "$x.idx" |
			refurb-final -q -p 'crop=40,flip' > "$x.stream"
	done
	[ -s tree.stream ]
	cmp tree.stream "$T/sh.stream"
	rm tree.stream tree.evict
}

@test "GNU long names, ustar prefixes and pax paths; --label dir" {
	for fmt in gnu ustar pax; do
		"$TOP/scripts/make-shards" -n 2 --dirs --format $fmt ds "$T/$fmt" > /dev/null
		refurb-index -q -o "$T/$fmt.idx" --label dir "$T/$fmt"/train-00000{0,1}.tar
		run check_ranges "$T/$fmt.idx" dir
		[ "$status" -eq 0 ]
		[[ "$output" == "60 samples agree with tarfile" ]]
		diff <(labels_and_sizes tree.idx) <(labels_and_sizes "$T/$fmt.idx")
	done
	# names past ustar's 100 bytes: pax path, GNU 'L', ustar prefix
	long=$(printf 'd%.0s' {1..120})
	for fmt in gnu pax; do
		"$TARMAKE" "$T/long-$fmt.tar" --format $fmt "cat/$long.jpg=$JPG" \
			"cat/$long.cls=text:0" "dog/x.jpg=$JPG" "dog/x.cls=text:1"
		refurb-index -q -o "$T/long-$fmt.idx" --label dir "$T/long-$fmt.tar"
		run check_ranges "$T/long-$fmt.idx" dir
		[ "$status" -eq 0 ]
		refurb-dump "$T/long-$fmt.idx" | grep "cat/$long.jpg" > /dev/null
	done
	"$TARMAKE" "$T/prefix.tar" --format ustar \
		"$(printf 'p%.0s' {1..90})/$(printf 'f%.0s' {1..60}).jpg=$JPG"
	refurb-index -q -o "$T/prefix.idx" --label dir "$T/prefix.tar"
	run check_ranges "$T/prefix.idx" dir
	[ "$status" -eq 0 ]
}

@test "--label json:FIELD takes a class number or a class name" {
	"$TOP/scripts/make-shards" -n 2 --json ds "$T/j" > /dev/null
	refurb-index -q -o "$T/num.idx" --label json:label "$T"/j/train-00000{0,1}.tar
	diff <(labels_and_sizes tree.idx) <(labels_and_sizes "$T/num.idx")
	refurb-index -q -o "$T/name.idx" --label json:class "$T"/j/train-00000{0,1}.tar
	diff <(labels_and_sizes tree.idx) <(labels_and_sizes "$T/name.idx")
	refurb-dump "$T/name.idx" | grep -x '# class	2	class002' > /dev/null
	"$TARMAKE" "$T/bad.tar" "a.jpg=$JPG" 'a.json=text:{"label": "x"}' \
		"b.jpg=$JPG" 'b.json=text:{"other": 1}' "c.jpg=$JPG" 'c.json=text:[1]' \
		"d.jpg=$JPG" 'd.json=text:{"x": {"label": [1]}, "label": 4}' \
		"e.jpg=$JPG" 'e.json=text: {"a\"b": null, "label" : 2 } ' \
		"f.jpg=$JPG" 'f.json=text:{"label": 1, "label": 3}' \
		"g.jpg=$JPG" 'g.json=text:{"label": 1, "label": [3]}'
	run refurb-index -o "$T/bad.idx" --label json:label "$T/bad.tar"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "refurb-index: $T/bad.tar: member b.jpg: bad label in b.json: no field \"label\" holding a class number or name" ]
	[ "${lines[2]}" = "refurb-index: $T/bad.tar: member c.jpg: bad label in c.json: no field \"label\" holding a class number or name" ]
	[ "${lines[0]}" = "refurb-index: $T/bad.tar: member a.jpg: bad label: the class name 'x' where most samples have class numbers" ]
	# a duplicate key: its last value, as Python's json and WebDataset
	[ "${lines[3]}" = "refurb-index: $T/bad.tar: member g.jpg: bad label in g.json: no field \"label\" holding a class number or name" ]
	[[ "${lines[4]}" == "refurb-index: indexed 3 of 7 samples in 5 classes from 1 shard (4 bad, left out)"* ]]
	refurb-dump "$T/bad.idx" | awk -F'\t' '!/^#/ { print $2, $8 }' > "$T/got"
	diff "$T/got" <(printf '4 d.jpg\n2 e.jpg\n3 f.jpg\n')
}

@test "--label json:class: \\u escapes of any character (Python's json.dumps) are decoded; a malformed .json is bad" {
	# a class name written in Latin-1: JSON text is UTF-8 (RFC 8259)
	printf '{"class": "caf\xe9"}' > "$T/latin1.json"
	"$TARMAKE" "$T/u.tar" "a.jpg=$JPG" 'a.json=text:{"label": 0, "class": "\u00fcber \ud83d\ude00"}' \
		"b.jpg=$JPG" 'b.json=text:{"class": "b \"q\"", "label": 1}' \
		"c.jpg=$JPG" 'c.json=text:{"class": "b "q"", "label": 1}' \
		"d.jpg=$JPG" 'd.json=text:{"class": "\ud83d"}' \
		"e.jpg=$JPG" "e.json=$T/latin1.json" "f.jpg=$JPG" 'f.json=text:{"class": "a\tb"}'
	run refurb-index -o "$T/u.idx" --label json:class "$T/u.tar"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "refurb-index: $T/u.tar: member c.jpg: bad label in c.json: not valid JSON" ]
	[ "${lines[1]}" = "refurb-index: $T/u.tar: member d.jpg: bad label in d.json: no field \"class\" holding a class number or name" ]
	[ "${lines[2]}" = "refurb-index: $T/u.tar: member e.jpg: bad label in e.json: not valid JSON" ]
	[ "${lines[3]}" = "refurb-index: $T/u.tar: member f.jpg: bad label in f.json: no field \"class\" holding a class number or name" ]
	[[ "${lines[4]}" == "refurb-index: indexed 2 of 6 samples in 2 classes from 1 shard (4 bad, left out)"* ]]
	refurb-dump "$T/u.idx" | grep '^# class' > "$T/got"
	diff "$T/got" <(printf '# class\t0\tb "q"\n# class\t1\t\xc3\xbcber \xf0\x9f\x98\x80\n')
}

@test "the positional shards and an old version 1 index are still read" {
	run refurb-dump --stats "$TOP/tests/fuzz/corpus/index/tree.idx"
	[ "$status" -eq 0 ]
	[[ "$output" == *"version      1"* ]]
}

# bad_shards: b.tar with one bad member of each kind, b2.tar repeating a key
bad_shards() {
	"$TARMAKE" "$T/b.tar" "a.jpg=$JPG" a.cls=text:0 b.jpg=text:hello \
		b.cls=text:1 "c.jpg=$JPG" "d.jpg=$JPG" d.cls=text:x "e.jpg=$JPG" \
		"e.JPEG=$JPG" e.cls=text:2 "f.jpg=$JPG" f.cls=text:99999999999
	"$TARMAKE" "$T/b2.tar" "a.jpg=$JPG" a.cls=text:3 "g.jpg=$JPG" g.cls=text:1
}

@test "bad members: each named with its shard and reason, left out, counted" {
	bad_shards
	run refurb-index -o "$T/x.idx" "$T/b.tar" "$T/b2.tar"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "refurb-index: $T/b.tar: member b.jpg: not a JPEG file" ]
	[ "${lines[1]}" = "refurb-index: $T/b.tar: member c.jpg: no label: c.cls is missing" ]
	[ "${lines[2]}" = "refurb-index: $T/b.tar: member d.jpg: bad label in d.cls: 'x' is not a class number" ]
	[ "${lines[3]}" = "refurb-index: $T/b.tar: member e.JPEG: duplicate key e (an image of that key came before it in this shard)" ]
	[ "${lines[4]}" = "refurb-index: $T/b.tar: member f.jpg: bad label in f.cls: '99999999999' is not a class number" ]
	[ "${lines[5]}" = "refurb-index: $T/b2.tar: member a.jpg: duplicate key a (also in shard $T/b.tar)" ]
	[[ "${lines[6]}" == "refurb-index: indexed 3 of 9 samples in 3 classes from 2 shards (6 bad, left out)"* ]]
	refurb-dump "$T/x.idx" | awk -F'\t' '!/^#/ { print $2, $8, $9 }' > "$T/got"
	diff "$T/got" <(printf '0 a.jpg 1\n2 e.jpg 1\n1 g.jpg 2\n')
	run refurb-index --strict -o "$T/y.idx" "$T/b.tar" "$T/b2.tar"
	expect_fail 1 "refurb-index: $T/b.tar: member b.jpg: not a JPEG file"
	[ "${lines[1]}" = "refurb-index: stopped at the first bad file (--strict)" ]
	[ ! -e "$T/y.idx" ]
}

@test "an image whose key has a dot is named, not silently dropped; KEY.seg.png beside KEY.jpg is a field" {
	"$TARMAKE" "$T/dot.tar" "a.jpg=$JPG" a.cls=text:0 "img 1.v2.jpg=$JPG" \
		"img 1.v2.cls=text:1" "k.jpg=$JPG" "k.seg.png=$JPG" k.cls=text:2
	run refurb-index -o "$T/dot.idx" "$T/dot.tar"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "refurb-index: $T/dot.tar: member img 1.v2.jpg: key 'img 1' has no image: a WebDataset key ends at the first dot of the name, so this member is its field 'v2.jpg' (rename it without a dot before the extension)" ]
	[[ "${lines[1]}" == "refurb-index: indexed 2 of 3 samples in 3 classes from 1 shard (1 bad, left out)"* ]]
	refurb-dump "$T/dot.idx" | awk -F'\t' '!/^#/ { print $2, $8 }' > "$T/got"
	diff "$T/got" <(printf '0 a.jpg\n2 k.jpg\n')
	run refurb-index --strict -o "$T/dot2.idx" "$T/dot.tar"
	expect_fail 1 "refurb-index: $T/dot.tar: member img 1.v2.jpg: key 'img 1' has no image: a WebDataset key ends at the first dot of the name, so this member is its field 'v2.jpg' (rename it without a dot before the extension)"
}

@test "a truncated shard and a corrupt header checksum: the rest left out" {
	"$TARMAKE" "$T/t.tar" "a.jpg=$JPG" a.cls=text:0 b.cls=text:1 "b.jpg=$JPG"
	# tarfile puts b.jpg's header at 4608, its data at 5120
	head -c 6000 "$T/t.tar" > "$T/trunc.tar"
	run refurb-index -o "$T/x.idx" "$T/trunc.tar"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "refurb-index: $T/trunc.tar: member b.jpg: truncated shard (the member needs $(stat -c %s "$JPG") bytes at offset 5120, the shard is 6000 bytes)" ]
	[[ "${lines[1]}" == "refurb-index: indexed 1 of 2 samples"*"(1 bad, left out)"* ]]
	head -c 4700 "$T/t.tar" > "$T/trunc2.tar"
	run refurb-index -o "$T/x.idx" "$T/trunc2.tar"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "refurb-index: $T/trunc2.tar: truncated shard: it ends inside the tar header at offset 4608 (after member b.cls): the rest of the shard is left out" ]
	"$TARMAKE" "$T/pax.tar" --format pax "$(printf 'l%.0s' {1..150}).jpg=$JPG"
	head -c 700 "$T/pax.tar" > "$T/trunc3.tar"
	run refurb-index -o "$T/x.idx" "$T/trunc3.tar"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "refurb-index: $T/trunc3.tar: truncated shard: it ends after an extension header, before its member (after member (none)): the rest of the shard is left out" ]
	cp "$T/t.tar" "$T/corrupt.tar"
	printf 'X' | dd of="$T/corrupt.tar" bs=1 seek=3587 conv=notrunc 2> /dev/null
	run refurb-index -o "$T/x.idx" "$T/corrupt.tar"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "refurb-index: $T/corrupt.tar: corrupt tar header at offset 3584 (checksum mismatch; after member a.cls): the rest of the shard is left out" ]
	run refurb-index --strict -o "$T/x.idx" "$T/corrupt.tar"
	expect_fail 1 "refurb-index: $T/corrupt.tar: corrupt tar header at offset 3584"
}

# tar_append TAR TYPE NAME DATA: a header of TYPE for NAME with DATA (a
# pax record, a long name) after TAR's members, then the two zero blocks.
tar_append() {
	/usr/bin/python3 - "$@" <<'PY'
import sys
path, typ, name, data = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4].encode()
t = open(path, "rb").read()
end = len(t)
while end >= 512 and not any(t[end - 512:end]):
    end -= 512
h = bytearray(512)
h[0:len(name)] = name
h[100:108] = b"0000644\0"
h[124:136] = b"%011o\0" % len(data)
h[156] = ord(typ)
h[257:265] = b"ustar\x0000"
h[148:156] = b" " * 8
h[148:156] = b"%06o\0 " % sum(h)
pad = data + bytes(-len(data) % 512)
open(path, "wb").write(t[:end] + bytes(h) + pad + bytes(1024))
PY
}

@test "corrupt pax records and an extension header without its member: the rest left out" {
	"$TARMAKE" "$T/t.tar" "a.jpg=$JPG" a.cls=text:0
	for rec in '11 size=-1' '15 size=1x2345' '\n\n\n\n\n\n\n7 ' '+16 path=b.jpg'; do
		cp "$T/t.tar" "$T/pax.tar"
		tar_append "$T/pax.tar" x pax "$(printf "$rec")
"
		run refurb-index -o "$T/x.idx" "$T/pax.tar"
		[ "$status" -eq 0 ]
		[[ "${lines[0]}" == "refurb-index: $T/pax.tar: corrupt pax header after member a.cls ("*"): the rest of the shard is left out" ]]
		[[ "${lines[1]}" == "refurb-index: indexed 1 of 2 samples"* ]]
	done
	cp "$T/t.tar" "$T/long.tar"
	tar_append "$T/long.tar" L ././@LongLink "b.jpg"
	run refurb-index -o "$T/x.idx" "$T/long.tar"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "refurb-index: $T/long.tar: truncated shard: it ends after an extension header, before its member (after member a.cls): the rest of the shard is left out" ]
	cp "$T/t.tar" "$T/global.tar"
	tar_append "$T/global.tar" g pax "$(printf '%0600d' 0)"
	truncate -s -1600 "$T/global.tar"
	run refurb-index -o "$T/x.idx" "$T/global.tar"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "refurb-index: $T/global.tar: truncated shard: the extension header at offset "*" needs 600 bytes, the shard is "*": the rest of the shard is left out" ]]
}

@test "compressed, empty and non-tar shards are refused" {
	gzip -c sh/train-000000.tar > "$T/s.tar.gz"
	run refurb-index -o "$T/x.idx" "$T/s.tar.gz"
	expect_fail 1 "refurb-index: $T/s.tar.gz: compressed shard (gzip): refurb reads shards in place, so they must be uncompressed tar files (decompress it first)"
	run refurb-index -o "$T/x.idx" --shards "$T/s.tar.gz"
	expect_fail 1 "refurb-index: $T/s.tar.gz: compressed shard (gzip)"
	xz -c sh/train-000000.tar > "$T/s.tar.xz" || skip "no xz"
	run refurb-index -o "$T/x.idx" "$T/s.tar.xz"
	expect_fail 1 "refurb-index: $T/s.tar.xz: compressed shard (xz)"
	run refurb-index -o "$T/x.idx" "$T/s.tar.gz" sh/train-000001.tar
	expect_fail 1 "refurb-index: $T/s.tar.gz: compressed shard (gzip)"
	run refurb-index -o "$T/x.idx" --shards "$JPG"
	expect_fail 1 "refurb-index: $JPG: not a tar file (no valid tar header at its start)"
	"$TARMAKE" "$T/empty.tar"
	run refurb-index -o "$T/x.idx" "$T/empty.tar"
	expect_fail 1 "refurb-index: $T/empty.tar: no KEY.jpg or KEY.png members in the 1 shard"
}

# partial_quiet ARGS: refurb-partial -q on $T/plan, its output dropped
partial_quiet() {
	refurb-partial -q "$@" < "$T/plan" > /dev/null
}

@test "a shard that changed or vanished since indexing is refused" {
	mkdir "$T/s"
	cp sh/train-00000{0,1}.tar "$T/s/"
	refurb-index -q -o "$T/s.idx" "$T"/s/train-00000{0,1}.tar
	refurb-evict -q -r 2 "$T/s.idx" > "$T/s.evict"
	refurb-plan -q -b 8 -e 0 "$T/s.evict" > "$T/plan"
	refurb-partial -q -c "$T/c0" -p resize=32 "$T/s.idx" < "$T/plan" > /dev/null
	printf 'x' >> "$T/s/train-000001.tar"
	run partial_quiet -c "$T/c1" -p resize=32 "$T/s.idx"
	expect_fail 1 "refurb-partial: $T/s/train-000001.tar: shard changed since it was indexed ($(stat -c %s "$T/s/train-000001.tar") bytes, the index says"
	truncate -s -1 "$T/s/train-000001.tar"
	run partial_quiet -c "$T/c2" -p resize=32 "$T/s.idx"
	expect_fail 1 "refurb-partial: $T/s/train-000001.tar: shard changed since it was indexed"
	[[ "${lines[0]}" == *"and another mtime: a copy keeps it with cp -p or rsync -t; re-run refurb-index)" ]]
	rm "$T/s/train-000000.tar"
	run partial_quiet -c "$T/c3" -p resize=32 "$T/s.idx"
	expect_fail 1 "refurb-partial: $T/s/train-000000.tar: shard vanished since it was indexed (if the shards moved, give their directory with --root DIR, or re-run refurb-index)"
	# with --root, that is what to check
	run partial_quiet -c "$T/c4" -p resize=32 --root "$T/nowhere" "$T/s.idx"
	expect_fail 1 "refurb-partial: $T/nowhere/train-00000"
	[[ "${lines[0]}" == *": shard vanished since it was indexed (check --root, or re-run refurb-index)" ]]
}

@test "refurb-final heals a lost record from the shard" {
	refurb-index -q -o "$T/sh.idx" sh/train-00000{0,1,2}.tar
	refurb-evict -q -r 2 "$T/sh.idx" > "$T/sh.evict"
	refurb-plan -q -b 16 -e 0 "$T/sh.evict" |
		refurb-partial -q -c "$T/c" -p resize=48 "$T/sh.idx" > "$T/ann"
	refurb-final -q -p crop=40 < "$T/ann" > "$T/good"
	rm "$T"/c/*.seg
	run sh -c "refurb-final -p crop=40 < '$T/ann' > '$T/healed'"
	[ "$status" -eq 0 ]
	[[ "$output" =~ records\ recomputed\ 60 ]]
	diff <("$BUILD_DIR/tools/stream_digest" "$T/good") \
	     <("$BUILD_DIR/tools/stream_digest" "$T/healed")
}

@test "refurb-dump --extract and --preview --index read a shard sample in place" {
	refurb-index -q -o "$T/sh.idx" sh/train-00000{0,1,2}.tar
	for id in 0 21 59; do
		refurb-dump --extract $id -o "$T/x.jpg" "$T/sh.idx"
		path=$(refurb-dump tree.idx | awk -F'\t' -v id=$id '$1 == id { print $8 }')
		cmp "$T/x.jpg" "ds/$path"
	done
	run refurb-dump --extract 60 -o "$T/x.jpg" "$T/sh.idx"
	expect_fail 1 "refurb-dump: $T/sh.idx: no sample 60 (the index has 60)"
	refurb-dump --preview 'resize=48,randaug=n=2:m=9' -n 3 -o "$T/p1.jpg" \
		--index "$T/sh.idx" 0 21
	refurb-dump --preview 'resize=48,randaug=n=2:m=9' -n 3 -o "$T/p2.jpg" \
		--index tree.idx 0 21
	cmp "$T/p1.jpg" "$T/p2.jpg"
	run refurb-dump --preview resize=48 -o "$T/p3.jpg" --index "$T/sh.idx" 60
	expect_fail 2 "refurb-dump: sample id: 60 is out of range (0 to 59)"
	cp sh/train-000000.tar "$T/s0.tar"
	refurb-index -q -o "$T/s0.idx" "$T/s0.tar"
	printf 'x' >> "$T/s0.tar"
	run refurb-dump --extract 0 -o "$T/x.jpg" "$T/s0.idx"
	expect_fail 1 "refurb-dump: $T/s0.tar: shard changed since it was indexed"
}

@test "truncations and corruptions of a shard: a message, never a crash" {
	"$TARMAKE" "$T/s.tar" --format pax "a.jpg=$JPG" a.cls=text:0 \
		"$(printf 'l%.0s' {1..150}).jpg=$JPG" "$(printf 'l%.0s' {1..150}).cls=text:1"
	size=$(stat -c %s "$T/s.tar")
	for cut in $(seq 0 211 "$size"); do
		head -c "$cut" "$T/s.tar" > "$T/cut.tar"
		run refurb-index -q -o "$T/x.idx" "$T/cut.tar"
		[ "$status" -le 1 ] || { echo "cut at $cut: status $status"; false; }
		[ "$status" -eq 0 ] || [[ "${lines[0]}" == "refurb-index: $T/cut.tar: "* ]]
	done
	for at in $(seq 3 97 6000); do
		cp "$T/s.tar" "$T/bad.tar"
		printf '\377' | dd of="$T/bad.tar" bs=1 seek="$at" conv=notrunc 2> /dev/null
		run refurb-index -q -o "$T/x.idx" "$T/bad.tar"
		[ "$status" -le 1 ] || { echo "byte $at: status $status"; false; }
	done
}

@test "GNU tar's own archives (gnu, posix, ustar), ./ names, directories" {
	mkdir -p "$T/w/cat" "$T/w/dog"
	cp "$JPG" "$T/w/cat/a.jpg"
	cp "$JPG" "$T/w/dog/b.JPEG"
	printf 0 > "$T/w/cat/a.cls"
	printf 1 > "$T/w/dog/b.cls"
	for fmt in gnu posix ustar; do
		tar -C "$T/w" --format=$fmt -cf "$T/$fmt.tar" .
		refurb-index -q -o "$T/$fmt.idx" "$T/$fmt.tar"
		run check_ranges "$T/$fmt.idx"
		[ "$status" -eq 0 ]
		[[ "$output" == "2 samples agree with tarfile" ]]
		refurb-index -q -o "$T/$fmt-dir.idx" --label dir "$T/$fmt.tar"
		run check_ranges "$T/$fmt-dir.idx" dir
		[ "$status" -eq 0 ]
		refurb-dump "$T/$fmt-dir.idx" | awk -F'\t' '!/^#/ { print $3, $8 }' > "$T/got"
		diff "$T/got" <(printf 'cat ./cat/a.jpg\ndog ./dog/b.JPEG\n')
	done
}

# big_exif IN OUT: IN with a 60000-byte APP1 block before its frame header
# (more than the prober's first 16 KiB read).
big_exif() {
	/usr/bin/python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
pad = b"Exif\0\0" + bytes(60000)
open(sys.argv[2], "wb").write(d[:2] + b"\xff\xe1" + (len(pad) + 2).to_bytes(2, "big") + pad + d[2:])
' "$1" "$2"
}

@test "a JPEG whose frame header lies past the first read, in a tree and a shard" {
	mkdir -p "$T/tree/c"
	big_exif "$JPG" "$T/tree/c/big.jpg"
	refurb-index -o "$T/tree.idx" "$T/tree" 2> "$T/err"
	grep "indexed 1 of 1 file " "$T/err" > /dev/null
	"$TARMAKE" "$T/big.tar" "big.jpg=$T/tree/c/big.jpg" big.cls=text:0
	refurb-index -o "$T/big.idx" "$T/big.tar" 2> "$T/err"
	grep "indexed 1 of 1 sample " "$T/err" > /dev/null
	refurb-dump "$T/big.idx" | awk -F'\t' '!/^#/ { print $5, $6 }' > "$T/got"
	refurb-dump tree.idx | awk -F'\t' '$1 == 0 { print $5, $6 }' > "$T/want"
	diff "$T/want" "$T/got"
}

@test "PNG members are samples too, the same as in the tree" {
	mkdir -p "$T/p/a" "$T/p/b"
	for k in rgb8 gray8 la8; do cp "$TOP/tests/data/png/$k.png" "$T/p/a/"; done
	for k in rgb16 pal8; do cp "$TOP/tests/data/png/$k.png" "$T/p/b/"; done
	cp "$JPG" "$T/p/b/photo.jpg"
	refurb-index -q -o "$T/tree.idx" "$T/p"
	"$TOP/scripts/make-shards" -n 2 "$T/p" "$T/ps" > /dev/null
	refurb-index -q -o "$T/sh.idx" --classes "$T/ps/classes.txt" "$T"/ps/train-00000{0,1}.tar
	diff <(labels_and_sizes "$T/tree.idx") <(labels_and_sizes "$T/sh.idx")
	[ "$(refurb-dump --stats "$T/tree.idx" | grep identity)" = \
	  "$(refurb-dump --stats "$T/sh.idx" | grep identity)" ]
	run check_ranges "$T/sh.idx"
	[ "$status" -eq 0 ]
	[[ "$output" == "6 samples agree with tarfile" ]]
}

@test "more shards than the descriptor limit: read with the least recently used closed" {
	# 60 shards of one sample each, under a limit of 40 descriptors: a
	# reader that kept every shard open would fail with EMFILE
	"$TOP/scripts/make-shards" -n 60 ds "$T/many" > /dev/null
	refurb-index -q -o "$T/many.idx" --classes "$T/many/classes.txt" \
		--shards "$T/many/train-{000000..000059}.tar"
	refurb-evict -q -r 1 -s 5 tree.idx > "$T/tree.evict"
	refurb-evict -q -r 1 -s 5 "$T/many.idx" > "$T/many.evict"
	# (the same cache directory: the stream's header names it)
	refurb-plan -q -b 16 -e 0-1 -s 5 "$T/tree.evict" |
		refurb-partial -q -j 2 -c "$T/c" -p 'resize=48' tree.idx |
		refurb-final -q -p 'crop=40' > "$T/tree.stream"
	rm -rf "$T/c"
	run bash -c "set -o pipefail; ulimit -n 40 && refurb-plan -q -b 16 -e 0-1 -s 5 '$T/many.evict' |
		refurb-partial -q -j 2 -c '$T/c' -p 'resize=48' '$T/many.idx' |
		refurb-final -q -p 'crop=40' > '$T/many.stream'"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ -s "$T/tree.stream" ]
	cmp "$T/tree.stream" "$T/many.stream"
}
