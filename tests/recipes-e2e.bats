#!/usr/bin/env bats
# The recipes users train with, end to end on real photos (scripts/
# fetch-photos): SimCLR, MoCo v2, BYOL, DINO's multi-crop in one stream
# and a supervised RandAugment + RandomErasing recipe, each converted,
# run through the chain, its views' statistics compared with
# torchvision's and its view collisions counted
# (scripts/check-recipes.py --collisions, scripts/view_collisions.py).

load helpers
bats_require_minimum_version 1.5.0
set -o pipefail

RECIPES="simclr moco_v2 byol dino supervised_ra_erasing"

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	# six real photos, spread over the set (Debian's kphotoalbum,
	# labelme-examples and opencv-doc pictures, fetched once)
	"$TOP/scripts/fetch-photos" --min-side 224 > all.txt
	mkdir -p photos
	awk 'NR % 17 == 1 && n++ < 6' all.txt | while read -r p; do
		ln -s "$p" "photos/$(basename "$p")"
	done
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
	/usr/bin/python3 "$TOP/scripts/check-recipes.py" --tmp "$T" --dir photos --collisions "$@"
}

@test "SimCLR, MoCo v2, BYOL, DINO multi-crop, RandAugment + RandomErasing: converted, run, like torchvision's, no view collisions" {
	[ "$(ls photos | wc -l)" -eq 6 ]
	local files=()
	for r in $RECIPES; do files+=("$TOP/tests/data/recipes/$r.py"); done
	run -0 check "${files[@]}"
	[ "${lines[-1]}" = "5 recipes, 0 failed (6 photos)" ]
	# DINO's 2 global and 8 local crops: one stream of two view groups,
	# each group compared with torchvision's crops of its size
	[[ "$output" == *"ok   dino                 partial '', refurb-final -g '2:rrcrop=224x224:"*"-g '8:rrcrop=96x96:"* ]] || false
	[[ "$output" == *"ok   dino[0]              (3, 224, 224) float32"* ]] || false
	[[ "$output" == *"ok   dino[1]              (3, 96, 96) float32"* ]] || false
	# every recipe's statistics, and the collisions of every one with views
	[ "$(grep -c "channel means" <<<"$output")" -eq 6 ]
	for r in simclr moco_v2 byol dino; do
		grep -q "^ok   $r  *collisions within: views of one sample identical or mirrored: 0 of [1-9]" <<<"$output"
	done
	[ "$(grep -c "^ok   .*collisions across: epochs of one sample and view identical: 0 of [1-9]" <<<"$output")" -eq 5 ]
	run -1 grep "^FAIL" <<<"$output"
}

@test "a split that leaves only the flip final (MoCo v2 at --views 2): refurb-final refuses it, and run anyway its views collide" {
	run -1 check --cache-upto 6 "$TOP/tests/data/recipes/moco_v2.py"
	[[ "$output" == *"refurb-final -p 'centercrop=224x224,flip=p=0.5,normalize="*"--views 2"* ]] || false
	[[ "$output" == *"FAIL moco_v2              chain: refurb-final: exit 2: refurb-final: 2 views of every sample run the final pipeline"* ]] || false
	run -1 check --cache-upto 6 --allow-view-collisions "$TOP/tests/data/recipes/moco_v2.py"
	# every pair identical or mirrored (about half of each: flip alone)
	[[ "$output" == *"FAIL moco_v2              collisions within: views of one sample identical or mirrored: 12 of 12 pairs (100.0%) ("*" identical), torchvision 0 of 12 (0.0%)"* ]] || false
	[ "${lines[-1]}" = "1 recipes, 1 failed: moco_v2.py (6 photos)" ]
}
