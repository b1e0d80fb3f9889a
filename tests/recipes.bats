#!/usr/bin/env bats
# The recipe zoo (tests/data/recipes/*.py): torchvision recipes as users
# write them, through the converter and the whole chain, against
# torchvision on the same images (scripts/check-recipes.py); and the
# converter's forms the zoo needs (views, presets, --file, ToTensor'd
# thresholds) through python3 -m refurb_stream convert.

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
	# the converter speaks torchvision 0.14 (Debian's), whatever
	# REFURB_TEST_PYTHON the reader tests run on
	PY=/usr/bin/python3
}

check() {
	/usr/bin/python3 "$TOP/scripts/check-recipes.py" --tmp "$T" --dir photos "$@"
}

@test "zoo: every recipe converts and matches torchvision through the chain, or is refused as listed" {
	run -0 check
	[[ "${lines[-1]}" =~ ^([0-9]+)\ recipes,\ 0\ failed ]] || false
	[ "${BASH_REMATCH[1]}" -ge 25 ]
	# each converted recipe ran the chain and was compared
	n_conv=$(grep -c "refurb-final -[pg]" <<<"$output")
	# (a multi-crop recipe is compared group by group: NAME[0], NAME[1])
	n_cmp=$(grep "channel means" <<<"$output" | grep -vc '^[A-Z]*[a-z ]*[a-z0-9_]*\[[1-9]\]')
	[ "$n_conv" -ge 19 ]
	[ "$n_cmp" -eq "$n_conv" ]
	# the deterministic ones pixel by pixel
	[ "$(grep -c '^ok   .*pixels: 1.0000 within one level' <<<"$output")" -ge 2 ]
	# the refusals name the transform (and the argument)
	[[ "$output" == *"ok   lambda               refused"*"Lambda (transforms[1])"* ]] || false
	# DINO's crops of two sizes: two view groups of one stream
	[[ "$output" == *"ok   dino                 partial '', refurb-final -g '2:rrcrop=224x224:"*";rrcrop=224x224:"*"-g '8:rrcrop=96x96:"* ]] || false
	[[ "$output" == *"ok   dino_object_local    partial '', refurb-final -g '2:rrcrop=224x224:"* ]] || false
	[[ "$output" == *"ok   simclr_custom_blur   refused"*"not torchvision's GaussianBlur"* ]] || false
	# the asymmetric views run as one -p per view
	[[ "$output" == *"ok   byol                 partial '', refurb-final -p 'rrcrop"*"solarize=threshold=128:p=0,"*"-p 'rrcrop"*"solarize=threshold=128:p=0.2,"* ]] || false
	[[ "$output" == *"ok   mocov3               partial"*"solarize=threshold=127.5:p=0.2"* ]] || false
}

