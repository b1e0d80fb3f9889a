#!/usr/bin/env bats
# refurb-final -g K:SPEC[;SPEC...]: view groups of different sizes (DINO's
# global and local crops) from one cached record, in one version 3 stream
# (a VIEW_GROUPS frame after the HEADER), read as one array per group.

load helpers
bats_require_minimum_version 1.5.0
set -o pipefail

SPEC='resize=64'
G='rrcrop=48:scale=0.4-1,flip'
G2='rrcrop=48:scale=0.4-1,flip,solarize=threshold=128:p=0.2'
L='rrcrop=24:scale=0.05-0.4,flip'

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

@test "-g: one array per group, (N, K_g, H_g, W_g, C); group 0 is the -p per view stream; each record read once" {
	refurb-final -q -g "2:$G;$G2" -g "3:$L" -i ann.txt -o "$T/g.s" --stats "$T/g.tsv"
	refurb-final -q -p "$G" -p "$G2" -i ann.txt -o "$T/p.s"
	refurb-final -q -p "$L" -i ann.txt -o "$T/one.s" --stats "$T/one.tsv"
	/usr/bin/python3 - "$T/g.s" "$T/p.s" <<'EOF'
import sys
import numpy as np
from refurb_stream import open_stream
with open_stream(sys.argv[1], verify=True) as s:
    assert s.header.groups == [(2, 48, 48), (3, 24, 24)], s.header.groups
    assert s.header.views == 5 and s.header.version == 3
    g = list(s)
p = list(open_stream(sys.argv[2], verify=True))
assert len(g) == len(p) == 15, (len(g), len(p))
differ = 0
for a, b in zip(g, p):
    assert isinstance(a.images, list) and len(a.images) == 2
    n = len(a.ids)
    assert a.images[0].shape == (n, 2, 48, 48, 3), a.images[0].shape
    assert a.images[1].shape == (n, 3, 24, 24, 3), a.images[1].shape
    assert (a.ids == b.ids).all() and (a.labels == b.labels).all()
    assert (a.images[0] == b.images).all()     # the same draws as -p per view
    loc = a.images[1].reshape(n, 3, -1)
    differ += int((loc[:, 0] != loc[:, 1]).any(axis=1).sum())
assert differ > 100, differ    # independent local crops
EOF
	# the records read (bytes_read, column 6) are a one-view stream's
	[ "$(cut -f6 "$T/g.tsv" | paste -sd+ | bc)" = "$(cut -f6 "$T/one.tsv" | paste -sd+ | bc)" ]
}

@test "-g: version 3 magic, a critical VIEW_GROUPS frame; the same stream for any -j" {
	refurb-final -q -j 1 -g "2:$G" -g "3:$L" -i ann.txt -o "$T/a.s"
	refurb-final -q -j 3 -g "2:$G" -g "3:$L" -i ann.txt -o "$T/b.s"
	cmp "$T/a.s" "$T/b.s"
	run -0 od -An -c -N8 "$T/a.s"
	[[ "$output" == *"R   F   B   S   T   R   M 003"* ]] || false
	# frame 1: type 5, flags 1 (critical: a reader that does not know it stops)
	off=$(refurb-dump "$T/a.s" | awk -F'\t' '$3 == "VIEW_GROUPS" { print $2 }')
	run -0 od -An -tu4 -j $((off + 8)) -N8 "$T/a.s"
	[ "$(echo $output)" = "5 1" ]
}

@test "-g: refurb-dump lists the groups and the frame, verifies, makes a sheet; python check passes" {
	refurb-final -q -g "2:$G" -g "3:$L" -i ann.txt -o "$T/g.s"
	run -0 refurb-dump "$T/g.s"
	[ "${lines[1]}" = "# format	version 3" ]
	[ "${lines[2]}" = "# view groups	2 x 48x48, 3 x 24x24 (a sheet shows the first group's views side by side)" ]
	[[ "$output" == *$'\n1\t'*$'\tVIEW_GROUPS\t-\t-\t-\t-\n2\t'*$'\tBATCH\t0\t0\t0\t8'* ]] || false
	run -0 refurb-dump --verify "$T/g.s"
	run -0 refurb-dump --stats "$T/g.s"
	[[ "$output" == *"# end	clean: 15 batches, 120 images, 3 epochs"* ]] || false
	run -0 refurb-dump --batch 0:1 --sheet "$T/sheet.jpg" "$T/g.s"
	[ -s "$T/sheet.jpg" ]
	run -0 /usr/bin/python3 -m refurb_stream check "$T/g.s"
	[[ "${lines[-1]}" == "ok: 3 epochs, 15 batches, 120 images, 0 skipped frames, ended cleanly" ]] || false
}

