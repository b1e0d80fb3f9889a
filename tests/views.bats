#!/usr/bin/env bats
# refurb-final --views K: K independent final augmentations of every
# sample, carried together in a version 2 stream, read as (N, K, ...).

load helpers
bats_require_minimum_version 1.5.0
set -o pipefail

SPEC='resize=64'
FINAL='rrcrop=48,flip,apply=0.8,colorjitter=0.4:contrast=0.4:saturation=0.4:hue=0.1,grayscale=0.2'

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	make_train 40 3 2
	refurb-plan -q -b 8 -e 0-2 train.evict > plan.txt
	refurb-partial -q -c cache -p "$SPEC" train.idx < plan.txt > ann.txt
}

setup() {
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	need_numpy
	export PYTHONPATH="$TOP/python"
}

@test "--views 2: batches of (N, 2, H, W, C), view 0 is the one-view stream" {
	refurb-final -q -p "$FINAL" -i ann.txt -o "$T/one.s"
	refurb-final -q -p "$FINAL" --views 2 -i ann.txt -o "$T/two.s"
	/usr/bin/python3 - "$T/one.s" "$T/two.s" <<'EOF'
import sys
import numpy as np
from refurb_stream import open_stream
one = list(open_stream(sys.argv[1], verify=True))
with open_stream(sys.argv[2], verify=True) as s:
    assert s.header.views == 2, s.header.views
    two = list(s)
assert len(one) == len(two) == 15, (len(one), len(two))
differ = 0
for a, b in zip(one, two):
    assert b.images.shape == (a.images.shape[0], 2, 48, 48, 3), b.images.shape
    assert (a.labels == b.labels).all() and (a.ids == b.ids).all()
    assert (a.epoch, a.step) == (b.epoch, b.step)
    assert (b.images[:, 0] == a.images).all()
    differ += int((b.images[:, 0] != b.images[:, 1]).any(axis=(1, 2, 3)).sum())
assert differ > 100, differ   # independent views: nearly all differ
EOF
}

@test "--views: the same streams for any -j, and a version 2 magic" {
	refurb-final -q -j 1 -p "$FINAL" --views 3 -i ann.txt -o "$T/a.s"
	refurb-final -q -j 3 -p "$FINAL" --views 3 -i ann.txt -o "$T/b.s"
	cmp "$T/a.s" "$T/b.s"
	run -0 od -An -c -N8 "$T/a.s"
	[[ "$output" == *"R   F   B   S   T   R   M 002"* ]] || false
	refurb-final -q -p "$FINAL" -i ann.txt -o "$T/c.s"
	run -0 od -An -c -N8 "$T/c.s"
	[[ "$output" == *"R   F   B   S   T   R   M 001"* ]] || false
}

@test "--views: refurb-dump reads the stream and counts samples, not images" {
	refurb-final -q -p "$FINAL" --views 2 -i ann.txt -o "$T/two.s"
	run -0 refurb-dump --verify "$T/two.s"
	run -0 /usr/bin/python3 -m refurb_stream check "$T/two.s"
}

@test "a reader refuses a stream version it does not know, naming it" {
	refurb-final -q -p "$FINAL" --views 2 -i ann.txt -o "$T/two.s"
	/usr/bin/python3 - "$T/two.s" "$T/v4.s" <<'EOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[7] = 4   # the first frame's version byte (its checksum is then wrong too)
open(sys.argv[2], "wb").write(data)
EOF
	run -1 refurb-dump "$T/v4.s"
	[[ "$output" == *"batch stream format version 4, this refurb reads versions 1 to 3"* ]] || false
	run -1 /usr/bin/python3 -m refurb_stream check "$T/v4.s"
	[[ "$output" == *"format version 4, this reader reads 1 to 3"* ]] || false
}

@test "--views: a checkpoint of a K-view stream is refused by a stream of another K, accepted by the same K" {
	"$PY" -c 'import torch' 2>/dev/null || skip "torch is not installed for $PY"
	refurb-final -q -p "$FINAL" -i ann.txt -o "$T/one.s"
	refurb-final -q -p "$FINAL" --views 2 -i ann.txt -o "$T/two.s"
	refurb-final -q -p "$FINAL" --views 3 -i ann.txt -o "$T/three.s"
	run -0 "$PY" - "$T/one.s" "$T/two.s" "$T/three.s" <<'EOF'
import sys
from refurb_stream import RefurbDataset, StreamError
one, two, three = (RefurbDataset(p) for p in sys.argv[1:])
for x, y in two:
    break
sd = two.state_dict()
for name, other in (("one", one), ("three", three), ("two", RefurbDataset(sys.argv[2]))):
    try:
        other.load_state_dict(sd)
        print(name, "accepted")
    except StreamError as e:
        print(name, "refused:", "another plan" in str(e))
EOF
	[ "${lines[0]}" = "one refused: True" ]
	[ "${lines[1]}" = "three refused: True" ]
	[ "${lines[2]}" = "two accepted" ]
}

