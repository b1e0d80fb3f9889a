#!/usr/bin/env bats
# python3 -m refurb_stream convert on torchvision.transforms.v2 and on the
# v1 transforms of a current torchvision, run on REFURB_TEST_PYTHON
# (tests/helpers.bash; CI: build/venv/torch/bin/python from
# scripts/deps --torch-venv).  The pixel tests run refurb-final on the
# converted spec and compare its stream with torchvision's output for the
# same recipe on the same images (tests/tools/compare_torchvision.py):
# random ranges collapsed, >= 99% of values within one pixel step.

load helpers
bats_require_minimum_version 1.5.0
set -o pipefail

MEAN='[0.485, 0.456, 0.406], [0.229, 0.224, 0.225]'

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	# asked once: importing torchvision takes seconds
	"$PY" -c 'from torchvision.transforms import v2; from torchvision import tv_tensors' 2>/dev/null ||
		echo "$PY has no torchvision >= 0.16 (transforms.v2): run scripts/deps --torch-venv and REFURB_TEST_PYTHON=build/venv/torch/bin/python" > skip.txt
	"$TOP/scripts/make-dataset" -n 8 -k 2 --min 64 --max 160 ds > /dev/null
	refurb-index -q -o train.idx ds
	refurb-evict -q -r 1 -s 7 -o train.evict train.idx
	refurb-plan -q -b 4 -e 0-0 train.evict > plan.txt
	# an empty partial pipeline: the final one does the whole recipe
	refurb-partial -q -c cache -p '' train.idx < plan.txt > ann.txt
	refurb-dump train.idx > index.tsv
}

setup() {
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	export PYTHONPATH="$TOP/python"
	[ ! -e skip.txt ] || skip "$(cat skip.txt)"
}

# convert_lines: each line of stdin is an expression; prints "ok SPEC" or
# "refused MESSAGE" (the message `refurb_stream convert` prints) per line,
# in one Python (importing torch takes seconds)
convert_lines() {
	run -0 "$PY" -W ignore -c '
import sys
from refurb_stream.convert import ConvertError, _namespace, pipeline_from_torchvision
ns = _namespace()
for line in sys.stdin:
    try:
        print("ok " + pipeline_from_torchvision(eval(line, ns)))
    except ConvertError as e:
        print("refused refurb_stream convert: %s" % e)
'
}

# same_as_torchvision EXPR: refurb-final on EXPR's spec gives torchvision's pixels
same_as_torchvision() {
	run "$PY" -W ignore "$TOP/tests/tools/compare_torchvision.py" ann.txt index.tsv "$T/s.s" "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" == "8 samples checked"* ]] || false
}

@test "convert v2: the issue's recipe (ToImage, ToDtype, Normalize)" {
	run -0 "$PY" -W ignore -m refurb_stream convert "v2.Compose([v2.RandomResizedCrop(224), v2.RandomHorizontalFlip(), v2.RandAugment(), v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize($MEAN)])"
	[ "$output" = "rrcrop=224x224:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,flip=p=0.5,randaug=n=2:m=9:bins=31:interp=nearest,normalize=mean=0.485/0.456/0.406:std=0.229/0.224/0.225" ]
}

@test "convert v2: every v1 transform the converter knows gives the same spec in v2" {
	run "$PY" -W ignore - <<'EOF'
from refurb_stream import pipeline_from_torchvision as conv
import torchvision.transforms as T
from torchvision.transforms import v2, InterpolationMode as IM
cases = [
 "M.RandomResizedCrop(96, scale=(0.2, 1), ratio=(3/4, 4/3), interpolation=IM.BICUBIC)",
 "M.RandomHorizontalFlip()", "M.RandomVerticalFlip(0.3)",
 "M.RandomApply([M.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8)", "M.RandomGrayscale(p=0.2)",
 "M.GaussianBlur(9, sigma=(0.1, 2.0))", "M.GaussianBlur((3, 5), sigma=1.5)",
 "M.RandomSolarize(100)", "M.RandomPosterize(4, p=0.2)", "M.RandomEqualize()",
 "M.RandomAutocontrast()", "M.RandomAdjustSharpness(2)", "M.RandomInvert()",
 "M.RandomRotation((-5, 10), fill=(1, 2, 3))", "M.RandomRotation(10, interpolation=IM.BILINEAR)",
 "M.RandomAffine(10, translate=(0.1, 0.2), scale=(0.9, 1.1), shear=(-5, 5, -3, 3), fill=7)",
 "M.RandomAffine(0, shear=5)",
 "M.RandomPerspective(0.3, p=0.4, interpolation=IM.BICUBIC)",
 "M.RandomApply([M.RandAugment(), M.RandomInvert()], p=0.5)",
 "M.CenterCrop(32)", "M.CenterCrop((32, 48))", "M.Resize(256)", "M.Resize((32, 48))",
 "M.Resize(100, max_size=200)", "M.RandomCrop(32, padding=(1, 2, 3, 4), fill=7, pad_if_needed=True)",
 "M.AutoAugment()", "M.TrivialAugmentWide(fill=[1, 2, 3])", "M.RandAugment(3, 5, 11, fill=[1, 2, 3])",
 "M.Grayscale(3)", "M.Grayscale()",
 "M.Compose([M.PILToTensor(), M.RandomErasing(0.25, value=(1, 2, 3))])",
 "M.Compose([M.ToTensor(), M.Normalize((0.5, 0.4, 0.3), (0.2, 0.2, 0.2)), M.RandomErasing(0.25), M.RandomErasing(1, value='random')])",
]
for c in cases:
    one, two = (conv(eval(c, dict(M=M, IM=IM))) for M in (T, v2))
    print("same" if one == two else "DIFFERENT", c, one, two)
EOF
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 32 ]
	run ! grep -v '^same ' <<< "$output"
}