@test "-g: RefurbDataset yields a list of tensors, samples=True a list per sample, dino_crops DINO's crops; another grouping is another plan" {
	"$PY" -c 'import torch' 2>/dev/null || skip "torch is not installed for $PY"
	refurb-final -q -g "2:$G" -g "3:$L" -i ann.txt -o "$T/g.s"
	refurb-final -q -g "1:$G" -g "4:$L" -i ann.txt -o "$T/h.s"
	run -0 "$PY" - "$T/g.s" "$T/h.s" <<'EOF'
import sys
import torch
from refurb_stream import RefurbDataset, StreamError
from refurb_stream.multicrop import dino_crops
ds = RefurbDataset(sys.argv[1])
for images, labels in ds:
    assert [tuple(t.shape) for t in images] == [(8, 2, 48, 48, 3), (8, 3, 24, 24, 3)]
    assert labels.dtype == torch.int64
    crops = dino_crops(images)
    assert [tuple(c.shape) for c in crops] == [(8, 48, 48, 3)] * 2 + [(8, 24, 24, 3)] * 3
    assert torch.equal(crops[3], images[1][:, 1])
    break
sd = ds.state_dict()
try:
    RefurbDataset(sys.argv[2]).load_state_dict(sd)
    print("other grouping accepted")
except StreamError as e:
    print("other grouping refused:", "another plan" in str(e))
RefurbDataset(sys.argv[1]).load_state_dict(sd)
for image, label in RefurbDataset(sys.argv[1], samples=True):
    print([tuple(t.shape) for t in image], int(label) >= 0)
    break
EOF
	[ "${lines[0]}" = "other grouping refused: True" ]
	[ "${lines[1]}" = "[(2, 48, 48, 3), (3, 24, 24, 3)] True" ]
}

@test "-g: an unreadable sample's place goes to a repeat of every view of another sample" {
	cp -r ds "$T/ds"
	refurb-index -q -o "$T/t.idx" "$T/ds"
	refurb-evict -q -r 3 -s 7 -o "$T/t.evict" "$T/t.idx"
	victim=$(refurb-dump "$T/t.idx" | grep -v '^#' | sed -n 5p)
	head -c 500 "$T/ds/$(cut -f8 <<< "$victim")" > "$T/x"
	mv "$T/x" "$T/ds/$(cut -f8 <<< "$victim")"
	refurb-plan -q -b 8 -e 0-0 "$T/t.evict" |
		refurb-partial -q --max-bad 1 -c "$T/c" -p "$SPEC" "$T/t.idx" 2> /dev/null |
		refurb-final -q -p "$G" --views 2 -o "$T/v.s"
	refurb-plan -q -b 8 -e 0-0 "$T/t.evict" |
		refurb-partial -q --max-bad 1 -c "$T/c2" -p "$SPEC" "$T/t.idx" 2> /dev/null |
		refurb-final -q -g "2:$G" -g "3:$L" -o "$T/g.s"
	/usr/bin/python3 - "$T/v.s" "$T/g.s" <<'EOF'
import sys
import numpy as np
from refurb_stream import open_stream, REPEAT_ID
for path in sys.argv[1:]:
    found = 0
    for b in open_stream(path, verify=True):
        groups = b.images if isinstance(b.images, list) else [b.images]
        for j in np.flatnonzero(b.ids == REPEAT_ID):
            found += 1
            # the first sample of the batch is the one repeated, every view of it
            for g in groups:
                assert (g[j] == g[0]).all(), path
    assert found == 1, (path, found)
EOF
}