@test "--views: bad values are usage errors" {
	run refurb-final -q -p "$FINAL" --views 0 -i ann.txt
	expect_fail 2 "refurb-final: --views"
	run refurb-final -q -p "$FINAL" --views 65 -i ann.txt
	expect_fail 2 "refurb-final: --views"
	run refurb-final -q -p "$FINAL" --views two -i ann.txt
	expect_fail 2 "refurb-final: --views"
}

@test "-p once per view: view v runs the v-th pipeline, as --views runs it" {
	B='rrcrop=48,flip,solarize=threshold=128:p=0.5'
	refurb-final -q -p "$FINAL" -p "$B" -i ann.txt -o "$T/ab.s"
	refurb-final -q -p "$FINAL" --views 2 -i ann.txt -o "$T/aa.s"
	refurb-final -q -p "$B" --views 2 -i ann.txt -o "$T/bb.s"
	/usr/bin/python3 - "$T/ab.s" "$T/aa.s" "$T/bb.s" <<'PY'
import sys
from refurb_stream import open_stream
ab, aa, bb = (list(open_stream(p, verify=True)) for p in sys.argv[1:])
assert len(ab) == len(aa) == len(bb) == 15
for x, y, z in zip(ab, aa, bb):
    assert x.images.shape == y.images.shape == z.images.shape
    assert (x.ids == y.ids).all() and (x.labels == z.labels).all()
    assert (x.images[:, 0] == y.images[:, 0]).all()   # view 0: the first -p
    assert (x.images[:, 1] == z.images[:, 1]).all()   # view 1: the second
assert any((x.images[:, 1] != y.images[:, 1]).any() for x, y in zip(ab, aa))
PY
	run -0 refurb-dump "$T/ab.s"
	[[ "$output" == *"# final	rrcrop=48x48:"*";rrcrop=48x48:"*"solarize=threshold=128:p=0.5"* ]] || false
}

@test "-p once per view: views of another size, dtype or normalize are refused" {
	run refurb-final -q -p 'rrcrop=48' -p 'rrcrop=32' -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: view 1's pipeline makes 32x32x3 images, view 0's 48x48x3: the views of a group have one size (give views of another size their own --view-group)"
	run refurb-final -q -p 'rrcrop=48' -p 'rrcrop=48' -p 'rrcrop=48,normalize=mean=0:std=1' -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: view 2's pipeline does not end as view 0's (the same normalize, or none, in every view)"
	run refurb-final -q -p 'rrcrop=48,normalize=mean=0.5:std=0.2' -p 'rrcrop=48,normalize=mean=0.5:std=0.3' -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: view 1's pipeline does not end as view 0's"
	run refurb-final -q -p 'rrcrop=48' -p 'rrcrop=48,colorjiter' -i ann.txt -o "$T/x.s"
	expect_fail 2 'refurb-final: bad pipeline spec at column 11: unknown filter "colorjiter"'
	run refurb-final -q -p 'rrcrop=48' -p 'rrcrop=48' --views 3 -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: --views 3 with 2 pipelines (-p): give one -p per view, or one -p for all"
	[ ! -s "$T/x.s" ]
}

@test "crops of two sizes as two chains from one plan file, zipped by the reader (what -g replaces)" {
	G='rrcrop=48:scale=0.4-1:interp=bicubic,flip'
	L='rrcrop=24:scale=0.05-0.4:interp=bicubic,flip'
	refurb-partial -q -c "$T/gcache" -p "$SPEC" train.idx < plan.txt |
		refurb-final -q -p "$G" -p "$G,solarize=threshold=128:p=0.2" -o "$T/global.s"
	refurb-partial -q -c "$T/lcache" -p "$SPEC" train.idx < plan.txt |
		refurb-final -q -s 8 --views 3 -p "$L" -o "$T/local.s"
	/usr/bin/python3 - "$T/global.s" "$T/local.s" <<'PY'
import sys
from refurb_stream import open_stream
n = 0
for g, l in zip(open_stream(sys.argv[1], verify=True), open_stream(sys.argv[2], verify=True)):
    assert (g.ids == l.ids).all() and (g.labels == l.labels).all()
    assert (g.epoch, g.step) == (l.epoch, l.step)
    assert g.images.shape[1:] == (2, 48, 48, 3), g.images.shape
    assert l.images.shape[1:] == (3, 24, 24, 3), l.images.shape
    n += 1
assert n == 15, n
PY
}