@test "zoo: distributions match torchvision's (KS) on the fast subset" {
	run -0 check --ks --draws 150 --only o
	[[ "${lines[-1]}" == *" recipes, 0 failed"* ]] || false
	[ "$(grep -c "^ok   .* KS view" <<<"$output")" -eq 6 ]
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

@test "zoo: --dir with a photo refurb-index leaves out (16-bit PNG) skips it by name and compares the others with their own photos" {
	need_pil
	mkdir -p "$T/mixed"
	/usr/bin/python3 - "$T/mixed" photos/*/*.jpg <<'PY'
import sys
import numpy as np
from PIL import Image
for i, p in enumerate(sys.argv[2:6]):
    Image.open(p).convert("RGB").save("%s/%d.png" % (sys.argv[1], i + 1))
# sorts first: every sample id after it would pair with the wrong photo
deep = np.arange(64 * 48, dtype=np.uint16).reshape(48, 64) * 20
Image.fromarray(deep).save("%s/0-deep.png" % sys.argv[1])
PY
	run -0 /usr/bin/python3 "$TOP/scripts/check-recipes.py" --tmp "$T/new/tmp" --dir "$T/mixed" --only eval
	[ "${lines[0]}" = "skip $T/mixed/0-deep.png: 16-bit grayscale PNG (not supported: PIL reads it as I;16, which torchvision's convert(\"RGB\") clips to white); save it with 8 bits (its high bytes) and index it again" ]
	[[ "${lines[-1]}" == "2 recipes, 0 failed (4 photos)" ]] || false
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

# ---- the converter on the zoo's forms (python3 -m refurb_stream convert) ----

@test "convert --views: one -p and --views K for a view repeated, one -p per view otherwise" {
	run -0 "$PY" -m refurb_stream convert --views '[T.Compose([T.RandomResizedCrop(64), T.RandomGrayscale(0.2)])] * 2'
	[ "$output" = "-p rrcrop=64x64:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,grayscale=p=0.2 --views 2" ]
	run -0 "$PY" -m refurb_stream convert --views '[T.Compose([T.RandomResizedCrop(64), T.RandomSolarize(128, p=0)]), T.Compose([T.RandomResizedCrop(64), T.RandomSolarize(128, p=0.2)])]'
	[ "$output" = "-p rrcrop=64x64:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,solarize=threshold=128:p=0 -p rrcrop=64x64:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,solarize=threshold=128:p=0.2" ]
}

@test "convert --views: views of different sizes are view groups (-g K:SPEC), in order" {
	run -0 "$PY" -m refurb_stream convert --views '[T.RandomResizedCrop(224), T.Compose([T.RandomResizedCrop(224), T.RandomGrayscale(0.2)])] + [T.RandomResizedCrop(96)] * 3'
	[ "$output" = "-g '2:rrcrop=224x224:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear;rrcrop=224x224:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,grayscale=p=0.2' -g 3:rrcrop=96x96:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear" ]
	run "$PY" -m refurb_stream convert --views '[T.RandomResizedCrop(8), T.RandomResizedCrop(9)] * 5'
	expect_fail 1 "refurb_stream convert: views: 10 groups of views of one size (refurb-final takes at most 8): order the views by size"
}

@test "convert --views: iBOT's DataAugmentationiBOT: global_transfo2 global_crops_number - 1 times; no local_transfo without local crops" {
	cat > "$T/ibot.py" <<'PY'
import torchvision.transforms as T
class DataAugmentationiBOT(object):
    def __init__(self, global_crops_number, local_crops_number):
        self.global_crops_number = global_crops_number
        self.global_transfo1 = T.Compose([T.RandomResizedCrop(64, scale=(0.4, 1)), T.RandomHorizontalFlip()])
        self.global_transfo2 = T.Compose([T.RandomResizedCrop(64, scale=(0.4, 1)), T.RandomSolarize(128, p=0.2)])
        self.local_crops_number = local_crops_number
        if local_crops_number > 0:
            self.local_transfo = T.RandomResizedCrop(32, scale=(0.05, 0.4))
    def __call__(self, image):
        crops = [self.global_transfo1(image)]
        crops += [self.global_transfo2(image) for _ in range(self.global_crops_number - 1)]
        return crops + [self.local_transfo(image) for _ in range(self.local_crops_number)]
views = DataAugmentationiBOT(3, 0)
PY
	run -0 "$PY" -m refurb_stream convert -q --file "$T/ibot.py"
	[[ "$output" == "-p rrcrop=64x64:"*",flip=p=0.5 -p rrcrop=64x64:"*",solarize=threshold=128:p=0.2 -p rrcrop=64x64:"*",solarize=threshold=128:p=0.2" ]] || false
	sed -i 's/^views = .*/views = DataAugmentationiBOT(2, 4)/' "$T/ibot.py"
	run -0 "$PY" -m refurb_stream convert -q --file "$T/ibot.py"
	[[ "$output" == "-g '2:rrcrop=64x64:"*"-g 4:rrcrop=32x32:"* ]] || false
}

@test "convert --views: DINOv2's DataAugmentationDINO: its geometric augmentations lead each view" {
	cat > "$T/dinov2.py" <<'PY'
import torchvision.transforms as T
class DataAugmentationDINO(object):
    def __init__(self, local_crops_number):
        self.local_crops_number = local_crops_number
        self.geometric_augmentation_global = T.Compose([T.RandomResizedCrop(64, scale=(0.32, 1)), T.RandomHorizontalFlip()])
        self.geometric_augmentation_local = T.Compose([T.RandomResizedCrop(32, scale=(0.05, 0.32)), T.RandomHorizontalFlip()])
        self.global_transfo1 = T.RandomGrayscale(0.2)
        self.global_transfo2 = T.RandomSolarize(128, p=0.2)
        self.local_transfo = T.RandomGrayscale(0.2)
    def __call__(self, image):
        g = self.geometric_augmentation_global
        return {"global_crops": [self.global_transfo1(g(image)), self.global_transfo2(g(image))],
                "local_crops": [self.local_transfo(self.geometric_augmentation_local(image))
                                for _ in range(self.local_crops_number)]}
views = DataAugmentationDINO(3)
PY
	run -0 "$PY" -m refurb_stream convert -q --file "$T/dinov2.py"
	[[ "$output" == "-g '2:rrcrop=64x64:scale=0.32-1:"*",flip=p=0.5,grayscale=p=0.2;rrcrop=64x64:"*",flip=p=0.5,solarize=threshold=128:p=0.2' -g 3:rrcrop=32x32:scale=0.05-0.32:"*",flip=p=0.5,grayscale=p=0.2" ]] || false
}

@test "convert --views: MoCo v3's TwoCropsTransform(base_transform1, base_transform2): one -p per view" {
	cat > "$T/mocov3.py" <<'PY'
import torchvision.transforms as T
class TwoCropsTransform:
    def __init__(self, base_transform1, base_transform2):
        self.base_transform1 = base_transform1
        self.base_transform2 = base_transform2
    def __call__(self, x):
        return [self.base_transform1(x), self.base_transform2(x)]
views = TwoCropsTransform(T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip()]),
                          T.Compose([T.RandomResizedCrop(32), T.RandomSolarize(128, p=0.2)]))