@test "-g: bad groups are usage errors that say what to give" {
	run refurb-final -q -g "2:$G" -p "$L" -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: -g (--view-group) names every view and its pipeline: give -g for every group, without -p or --views"
	run refurb-final -q -g "2:$G" --views 2 -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: -g (--view-group) names every view"
	run refurb-final -q -g "$G" -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: --view-group 'rrcrop=48:scale=0.4-1,flip': give K:SPEC (K views, 1 to 64, running SPEC) or K:SPEC1;...;SPECK"
	run refurb-final -q -g "0:$G" -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: --view-group '0:"
	run refurb-final -q -g "3:$G;$G2" -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: --view-group '3:rrcrop=48:scale=0.4-1,flip;rrcrop=48:s...': 2 specs for 3 views (give one spec for all K views, or K specs separated by ';')"
	run refurb-final -q -g "2:$G" -g "2:$G;$L" -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: view 3's pipeline makes 24x24x3 images, view 2's (the first of its --view-group) 48x48x3: the views of a group have one size"
	run refurb-final -q -g "2:$G,normalize" -g "3:$L" -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: view 2's pipeline does not end as view 0's (the same normalize, or none, in every view)"
	run refurb-final -q -g 1:$G -g 1:$L -g 1:$G -g 1:$L -g 1:$G -g 1:$L -g 1:$G -g 1:$L -g 1:$G -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: more than 8 view groups (-g)"
	run refurb-final -q -g "40:$G" -g "30:$L" -i ann.txt -o "$T/x.s"
	expect_fail 2 "refurb-final: more than 64 views in all (-g)"
	[ ! -s "$T/x.s" ]
}

@test "-g through launch(): final as refurb-final's arguments, a list of arrays per batch" {
	run -0 env RANK=0 WORLD_SIZE=1 "$PY" - "$BATS_FILE_TMPDIR/train.idx" "$T/lc" "$G" "$L" <<'PY'
import sys
from refurb_stream import launch
from refurb_stream.multicrop import final_args
idx, cache, g, l = sys.argv[1:]
args = final_args([g, g, l, l, l])
print(" ".join(args))
n = 0
with launch(idx, cache, "resize=64", args, reuse=2, epochs=2, batch_size=8, seed=7) as chain:
    for images, labels, ids, epoch, step in chain:
        assert [a.shape[1:] for a in images] == [(2, 48, 48, 3), (3, 24, 24, 3)], images
        n += len(ids)
print(n)
PY
	[ "${lines[0]}" = "-g 2:$G -g 3:$L" ]
	[ "${lines[1]}" = 80 ]
}

@test "-g: the views of every group are made from one cached record: a partial pipeline that draws is refused, naming its layers; --allow-shared-draws runs it" {
	refurb-partial -q -c "$T/c" -p 'resize=64,flip,colorjitter=0.4' train.idx < plan.txt > "$T/ann.txt"
	run refurb-final -q -g "2:$G" -g "3:$L" -i "$T/ann.txt" -o "$T/x.s"
	expect_fail 2 "refurb-final: 5 views of every sample are made from one cached record, whose partial pipeline 'resize=64:max_size=0:interp=bilinear,flip=p=0.5,colorjitter=brightness=0.6-1.4:contrast=1-1:saturation=1-1:hue=0-0' has layers that draw (flip, colorjitter): the views of a sample would share their draws, where torchvision draws them per view; move them into the final part (refurb-advise --views 5 chooses the split), or give --allow-shared-draws"
	[ ! -s "$T/x.s" ]
	# one view in each of two groups: still two views of one record
	run refurb-final -q -g "1:$G" -g "1:$L" -i "$T/ann.txt" -o "$T/x.s"
	expect_fail 2 "refurb-final: 2 views of every sample are made from one cached record"
	refurb-final -q -g "2:$G" -g "3:$L" --allow-shared-draws -i "$T/ann.txt" -o "$T/g.s"
	refurb-final -q -g "2:$G" -g "3:$L" -i ann.txt -o "$T/h.s"
	[ -s "$T/g.s" ]
}
