#!/usr/bin/env bats
# The recipe zoo (tests/data/recipes/*.py): torchvision recipes as users
# write them, through the converter and the whole chain, against
# torchvision on the same images (scripts/check-recipes.py).

load helpers
bats_require_minimum_version 1.5.0
set -o pipefail

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	# photo-sized images (10% of them grayscale JPEGs)
	"$TOP/scripts/make-dataset" -n 10 -k 2 --min 160 --max 400 -s 3 photos >/dev/null
}

setup() {
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	/usr/bin/python3 -c 'import torchvision' 2>/dev/null ||
		skip "torchvision is not installed for /usr/bin/python3"
	export PYTHONPATH="$TOP/python"
	export BUILD="${REFURB_BUILD:-$TOP/build}"
}

check() {
	/usr/bin/python3 "$TOP/scripts/check-recipes.py" --tmp "$T" --dir photos "$@"
}

@test "zoo: every recipe converts and matches torchvision through the chain, or is refused as listed" {
	run -0 check
	[[ "${lines[-1]}" =~ ^([0-9]+)\ recipes,\ 0\ failed ]] || false
	[ "${BASH_REMATCH[1]}" -ge 25 ]
	# each converted recipe ran the chain and was compared
	n_conv=$(grep -c "refurb-final -p" <<<"$output")
	n_cmp=$(grep -c "channel means" <<<"$output")
	[ "$n_conv" -ge 19 ]
	[ "$n_cmp" -eq "$n_conv" ]
	# the deterministic ones pixel by pixel
	[ "$(grep -c '^ok   .*pixels: 1.0000 within one level' <<<"$output")" -ge 2 ]
	# the refusals name the transform (and the argument)
	[[ "$output" == *"ok   lambda               refused"*"Lambda (transforms[1])"* ]] || false
	[[ "$output" == *"ok   dino                 refused"*"views[2] makes 96x96 images, views[0] 224x224"* ]] || false
	[[ "$output" == *"ok   simclr_custom_blur   refused"*"not torchvision's GaussianBlur"* ]] || false
	# the asymmetric views run as one -p per view
	[[ "$output" == *"ok   byol                 partial '', refurb-final -p 'rrcrop"*"solarize=threshold=128:p=0,"*"-p 'rrcrop"*"solarize=threshold=128:p=0.2,"* ]] || false
	[[ "$output" == *"ok   mocov3               partial"*"solarize=threshold=127.5:p=0.2"* ]] || false
}

@test "zoo: distributions match torchvision's (KS) on the fast subset" {
	run -0 check --ks --draws 150 --only o
	[[ "${lines[-1]}" == *" recipes, 0 failed"* ]] || false
	[ "$(grep -c "^ok   .* KS view" <<<"$output")" -eq 5 ]
	[[ "$output" == *"ok   byol                 KS view 1:"* ]] || false
	run -0 check --ks --draws 150 --only imagenet_plain
	[[ "$output" == *"ok   imagenet_plain       KS view 0:"* ]] || false
}

@test "zoo: PNG photos (RGB, RGBA, palette, gray) give torchvision's pixels too" {
	need_pil
	mkdir -p "$T/png"
	/usr/bin/python3 - "$T/png" photos/*/*.jpg <<'PY'
import sys
from PIL import Image
for i, p in enumerate(sys.argv[2:8]):
    im = Image.open(p)
    if i % 3 == 1:
        im = im.convert("RGBA")
        im.putalpha(100)
    elif i % 3 == 2:
        im = im.convert("RGB").convert("P", palette=Image.ADAPTIVE)
    im.save("%s/%d.png" % (sys.argv[1], i))
PY
	run -0 /usr/bin/python3 "$TOP/scripts/check-recipes.py" --tmp "$T" --dir "$T/png" --only eval
	[[ "${lines[-1]}" == "2 recipes, 0 failed (6 photos)" ]] || false
	[ "$(grep -c '^ok   .*pixels: 1.0000 within one level' <<<"$output")" -eq 2 ]
}

@test "zoo: a recipe converted where a refusal is listed fails the check" {
	cat > "$T/wrong.py" <<'PY'
from torchvision import transforms
transform = transforms.Compose([transforms.RandomResizedCrop(32), transforms.ToTensor()])
REFUSED = ("RandomResizedCrop",)
PY
	run -1 check "$T/wrong.py"
	[[ "$output" == *"FAIL wrong "*"converted, but REFUSED ('RandomResizedCrop',) expected"* ]] || false
	[[ "${lines[-1]}" == "1 recipes, 1 failed: wrong.py (10 photos)" ]] || false
}

@test "zoo: a refusal that does not name what was listed fails the check" {
	cat > "$T/named.py" <<'PY'
from torchvision import transforms
transform = transforms.Compose([transforms.Lambda(lambda x: x)])
REFUSED = ("Lambda", "transforms[7]")
PY
	run -1 check "$T/named.py"
	[[ "$output" == *"FAIL named "*"missing ['transforms[7]']"* ]] || false
}

@test "zoo: a recipe refurb cannot express, not listed as refused, fails the check" {
	cat > "$T/fc.py" <<'PY'
from torchvision import transforms
transform = transforms.Compose([transforms.TenCrop(8)])
PY
	run -1 check "$T/fc.py"
	[[ "$output" == *"FAIL fc "*"refused: TenCrop (transforms[0]): refurb has no filter for TenCrop"* ]] || false
}

@test "zoo: a file with neither transform nor views is an error" {
	echo 'x = 1' > "$T/none.py"
	run check "$T/none.py"
	[ "$status" -ne 0 ]
	[[ "$output" == *"none.py: defines neither transform nor views"* ]] || false
}