@test "convert v2: RandomCrop's padding in v2's order is torchvision's (left, top, right, bottom)" {
	convert_lines <<'EOF'
v2.RandomCrop(32, padding=(1, 2, 3, 4))
v2.RandomCrop(32, padding=(1, 2))
EOF
	[ "${lines[0]}" = "ok crop=32x32:pad=1/2/3/4" ]
	[ "${lines[1]}" = "ok crop=32x32:pad=1/2/1/2" ]
}

@test "convert v2: ToDtype scale=True is ToTensor; scale=False maps Normalize to /255" {
	convert_lines <<'EOF'
[v2.ToImage(), v2.ToDtype(torch.float32, scale=True)]
[v2.ToImage(), v2.ToDtype(torch.float32)]
[v2.ToImage(), v2.ToDtype(torch.float32), v2.Normalize([127.5], [51])]
[v2.PILToTensor(), v2.ToPureTensor(), v2.ConvertImageDtype(torch.float32), v2.Normalize([0.5], [0.5])]
[v2.ToImage(), v2.ToDtype({tv_tensors.Image: torch.float32, 'others': None}, scale=True)]
[v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.ToDtype(torch.uint8, scale=True), v2.CenterCrop(4)]
[v2.ToImage(), v2.ToDtype(torch.float32), v2.ToDtype(torch.uint8), v2.CenterCrop(4)]
EOF
	[ "${lines[0]}" = "ok normalize=mean=0:std=1" ]
	[ "${lines[1]}" = "ok normalize=mean=0:std=0.00392156862745098" ]
	[ "${lines[2]}" = "ok normalize=mean=0.5:std=0.2" ]
	[ "${lines[3]}" = "ok normalize=mean=0.5:std=0.5" ]
	[ "${lines[4]}" = "ok normalize=mean=0:std=1" ]
	# back to uint8: every pixel value kept
	[ "${lines[5]}" = "ok centercrop=4x4" ]
	[ "${lines[6]}" = "ok centercrop=4x4" ]
}

@test "convert v2: ToDtype, PILToTensor and Normalize that refurb cannot express are named" {
	convert_lines <<'EOF'
[v2.ToImage(), v2.ToDtype(torch.float64, scale=True)]
[v2.ToImage(), v2.ToDtype(torch.float32), v2.ToDtype(torch.uint8, scale=True)]
[v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.5], [0.5])]
[v2.ToImage(), T.PILToTensor()]
[v2.ToImage(), v2.PILToTensor(), v2.CenterCrop(4)]
EOF
	[[ "${lines[0]}" == "refused refurb_stream convert: ToDtype (transforms[1]): dtype float64: refurb hands over uint8 or float32"* ]] || false
	[[ "${lines[1]}" == "refused refurb_stream convert: ToDtype (transforms[2]): uint8 with scale=True from a 0..255 float tensor"* ]] || false
	# ToDtype passes a PIL image through: Normalize then has no float tensor
	[ "${lines[2]}" = "refused refurb_stream convert: Normalize (transforms[1]): needs a float tensor (ToTensor, or ToImage then ToDtype(torch.float32, scale=True), first)" ]
	# v1's PILToTensor refuses a tensor, v2's passes it through
	[ "${lines[3]}" = "refused refurb_stream convert: PILToTensor (transforms[1]): needs a PIL image (the image is already a tensor)" ]
	[ "${lines[4]}" = "ok centercrop=4x4" ]
}