@test "--views: refurb-dump --sheet shows every view of every sample, nothing on stdout" {
	refurb-final -q -p "$FINAL" --views 3 -i ann.txt -o "$T/three.s"
	run --separate-stderr refurb-dump -b 0:0 --sheet "$T/three.jpg" "$T/three.s"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ -z "$stderr" ]
	need_pil
	# 8 samples, 3 a row (ceil(sqrt(8))), each 3 views of 48x48, 2-pixel gaps
	run -0 /usr/bin/python3 - "$T/three.jpg" "$T/three.s" <<'EOF2'
import sys
import numpy as np
from PIL import Image
from refurb_stream import open_stream
sheet = np.asarray(Image.open(sys.argv[1]).convert("RGB")).astype(int)
print(sheet.shape[1], sheet.shape[0])
batch = next(iter(open_stream(sys.argv[2])))
worst = 0
for j in range(8):
    for v in range(3):
        col, row = (j % 3) * 3 + v, j // 3
        cell = sheet[2 + row * 50:2 + row * 50 + 48, 2 + col * 50:2 + col * 50 + 48]
        worst = max(worst, np.abs(cell - batch.images[j, v]).mean())
print("every view in its place:", worst < 8)
EOF2
	[ "${lines[0]}" = "452 152" ]
	[ "${lines[1]}" = "every view in its place: True" ]
}

@test "--views: views of one final pipeline that would often be identical are refused, naming the probability and what to move" {
	# the issue's split: the crop, jitter and grayscale cached, only the flip final
	refurb-partial -q -c "$T/c2" -p 'resize=64,rrcrop=48,apply=0.8,colorjitter=0.4,grayscale=0.2' \
		train.idx < plan.txt > "$T/ann2.txt"
	run refurb-final -q -p flip,centercrop=48 --views 2 -i "$T/ann2.txt" -o "$T/x.s"
	expect_fail 2 "refurb-final: 2 views of every sample run the final pipeline 'flip=p=0.5,centercrop=48x48', whose draws are the same for both with probability 50% (over the limit of 1%): identical views teach a contrastive loss nothing; move random layers of the partial pipeline (rrcrop, colorjitter, grayscale) into the final part (refurb-advise --views 2 chooses the split), or give --allow-view-collisions"
	[ ! -s "$T/x.s" ]
	# three views: the union bound over their pairs
	run refurb-final -q -p 'crop=60,flip' --views 3 -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: 3 views of every sample run the final pipeline 'crop=60x60"
	[[ "${lines[0]}" == *"whose draws repeat for two of them with probability"* ]] || false
	[[ "${lines[0]}" == *"give the final part layers that draw more (a crop) (refurb-advise --views 3"* ]] || false
	# two -p of the same spec are one group; a different spec is not checked against it
	run refurb-final -q -p flip,centercrop=48 -p 'rrcrop=48' -p flip,centercrop=48 -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: 2 views of every sample run the final pipeline 'flip=p=0.5,centercrop=48x48'"
	# the option runs them (the cached draws shared: the other option); one view is never refused
	refurb-final -q -p flip,centercrop=48 --views 2 --allow-view-collisions --allow-shared-draws -i "$T/ann2.txt" -o "$T/x.s"
	refurb-final -q -p flip,centercrop=48 -i "$T/ann2.txt" -o "$T/y.s"
	refurb-final -q -p "$FINAL" --views 2 --allow-shared-draws -i "$T/ann2.txt" -o "$T/z.s"
}

