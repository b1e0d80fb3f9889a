#!/usr/bin/env bats
# PNG input: indexed by content, other formats refused by name, the
# pixels torchvision's loader gives (PIL's convert("RGB")) through the
# whole chain.

load helpers
bats_require_minimum_version 1.5.0
set -o pipefail

setup() {
	T="$BATS_TEST_TMPDIR"
	need_numpy
	export PYTHONPATH="$TOP/python"
	mkdir -p "$T/ds/a" "$T/ds/b"
	# every kind of tests/data/png, named as JPEGs too: content decides
	for k in rgb8 gray8 la8 rgba16 pal4trns; do
		cp "$TOP/tests/data/png/$k.png" "$T/ds/a/$k.png"
	done
	for k in rgb16 gray4 pal8; do
		cp "$TOP/tests/data/png/$k.png" "$T/ds/b/$k.jpg"
	done
	cp "$(ls "$TOP"/tests/data/jpeg/*.jpg | grep -v bomb | head -n 1)" "$T/ds/b/photo.jpg"
}

@test "refurb-index indexes PNGs by content, with their pixel sizes" {
	run -0 refurb-index -q -o "$T/t.idx" "$T/ds"
	run -0 refurb-dump "$T/t.idx"
	[[ "$output" == *"	37	23	1	a/gray8.png"* ]] || false
	[[ "$output" == *"	37	23	3	a/rgba16.png"* ]] || false
	[[ "$output" == *"	37	23	1	b/gray4.jpg"* ]] || false
	[ "$(grep -c '	37	23	' <<< "$output")" -eq 8 ]
}

@test "other formats and 16-bit gray PNGs are refused, named" {
	cp "$TOP/tests/data/png/gray16.png" "$T/ds/a/deep.png"
	printf 'GIF89a\001\000\001\000\000\000\000;' > "$T/ds/a/anim.jpg"
	printf 'BM%060d' 0 > "$T/ds/b/old.png"
	run -0 refurb-index -o "$T/t.idx" "$T/ds"
	[[ "$output" == *"refurb-index: a/anim.jpg: GIF image (refurb reads JPEG and PNG)"* ]] || false
	[[ "$output" == *"refurb-index: b/old.png: BMP image (refurb reads JPEG and PNG)"* ]] || false
	# why (torchvision's loader would train on a white image) and what to do
	[[ "$output" == *"refurb-index: a/deep.png: 16-bit grayscale PNG (not supported: PIL reads it as I;16, which torchvision's convert(\"RGB\") clips to white); save it with 8 bits (its high bytes) and index it again"* ]] || false
	[[ "$output" == *"indexed 9 of 12 files"* ]] || false
	run refurb-index -q --strict -o "$T/s.idx" "$T/ds"
	[ "$status" -eq 1 ]
	[[ "$output" == *"GIF image"* || "$output" == *"BMP image"* || "$output" == *"16-bit"* ]] || false
}

@test "the chain gives PIL's pixels for every kind of PNG" {
	need_pil
	refurb-index -q -o "$T/t.idx" "$T/ds"
	refurb-evict -q -r 1 -o "$T/t.evict" "$T/t.idx"
	refurb-plan -q -b 9 -e 0-0 "$T/t.evict" |
		refurb-partial -q -c "$T/cache" -p 'centercrop=23x37' "$T/t.idx" |
		refurb-final -q -p 'centercrop=23x37' -o "$T/s"
	/usr/bin/python3 - "$T/s" "$T/t.idx" "$T/ds" <<'EOF'
import subprocess, sys
import numpy as np
from PIL import Image
from refurb_stream import open_stream
paths = [l.split("\t")[-1] for l in subprocess.run(["refurb-dump", sys.argv[2]],
         capture_output=True, text=True, check=True).stdout.splitlines() if not l.startswith("#")]
seen = 0
for b in open_stream(sys.argv[1], verify=True):
    for img, i in zip(b.images, b.ids):
        ref = np.asarray(Image.open(sys.argv[3] + "/" + paths[i]).convert("RGB"))
        if "photo" in paths[i]:
            continue
        assert (img == ref).all(), paths[i]
        seen += 1
assert seen == 8, seen
EOF
}

@test "refurb-dump --preview reads a PNG" {
	run -0 refurb-dump --preview 'resize=32,gaussblur=3,rotation=10' -n 2 -o "$T/sheet.jpg" "$T/ds/a/pal4trns.png"
	[ -s "$T/sheet.jpg" ]
}