PY
	run -0 "$PY" -m refurb_stream convert -q --file "$T/mocov3.py"
	[[ "$output" == "-p rrcrop=32x32:"*",flip=p=0.5 -p rrcrop=32x32:"*",solarize=threshold=128:p=0.2" ]] || false
}

@test "convert --views: views of different normalize are refused, naming the view" {
	run "$PY" -m refurb_stream convert --views '[T.Compose([T.CenterCrop(8), T.ToTensor()]), T.Compose([T.CenterCrop(8), T.ToTensor(), T.Normalize(0.5, 0.2)])]'
	expect_fail 1 "refurb_stream convert: views[1] ends in normalize=mean=0.5:std=0.2, views[0] in normalize=mean=0:std=1"
	run "$PY" -m refurb_stream convert --views '[T.CenterCrop(8), T.Lambda(lambda x: x)]'
	expect_fail 1 "refurb_stream convert: views[1]: Lambda (transforms): refurb has no filter for Lambda"
	run "$PY" -m refurb_stream convert --views 'T.CenterCrop(8)'
	expect_fail 1 "refurb_stream convert: views: CenterCrop is not a list of transforms"
}

@test "convert: after ToTensor, thresholds and fills are on [0, 1] and uint8-only ops are refused" {
	run -0 "$PY" -m refurb_stream convert 'T.Compose([T.CenterCrop(8), T.ToTensor(), T.RandomSolarize(0.5, p=0.2), T.RandomRotation(10, fill=1.0)])'
	[ "$output" = "centercrop=8x8,solarize=threshold=127.5:p=0.2,rotation=degrees=-10-10:interp=nearest:fill=255,normalize=mean=0:std=1" ]
	run "$PY" -m refurb_stream convert 'T.Compose([T.ToTensor(), T.RandomEqualize()])'
	expect_fail 1 "refurb_stream convert: RandomEqualize (transforms[1]): torchvision refuses a float tensor here (it needs uint8: put it before ToTensor)"
	run "$PY" -m refurb_stream convert 'T.Compose([T.ToTensor(), T.RandAugment()])'
	expect_fail 1 "refurb_stream convert: RandAugment (transforms[1]): torchvision refuses a float tensor here"
}

@test "convert: a preset holding a Compose is read, a look-alike class is refused" {
	cat > "$T/recipe.py" <<'PY'
import sys
from torchvision import transforms as T
sys.path.insert(0, sys.argv[1])
from refurb_stream import pipeline_from_torchvision, ConvertError

class Preset:
    def __init__(self):
        self.transforms = T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(0.3)])
    def __call__(self, img):
        return self.transforms(img)

class GaussianBlur:
    def __init__(self, kernel_size):
        self.kernel_size = kernel_size
    def __call__(self, img):
        return img

print(pipeline_from_torchvision(Preset()))
try:
    pipeline_from_torchvision([T.CenterCrop(8), GaussianBlur(9)])
except ConvertError as e:
    print(e)
PY
	run -0 "$PY" "$T/recipe.py" "$TOP/python"
	[ "${lines[0]}" = "rrcrop=32x32:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,flip=p=0.3" ]
	[ "${lines[1]}" = "GaussianBlur (transforms[1]): not torchvision's GaussianBlur (a class of module __main__): refurb cannot know what its __call__ does; use torchvision's transform" ]
}

@test "convert --file: a recipe file's transform or views" {
	run -0 "$PY" -m refurb_stream convert --file "$TOP/tests/data/recipes/imagenet_plain.py"
	[ "$output" = "rrcrop=224x224:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,flip=p=0.5,normalize=mean=0.485/0.456/0.406:std=0.229/0.224/0.225" ]
	# a preset imported from the file's own directory
	run -0 "$PY" -m refurb_stream convert --file "$TOP/tests/data/recipes/presets_eval.py"
	[ "$output" = "resize=232:interp=bicubic,centercrop=224x224,normalize=mean=0.485/0.456/0.406:std=0.229/0.224/0.225" ]
	run -0 "$PY" -m refurb_stream convert --file "$TOP/tests/data/recipes/moco_v1.py"
	[[ "$output" == "-p rrcrop=224x224:scale=0.2-1:"*" --views 2" ]] || false
	run "$PY" -m refurb_stream convert --file "$TOP/tests/data/recipes/lambda.py"
	expect_fail 1 "refurb_stream convert: Lambda (transforms[1]): refurb has no filter for Lambda"
}

@test "convert --file: a missing file or one without transform or views is a usage error" {
	run "$PY" -m refurb_stream convert --file "$T/none.py"
	expect_fail 2 "refurb_stream convert: cannot run $T/none.py: FileNotFoundError"
	echo 'x = 1' > "$T/empty.py"
	run "$PY" -m refurb_stream convert --file "$T/empty.py"
	expect_fail 2 "refurb_stream convert: cannot run $T/empty.py: ValueError: $T/empty.py defines neither transform nor views"
	run "$PY" -m refurb_stream convert --file
	expect_fail 2 "usage: python3 -m refurb_stream convert EXPRESSION"
}