@test "--views: views made from a cached record whose partial pipeline draws are refused, naming its layers; --allow-shared-draws runs them" {
	# MoCo v2 with the crop cached: the views differ in colour, never in crop
	refurb-partial -q -c "$T/c5" -p 'resize=64,rrcrop=48,flip' train.idx < plan.txt > "$T/ann5.txt"
	F='colorjitter=0.4:contrast=0.4:saturation=0.4:hue=0.1,grayscale=0.2,centercrop=48'
	run refurb-final -q -p "$F" --views 2 -i "$T/ann5.txt" -o "$T/x.s"
	expect_fail 2 "refurb-final: 2 views of every sample are made from one cached record, whose partial pipeline 'resize=64:max_size=0:interp=bilinear,rrcrop=48x48:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,flip=p=0.5' has layers that draw (rrcrop, flip): the views of a sample would share their draws, where torchvision draws them per view; move them into the final part (refurb-advise --views 2 chooses the split), or give --allow-shared-draws"
	[ ! -s "$T/x.s" ]
	# --allow-view-collisions is another matter: it does not run them
	run refurb-final -q -p "$F" --views 2 --allow-view-collisions -i "$T/ann5.txt" -o "$T/x.s"
	expect_fail 2 "refurb-final: 2 views of every sample are made from one cached record"
	# two -p over one record: views too
	run refurb-final -q -p "$F" -p "$F,solarize=threshold=128:p=0.2" -i "$T/ann5.txt" -o "$T/x.s"
	expect_fail 2 "refurb-final: 2 views of every sample are made from one cached record"
	# the collision message comes first when it applies, unchanged
	run refurb-final -q -p centercrop=48 --views 2 -i "$T/ann5.txt" -o "$T/x.s"
	expect_fail 2 "refurb-final: 2 views of every sample run the final pipeline 'centercrop=48x48', whose draws are the same for both with probability 100%"
	# the option runs them, the views sharing the crop and the flip
	refurb-final -q -p "$F" --views 2 --allow-shared-draws -i "$T/ann5.txt" -o "$T/v.s"
	/usr/bin/python3 - "$T/v.s" <<'PY'
import sys
from refurb_stream import open_stream
b = next(iter(open_stream(sys.argv[1], verify=True)))
assert b.images.shape[1:] == (2, 48, 48, 3), b.images.shape
PY
	# a gate's own draw, around a layer that always runs, is shared too
	refurb-partial -q -c "$T/c6" -p 'resize=64,apply=0.5,grayscale=p=1' train.idx < plan.txt > "$T/ann6.txt"
	run refurb-final -q -p "rrcrop=48,$F" --views 2 -i "$T/ann6.txt" -o "$T/x.s"
	expect_fail 2 "refurb-final: 2 views of every sample are made from one cached record, whose partial pipeline 'resize=64:max_size=0:interp=bilinear,apply=p=0.5:n=1,grayscale=p=1' has layers that draw (apply): the views"
	# one view, or a partial pipeline that draws nothing, is never refused
	refurb-final -q -p "$F" -i "$T/ann5.txt" -o "$T/y.s"
	refurb-final -q -p "rrcrop=48,$F" --views 2 -i ann.txt -o "$T/z.s"
}

@test "--views: the identical views of a stream, counted over 400 samples, are as many as the refusal predicts (binomial tolerance)" {
	refurb-plan -q -b 8 -e 0-9 train.evict > "$T/plan10.txt"
	refurb-partial -q -c "$T/c3" -p 'resize=64x64' train.idx < "$T/plan10.txt" > "$T/ann3.txt"
	for final in 'flip,grayscale=p=0.2,centercrop=64' 'crop=60,flip' 'apply=0.5,colorjitter=0.4,flip,centercrop=64'; do
		run refurb-final -q -p "$final" --views 2 -i "$T/ann3.txt" -o "$T/x.s"
		[ "$status" -eq 2 ]
		p=$(sed -n 's/.*with probability \([0-9.e+-]*\)% (over.*/\1/p' <<<"${lines[0]}")
		[ -n "$p" ]
		refurb-final -q -p "$final" --views 2 --allow-view-collisions -i "$T/ann3.txt" -o "$T/v.s"
		/usr/bin/python3 - "$T/v.s" "$p" "$final" <<'PY'
import math, sys
from refurb_stream import open_stream
p = float(sys.argv[2]) / 100
n = same = 0
for b in open_stream(sys.argv[1], verify=True):
    n += len(b.ids)
    same += int((b.images[:, 0] == b.images[:, 1]).all(axis=(1, 2, 3)).sum())
sd = math.sqrt(n * p * (1 - p))
print("%s: %d of %d identical, predicted %.1f (sd %.1f)" % (sys.argv[3], same, n, n * p, sd))
assert n == 400, n
assert abs(same - n * p) <= 4 * sd + 1, (same, n * p, sd)
PY
	done
}

@test "--progress: the first line of refurb-partial's and refurb-final's progress is the split" {
	refurb-partial --progress -c "$T/c4" -p "$SPEC" train.idx < plan.txt 2> "$T/p.err" |
		refurb-final --progress -p "$FINAL" --views 2 -o "$T/x.s" 2> "$T/f.err"
	run -0 head -1 "$T/p.err"
	[ "$output" = "refurb-partial: split: cached once every 2 uses (here): resize=64:max_size=0:interp=bilinear; run on every use: refurb-final's pipeline" ]
	run -0 head -1 "$T/f.err"
	[[ "$output" == "refurb-final: split: cached once every 2 uses (refurb-partial): resize=64:max_size=0:interp=bilinear; run on every use (here, 2 views): rrcrop=48x48:"*",grayscale=p=0.2" ]] || false
	# -q: no progress, no split line
	refurb-final -q -p "$FINAL" -i ann.txt -o "$T/y.s" 2> "$T/q.err"
	[ ! -s "$T/q.err" ]
}