@test "convert v2: a fill given per type is the image's own at that point" {
	convert_lines <<'EOF'
[v2.RandomRotation(10, fill={tv_tensors.Image: 127, 'others': 9}), v2.ToImage(), v2.RandomRotation(10, fill={tv_tensors.Image: 127, 'others': 9})]
[v2.ToImage(), v2.RandAugment(fill={tv_tensors.Mask: 255}), v2.RandomAffine(5, fill={tv_tensors.Mask: 255})]
[v2.ToImage(), v2.ToPureTensor(), v2.RandomRotation(10, fill={torch.Tensor: (1, 2, 3), tv_tensors.Image: 5})]
[v2.RandomRotation(10, fill={'others': 0.5})]
EOF
	[ "${lines[0]}" = "ok rotation=degrees=-10-10:interp=nearest:fill=9,rotation=degrees=-10-10:interp=nearest:fill=127" ]
	# no entry for the image and no "others": torchvision fills with None (0)
	[ "${lines[1]}" = "ok randaug=n=2:m=9:bins=31:interp=nearest,affine=degrees=-5-5:interp=nearest:fill=0" ]
	[ "${lines[2]}" = "ok rotation=degrees=-10-10:interp=nearest:fill=1/2/3" ]
	[[ "${lines[3]}" == "refused refurb_stream convert: RandomRotation (transforms[0]): fill 0.5 must be 1 or 3 integers 0..255" ]] || false
}

@test "convert v2: RandomErasing works on a PIL image in v2, value='random' after Normalize" {
	convert_lines <<'EOF'
[v2.RandomErasing(1, value=(1, 2, 3))]
[T.RandomErasing(1)]
[v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.5], [0.5]), v2.RandomErasing(0.25, value='random')]
[v2.RandomErasing(1, value='random')]
[v2.ToImage(), v2.ToDtype(torch.float32), v2.RandomErasing(1, value=7)]
EOF
	[ "${lines[0]}" = "ok erasing=p=1:scale=0.02-0.33:ratio=0.3-3.3:value=1/2/3" ]
	[[ "${lines[1]}" == "refused refurb_stream convert: RandomErasing (transforms[0]): needs a tensor"* ]] || false
	[ "${lines[2]}" = "ok normalize=mean=0.5:std=0.5,erasing=p=0.25:scale=0.02-0.33:ratio=0.3-3.3:value=random" ]
	# (v2 erases a PIL image as its uint8 tensor: the normal values cast)
	[[ "${lines[3]}" == "refused refurb_stream convert: RandomErasing (transforms[0]): value='random' on a uint8 tensor"* ]] || false
	[ "${lines[4]}" = "ok erasing=p=1:scale=0.02-0.33:ratio=0.3-3.3:value=7,normalize=mean=0:std=0.00392156862745098" ]
}

@test "convert v2: resizing a tensor: antialias=False and nearest are refused, True accepted" {
	convert_lines <<'EOF'
[v2.ToImage(), v2.Resize(40, antialias=False)]
[v2.ToImage(), v2.RandomResizedCrop(40, interpolation=InterpolationMode.NEAREST)]
[v2.ToImage(), v2.Resize(40, antialias=True)]
[v2.Resize(40, antialias=False), T.Resize(40, antialias=False)]
[v2.Resize(size=None, max_size=100)]
EOF
	[[ "${lines[0]}" == "refused refurb_stream convert: Resize (transforms[1]): antialias=False on a tensor is torch's interpolation without antialiasing, not refurb's resize (PIL's, antialiased): use antialias=True; put it before ToImage/PILToTensor/ToTensor"* ]] || false
	[[ "${lines[1]}" == "refused refurb_stream convert: RandomResizedCrop (transforms[1]): interpolation nearest on a tensor picks other source pixels than PIL's nearest"* ]] || false
	[ "${lines[2]}" = "ok resize=40:interp=bilinear" ]
	# on a PIL image torchvision ignores antialias (PIL always antialiases)
	[ "${lines[3]}" = "ok resize=40:interp=bilinear,resize=40:interp=bilinear" ]
	[[ "${lines[4]}" == "refused refurb_stream convert: Resize (transforms[0]): size=None (the longer side to max_size): refurb resizes by the shorter side or to H x W: use Resize(N) (the shorter side N), Resize(N, max_size=M) (the longer one at most M) or Resize((H, W))" ]] || false
}

@test "convert v2: tensor kernels that differ from PIL's are refused with the reason" {
	convert_lines <<'EOF'
[v2.ToImage(), v2.RandomApply([v2.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8)]
[v2.ToImage(), v2.ColorJitter(0.4, 0.4, 0.4)]
[v2.ToImage(), v2.RandomPerspective()]
[T.PILToTensor(), T.RandomRotation(5, interpolation=InterpolationMode.BICUBIC)]
EOF
	[[ "${lines[0]}" == "refused refurb_stream convert: ColorJitter (transforms[1].transforms[0]): hue=(-0.1, 0.1) on a tensor is torchvision's float HSV conversion"* ]] || false
	[ "${lines[1]}" = "ok colorjitter=brightness=0.6-1.4:contrast=0.6-1.4:saturation=0.6-1.4" ]
	[[ "${lines[2]}" == "refused refurb_stream convert: RandomPerspective (transforms[1]): on a tensor torchvision's perspective samples other pixels"* ]] || false
	[[ "${lines[3]}" == "refused refurb_stream convert: RandomRotation (transforms[1]): interpolation bicubic on a tensor (torchvision refuses it)"* ]] || false
}

@test "convert v2: CutMix and MixUp are for the batch, detection transforms are named" {
	run -1 "$PY" -W ignore -m refurb_stream convert "[v2.RandomResizedCrop(32), v2.CutMix(num_classes=10)]"
	expect_fail 1 "refurb_stream convert: CutMix (transforms[1]): CutMix mixes the images and labels of a batch: apply it to each batch in the training loop"
	convert_lines <<'EOF'
v2.Compose([v2.MixUp(num_classes=10)])
[v2.ToImage(), v2.SanitizeBoundingBoxes()]
[v2.RandomIoUCrop()]
[v2.RandomZoomOut()]
EOF
	[[ "${lines[0]}" == "refused refurb_stream convert: MixUp (transforms[0]): MixUp mixes the images and labels of a batch"* ]] || false
	[[ "${lines[1]}" == "refused refurb_stream convert: SanitizeBoundingBoxes (transforms[1]): SanitizeBoundingBoxes works on bounding boxes, masks or key points (detection, segmentation)"* ]] || false
	[[ "${lines[2]}" == "refused refurb_stream convert: RandomIoUCrop (transforms[0]): RandomIoUCrop works on bounding boxes"* ]] || false
	[[ "${lines[3]}" == "refused refurb_stream convert: RandomZoomOut (transforms[0]): refurb has no filter for RandomZoomOut: leave it out, or apply it to the reader's batches in the training loop"* ]] || false
}

@test "pixels: v2 recipe on the PIL image, then ToImage, ToDtype, Normalize" {
	same_as_torchvision "v2.Compose([v2.RandomResizedCrop(48, scale=(1, 1), ratio=(1, 1)), v2.RandomHorizontalFlip(p=1), v2.ColorJitter(brightness=(1.3, 1.3)), v2.ColorJitter(hue=(0.1, 0.1)), v2.RandomRotation((30, 30), interpolation=InterpolationMode.BILINEAR), v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize($MEAN)])"
}

@test "pixels: v2 recipe on the tensor (ToImage first), antialiased resize" {
	same_as_torchvision "v2.Compose([v2.ToImage(), v2.RandomResizedCrop(48, scale=(1, 1), ratio=(1, 1), antialias=True), v2.RandomHorizontalFlip(p=1), v2.ColorJitter(brightness=(1.3, 1.3)), v2.RandomAffine((10, 10), scale=(1.1, 1.1), shear=(5, 5, 3, 3)), v2.ToDtype(torch.float32, scale=True), v2.Normalize($MEAN)])"
}

@test "pixels: ToDtype(float32, scale=False) and a Normalize in 0..255" {
	same_as_torchvision "v2.Compose([v2.ToImage(), v2.Resize(50, interpolation=InterpolationMode.BICUBIC), v2.CenterCrop(40), v2.ToDtype(torch.float32), v2.Normalize([123.7, 116.3, 103.5], [58.4, 57.1, 57.4])])"
}

@test "pixels: a per-type fill on the PIL image and on the tensor, uint8 out" {
	same_as_torchvision "v2.Compose([v2.RandomRotation((30, 30), fill={tv_tensors.Image: 127, 'others': 9}), v2.ToImage(), v2.RandomRotation((20, 20), fill={tv_tensors.Image: 127, 'others': 9}), v2.CenterCrop(56)])"
}

@test "pixels: v1 transforms of the current torchvision" {
	same_as_torchvision "T.Compose([T.Resize(50), T.CenterCrop(48), T.ColorJitter(brightness=(1.3, 1.3)), T.GaussianBlur(5, sigma=(1.5, 1.5)), T.RandomGrayscale(p=1), T.RandomPosterize(5, p=1), T.RandomEqualize(p=1), T.RandomAdjustSharpness(2, p=1), T.RandomAffine((10, 10), scale=(1.1, 1.1), shear=(5, 5, 3, 3), fill=(10, 20, 30)), T.ToTensor(), T.Normalize($MEAN)])"
}
