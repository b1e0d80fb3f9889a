#!/usr/bin/env bats
# python3 -m refurb_stream convert (python/refurb_stream/convert.py) and
# the filters of torchvision's single transforms through the programs, on
# REFURB_TEST_PYTHON (tests/helpers.bash; tests/convert-v2.bats has the
# torchvision.transforms.v2 cases).

load helpers
bats_require_minimum_version 1.5.0

setup() {
	T="$BATS_TEST_TMPDIR"
	export PYTHONPATH="$TOP/python"
}

need_torchvision() {
	"$PY" -c 'import torchvision' 2>/dev/null ||
		skip "torchvision is not installed for $PY"
}

# small_dataset: three images in $T/d; J is one of them.
small_dataset() {
	make_dataset "$T/d" 3 1 || return 1
	J="$(sample_jpeg "$T/d")"
}

# expect_convert EXPRESSION WANT: refurb_stream convert turns EXPRESSION
# ("-": stdin) into the pipeline WANT, exit 0 ($output keeps it).
expect_convert() {
	run "$PY" -m refurb_stream convert "$1"
	if [ "$status" -ne 0 ] || [ "$output" != "$2" ]; then
		printf 'convert %s: exit %s, output:\n%s\nwant:\n%s\n' "$1" \
			"$status" "$output" "$2" >&2
		return 1
	fi
}

# expect_preview SPEC N: refurb-dump --preview draws N samples of SPEC on
# $J (small_dataset) into a contact sheet, exit 0.
expect_preview() {
	rm -f "$T/sheet.jpg"
	run refurb-dump --preview "$1" -n "$2" -o "$T/sheet.jpg" "$J"
	if [ "$status" -ne 0 ] || [ ! -s "$T/sheet.jpg" ]; then
		printf 'preview %s: exit %s, output:\n%s\n' "$1" "$status" \
			"$output" >&2
		return 1
	fi
}

# expect_bad_spec SPEC WHERE: refurb-dump --preview refuses SPEC on $J,
# exit 2, its first line "refurb-dump: bad pipeline spec at WHERE..."
expect_bad_spec() {
	run refurb-dump --preview "$1" "$J"
	expect_fail 2 "refurb-dump: bad pipeline spec at $2"
}

@test "convert: the SimCLR recipe becomes a pipeline refurb runs" {
	need_torchvision
	expect_convert 'T.Compose([T.RandomResizedCrop(96), T.RandomHorizontalFlip(), T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8), T.RandomGrayscale(p=0.2), T.GaussianBlur(9, sigma=(0.1, 2.0)), T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])' \
		"rrcrop=96x96:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,flip=p=0.5,apply=p=0.8:n=1,colorjitter=brightness=0.6-1.4:contrast=0.6-1.4:saturation=0.6-1.4:hue=-0.1-0.1,grayscale=p=0.2,gaussblur=kernel_size=9x9:sigma=0.1-2,normalize=mean=0.485/0.456/0.406:std=0.229/0.224/0.225"
	small_dataset
	expect_preview "$output" 4
}

@test "convert: every single transform, from stdin" {
	need_torchvision
	expect_convert - "vflip=p=0.3,solarize=threshold=100:p=0.5,posterize=bits=4:p=0.2,equalize=p=0.5,autocontrast=p=0.5,sharpness=factor=2:p=0.5,invert=p=0.5,rotation=degrees=-5-10:interp=nearest:fill=1/2/3,affine=degrees=-10-10:translate=0.1/0.2:scale=0.9-1.1:shear=-5-5/-3-3:interp=nearest:fill=0,perspective=distortion_scale=0.3:p=0.4:interp=bicubic:fill=0,apply=p=0.5:n=3,randaug=n=2:m=9:bins=31:interp=nearest,invert=p=0.5,centercrop=32x32,erasing=p=0.25:scale=0.02-0.33:ratio=0.3-3.3:value=1/2/3" <<'EOF'
[T.RandomVerticalFlip(0.3), T.RandomSolarize(100), T.RandomPosterize(4, p=0.2),
 T.RandomEqualize(), T.RandomAutocontrast(), T.RandomAdjustSharpness(2),
 T.RandomInvert(), T.RandomRotation((-5, 10), fill=(1, 2, 3)),
 T.RandomAffine(10, translate=(0.1, 0.2), scale=(0.9, 1.1), shear=(-5, 5, -3, 3)),
 T.RandomPerspective(0.3, p=0.4, interpolation=InterpolationMode.BICUBIC),
 T.RandomApply([T.RandAugment(), T.RandomInvert()], p=0.5), T.CenterCrop(32),
 T.PILToTensor(), T.RandomErasing(0.25, value=(1, 2, 3))]
EOF
	small_dataset
	expect_preview "$output" 2
}

@test "convert: a transform refurb has no filter for is named" {
	need_torchvision
	run "$PY" -m refurb_stream convert 'T.Compose([T.Resize(64), T.Lambda(lambda x: x)])'
	expect_fail 1 "refurb_stream convert: Lambda (transforms[1]): refurb has no filter for Lambda"
}

@test "convert: a refusal says what to do (Lambda, a transform without a filter, an interpolation mode)" {
	need_torchvision
	run "$PY" -m refurb_stream convert 'T.Compose([T.Resize(64), T.Lambda(lambda x: x)])'
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == *"Lambda (transforms[1]): refurb has no filter for Lambda (its Python function cannot run in refurb's C chain): apply the function to the reader's batches in the training loop"* ]] || false
	run "$PY" -m refurb_stream convert 'T.Compose([T.FiveCrop(32)])'
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == *"FiveCrop (transforms[0]): refurb has no filter for FiveCrop: leave it out, or apply it to the reader's batches"* ]] || false
	run "$PY" -m refurb_stream convert 'T.Resize(256, interpolation=InterpolationMode.LANCZOS)'
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == *"Resize (transforms): interpolation lanczos is not nearest, bilinear or bicubic (the modes refurb's filters have): use InterpolationMode.BICUBIC"* ]] || false
	# after Normalize: the torchvision transform and its place, not refurb's filter
	run "$PY" -m refurb_stream convert 'T.Compose([T.ToTensor(), T.Normalize((0.5,), (0.5,)), T.Grayscale()])'
	expect_fail 1 "refurb_stream convert: Grayscale (transforms[2]) after Normalize (refurb normalizes last, its filters work on the pixels): put it before Normalize"
	run "$PY" -m refurb_stream convert 'T.Compose([T.ToTensor(), T.Normalize((0.5,), (0.5,)), T.RandomChoice([T.RandomHorizontalFlip(), T.RandomVerticalFlip()])])'
	expect_fail 1 "refurb_stream convert: RandomHorizontalFlip (transforms[2].transforms[0]) after Normalize"
}

@test "convert: RandAugment and TrivialAugmentWide bins and magnitudes that cannot run are named before the chain runs" {
	need_torchvision
	# torchvision fails on the first image (IndexError); refurb-final would refuse the spec
	run "$PY" -m refurb_stream convert 'T.RandAugment(magnitude=9, num_magnitude_bins=5)'
	expect_fail 1 "refurb_stream convert: RandAugment (transforms): magnitude=9 with num_magnitude_bins=5 (torchvision indexes the bins by magnitude and fails on the first image with an IndexError): use a magnitude of 0 to 4, or more bins"
	run "$PY" -m refurb_stream convert 'T.TrivialAugmentWide(num_magnitude_bins=1)'
	expect_fail 1 "refurb_stream convert: TrivialAugmentWide (transforms): num_magnitude_bins=1 (torchvision's Posterize divides by num_magnitude_bins - 1; refurb takes 2 to 1001): use 2 or more"
	run "$PY" -m refurb_stream convert 'T.RandAugment(magnitude=0, num_magnitude_bins=1)'
	expect_fail 1 "refurb_stream convert: RandAugment (transforms): num_magnitude_bins=1"
	# num_ops=0 draws nothing: the image as it is
	expect_convert 'T.Compose([T.Resize(32), T.RandAugment(num_ops=0), T.CenterCrop(32)])' \
		'resize=32:interp=bilinear,centercrop=32x32'
	# what converts, runs
	expect_convert 'T.RandAugment(num_ops=3, magnitude=9, num_magnitude_bins=10)' \
		'randaug=n=3:m=9:bins=10:interp=nearest'
	small_dataset
	expect_preview "$output" 2
}

@test "convert: an argument refurb cannot express is named" {
	need_torchvision
	run "$PY" -m refurb_stream convert 'T.Compose([T.RandomRotation(10, interpolation=InterpolationMode.BOX)])'
	expect_fail 1 "refurb_stream convert: RandomRotation (transforms[0]): interpolation box"
	run "$PY" -m refurb_stream convert 'T.Compose([T.PILToTensor(), T.RandomErasing(value="random")])'
	expect_fail 1 "refurb_stream convert: RandomErasing (transforms[1]): value='random' on a uint8 tensor (torchvision casts the normal values to uint8): put ToTensor before it, or erase with a whole value"
	run "$PY" -m refurb_stream convert 'T.Compose([T.ToTensor(), T.RandomErasing(value=0.5)])'
	expect_fail 1 "refurb_stream convert: RandomErasing (transforms[1]): value=0.5 is not a whole pixel value"
	# erasing with the mean before Normalize: what to do (after Normalize, value 0 is the mean)
	run "$PY" -m refurb_stream convert 'T.Compose([T.ToTensor(), T.RandomErasing(value=(0.485, 0.456, 0.406)), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])'
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == *"value=(0.485, 0.456, 0.406) is not a whole pixel value (0..255, as v * 255 after ToTensor): refurb erases pixels before Normalize; give whole pixel values, or put RandomErasing after Normalize, where it erases the float tensor with any value (value=0 there is the colour of Normalize's mean)" ]] || false
	expect_convert 'T.Compose([T.ToTensor(), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)), T.RandomErasing(value=0)])' \
		'normalize=mean=0.485/0.456/0.406:std=0.229/0.224/0.225,erasing=p=0.5:scale=0.02-0.33:ratio=0.3-3.3:value=0'
	run "$PY" -m refurb_stream convert 'T.Compose([T.RandomApply([T.Grayscale(3)])])'
	expect_fail 1 "refurb_stream convert: RandomApply (transforms[0]): cannot gate Grayscale"
}

@test "convert: an argument refurb would refuse is named with its transform (negative sizes, NaN, infinity, p, bounds)" {
	need_torchvision
	run "$PY" -m refurb_stream convert 'T.Compose([T.RandomCrop(-5)])'
	expect_fail 1 "refurb_stream convert: RandomCrop (transforms[0]): size -5 is not a whole number of pixels 1..65535"
	run "$PY" -m refurb_stream convert 'T.Compose([T.Resize(224), T.CenterCrop((0, 3))])'
	expect_fail 1 "refurb_stream convert: CenterCrop (transforms[1]): size 0 is not a whole number of pixels 1..65535"
	run "$PY" -m refurb_stream convert 'T.Compose([T.ToTensor(), T.Normalize([0.5, float("nan"), 0.5], [0.2, 0.2, 0.2])])'
	expect_fail 1 "refurb_stream convert: Normalize (transforms[1]): mean=[0.5, nan, 0.5] is not a finite number"
	run "$PY" -m refurb_stream convert 'T.Compose([T.ToTensor(), T.Normalize([0.5], [0])])'
	expect_fail 1 "refurb_stream convert: Normalize (transforms[1]): std=[0] has a 0"
	run "$PY" -m refurb_stream convert 'T.Compose([T.RandomRotation(float("nan"))])'
	expect_fail 1 "refurb_stream convert: RandomRotation (transforms[0]): degrees=[nan, nan] is not a finite number"
	run "$PY" -m refurb_stream convert 'T.Compose([T.RandomApply([T.ColorJitter(float("inf"))], p=0.8)])'
	expect_fail 1 "refurb_stream convert: ColorJitter (transforms[0].transforms[0]): brightness=[0.0, inf] is not a finite number"
	run "$PY" -m refurb_stream convert 'T.Compose([T.RandomHorizontalFlip(p=2)])'
	expect_fail 1 "refurb_stream convert: RandomHorizontalFlip (transforms[0]): p=2 is not a probability 0..1"
	run "$PY" -m refurb_stream convert 'T.Compose([T.RandomResizedCrop(8, ratio=(0, 1))])'
	expect_fail 1 "refurb_stream convert: RandomResizedCrop (transforms[0]): ratio=(0, 1): refurb takes 0 < ratio <= 1000000"
	run "$PY" -m refurb_stream convert 'T.Compose([T.Pad(70000)])'
	expect_fail 1 "refurb_stream convert: Pad (transforms[0]): padding 70000 is not a whole number of pixels 0..65535"
	# the area's share: 0 < scale <= 1 in refurb's rrcrop and erasing
	run "$PY" -m refurb_stream convert 'T.Compose([T.RandomResizedCrop(8, scale=(0.5, 1.5))])'
	expect_fail 1 "refurb_stream convert: RandomResizedCrop (transforms[0]): scale=(0.5, 1.5): refurb takes 0 < scale <= 1 (low <= high)"
	run "$PY" -m refurb_stream convert 'T.Compose([T.RandomResizedCrop(8, scale=(0, 1))])'
	expect_fail 1 "refurb_stream convert: RandomResizedCrop (transforms[0]): scale=(0, 1): refurb takes 0 < scale <= 1"
	run "$PY" -m refurb_stream convert 'T.Compose([T.ToTensor(), T.RandomErasing(scale=(0, 0.5))])'
	expect_fail 1 "refurb_stream convert: RandomErasing (transforms[1]): scale=(0, 0.5): refurb takes 0 < scale <= 1"
	run "$PY" -m refurb_stream convert 'T.Compose([T.ToTensor(), T.RandomErasing(ratio=(0, 3))])'
	expect_fail 1 "refurb_stream convert: RandomErasing (transforms[1]): ratio=(0, 3): refurb takes 0 < ratio <= 1000000"
	# a threshold below 0 inverts every pixel, as 0 does: written as 0
	expect_convert 'T.Compose([T.RandomSolarize(-5, p=1)])' "solarize=threshold=0:p=1"
	expect_convert 'T.Compose([T.ToTensor(), T.RandomSolarize(-0.5, p=1)])' "solarize=threshold=0:p=1,normalize=mean=0:std=1"
	# what the converter writes, refurb takes
	run -0 "$PY" -m refurb_stream convert 'T.Compose([T.RandomResizedCrop(8, scale=(1e-6, 1))])'
	refurb-dump --preview "${lines[0]}" -n 1 -o "$BATS_TEST_TMPDIR/s.jpg" "$TOP/tests/data/jpeg/prog420.jpg"
}

@test "convert: a bad expression or no argument is a usage error" {
	need_torchvision
	run "$PY" -m refurb_stream convert 'T.Compose(['
	expect_fail 2 "refurb_stream convert: cannot evaluate the expression: SyntaxError"
	run "$PY" -m refurb_stream convert
	expect_fail 2 "usage: python3 -m refurb_stream convert EXPRESSION"
}

@test "pipeline errors suggest the near miss and list the choices" {
	small_dataset
	expect_bad_spec 'crop=48,colorjiter=0.4' 'column 9: unknown filter "colorjiter" (did you mean "colorjitter"?)'
	[[ "$output" == *"filters: resize, centercrop, crop,"* ]] || false
	expect_bad_spec 'crop=48,randaug=2:9' 'column 19: "9" needs a key (key=value): did you mean m=9?'
	expect_bad_spec 'crop=48,rotation=10:interpolation=bilinar' 'column 35: unknown interpolation "bilinar" (did you mean "bilinear"?)'
	[[ "$output" == *"interpolation: nearest, bilinear, bicubic"* ]] || false
	expect_bad_spec 'crop=48,RandomErasing' 'column 9: unknown filter "RandomErasing" (did you mean "erasing"?)'
	expect_bad_spec 'crop=48,apply=0.5' 'column 9: apply n=1: only 0 layers follow it' 
}

@test "torchvision's argument names and fractions are accepted" {
	small_dataset
	expect_preview 'rrcrop=32:ratio=3/4-4/3:interpolation=bicubic,randaug=num_ops=1:magnitude=5:num_magnitude_bins=11,sharpness=sharpness_factor=2' 2
}

@test "convert: DeiT's RandomErasing after Normalize erases the float tensor" {
	need_torchvision
	expect_convert 'T.Compose([T.RandomResizedCrop(32), T.ToTensor(), T.Normalize([0.5, 0.4, 0.3], [0.2, 0.2, 0.2]), T.RandomErasing(0.25), T.RandomErasing(1, value="random")])' \
		"rrcrop=32x32:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,normalize=mean=0.5/0.4/0.3:std=0.2/0.2/0.2,erasing=p=0.25:scale=0.02-0.33:ratio=0.3-3.3:value=0,erasing=p=1:scale=0.02-0.33:ratio=0.3-3.3:value=random"
	small_dataset
	expect_preview "$output" 2
}

@test "convert: padding modes of RandomCrop and Pad" {
	need_torchvision
	expect_convert 'T.Compose([T.Pad((1, 2), padding_mode="reflect"), T.RandomCrop(32, padding=4, padding_mode="symmetric", pad_if_needed=True), T.Pad(3, fill=(1, 2, 3)), T.RandomCrop(30, padding=(1, 2, 3, 4), padding_mode="edge")])' \
		"pad=1/2:padding_mode=reflect,crop=32x32:pad=4:pad_if_needed=1:padding_mode=symmetric,pad=3:fill=1/2/3,crop=30x30:pad=1/2/3/4:padding_mode=edge"
	small_dataset
	expect_preview "$output" 2
	run "$PY" -m refurb_stream convert 'T.Pad(-2)'
	expect_fail 1 "refurb_stream convert: Pad (transforms): padding -2: refurb pads by whole pixels >= 0"
}

@test "padding modes: a bad mode or padding names the valid ones" {
	small_dataset
	expect_bad_spec 'crop=48:pad=4:padding_mode=wrap' 'column 28: unknown padding_mode "wrap"'
	[[ "$output" == *"padding_mode: constant, edge, reflect, symmetric"* ]] || false
	expect_bad_spec 'pad=4:mode=reflct' 'column 12: unknown padding_mode "reflct" (did you mean "reflect"?)'
	expect_bad_spec 'pad=1/2/3' "column 5: pad needs 1, 2 or 4 values separated by '/'"
	expect_bad_spec 'pad' 'column 1: pad needs its pad'
}

@test "convert: RandomRotation expand and center, RandomAffine center" {
	need_torchvision
	expect_convert 'T.Compose([T.RandomRotation(30, expand=True, center=(3, 4.5)), T.CenterCrop(20), T.RandomAffine(10, center=[1, 2])])' \
		"rotation=degrees=-30-30:interp=nearest:fill=0:expand=1:center=3/4.5,centercrop=20x20,affine=degrees=-10-10:interp=nearest:fill=0:center=1/2"
	small_dataset
	expect_preview "$output" 2
	run "$PY" -m refurb_stream convert 'T.RandomOrder([T.RandomRotation(30, expand=True), T.RandomInvert()])'
	expect_fail 1 "refurb_stream convert: RandomOrder (transforms): cannot gate RandomRotation(expand=True)"
}

@test "rotation expand=1: a batching stage refuses a size it cannot fix" {
	small_dataset
	refurb-index -q -o "$T/train.idx" "$T/d"
	run refurb-advise -p 'resize=64x64,rotation=20:expand=1' "$T/train.idx"
	expect_fail 2 "refurb-advise: pipeline "
	[[ "${lines[0]}" == *'output size depends on the angle layer 2 (rotation expand=1) draws: follow it with a crop, centercrop, rrcrop or resize=HxW'* ]] || false
	expect_bad_spec 'rotation=10:expand=2' 'column 20: unknown expand value "2"'
	expect_bad_spec 'rotation=10:center=5' 'column 20: center needs 2 values X/Y'
	expect_bad_spec 'order=2,invert,rotation=10:expand=1' 'column 16: order cannot gate rotation expand=1'
}

@test "convert: RandomChoice and RandomOrder become choice and order" {
	need_torchvision
	expect_convert 'T.Compose([T.RandomChoice([T.RandAugment(), T.Compose([T.RandomInvert(), T.RandomVerticalFlip()]), T.GaussianBlur(3)], p=[1, 2, 3]), T.RandomOrder([T.ColorJitter(0.4), T.RandomSolarize(128)]), T.CenterCrop(32)])' \
		"choice=n=3:p=1/2/3:layers=2/2/1,randaug=n=2:m=9:bins=31:interp=nearest,invert=p=0.5,vflip=p=0.5,gaussblur=kernel_size=3x3:sigma=0.1-2,order=n=2,colorjitter=brightness=0.6-1.4,solarize=threshold=128:p=0.5,centercrop=32x32"
	small_dataset
	expect_preview "$output" 2
	run "$PY" -m refurb_stream convert 'T.RandomOrder([T.RandomCrop(3), T.RandomInvert()])'
	expect_fail 1 "refurb_stream convert: RandomOrder (transforms): cannot gate RandomCrop (refurb's order gates only"
	run "$PY" -m refurb_stream convert 'T.RandomChoice([T.RandomInvert()], p=[0])'
	expect_fail 1 "refurb_stream convert: RandomChoice (transforms): p=[0] needs a weight >= 0 per transform, not all 0"
}

@test "choice and order: bad options are named" {
	small_dataset
	expect_bad_spec 'choice=3,vflip,invert' 'column 1: choice n=3: only 2 filters follow it'
	expect_bad_spec 'choice=2:p=1,vflip,invert' 'column 1: choice n=2 needs 2 weights in p, not 1'
	expect_bad_spec 'order=2,vflip,crop=8' 'column 15: order cannot gate crop (only filters that keep the image'"'"'s size and channels)'
	expect_bad_spec 'order=2:layers=3/1,vflip,invert' 'column 1: order n=2: its options have 4 layers, only 2 follow it'
}

@test "convert: RandomErasing(value='random') between ToTensor and Normalize" {
	need_torchvision
	expect_convert 'T.Compose([T.RandomResizedCrop(32), T.ToTensor(), T.RandomErasing(1, value="random"), T.RandomErasing(0.5), T.Normalize([0.5, 0.4, 0.3], [0.2, 0.2, 0.2])])' \
		"rrcrop=32x32:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,erasing=p=1:scale=0.02-0.33:ratio=0.3-3.3:value=random,erasing=p=0.5:scale=0.02-0.33:ratio=0.3-3.3:value=0,normalize=mean=0.5/0.4/0.3:std=0.2/0.2/0.2"
	small_dataset
	expect_preview "$output" 2
	expect_convert 'T.Compose([T.ToTensor(), T.RandomErasing(value="random")])' \
		"erasing=p=0.5:scale=0.02-0.33:ratio=0.3-3.3:value=random,normalize=mean=0:std=1"
	run "$PY" -m refurb_stream convert 'T.Compose([T.ToTensor(), T.RandomErasing(value="random"), T.RandomHorizontalFlip(), T.Normalize([0.5], [0.5])])'
	expect_fail 1 "refurb_stream convert: RandomHorizontalFlip (transforms[2]) after RandomErasing(value='random') (refurb draws its values at Normalize"
	expect_bad_spec 'erasing=value=random,flip,normalize' 'column 22: only erasing may come between erasing value=random and normalize'
	expect_bad_spec 'resize=32,erasing=value=random' 'column 11: erasing value=random draws float values: put a normalize after it'
}

@test "convert: RandomChoice and RandomApply of crops and resizes" {
	need_torchvision
	expect_convert 'T.Compose([T.RandomChoice([T.RandomResizedCrop(32), T.Compose([T.Resize(40), T.CenterCrop(32)])]), T.RandomApply([T.Pad(4, padding_mode="reflect"), T.RandomCrop(32)], p=0.3)])' \
		"choice=n=2:layers=1/2,rrcrop=32x32:scale=0.08-1:ratio=0.75-1.3333333333333333:interp=bilinear,resize=40:interp=bilinear,centercrop=32x32,apply=p=0.3:n=2,pad=4:padding_mode=reflect,crop=32x32"
	small_dataset
	refurb-index -q -o "$T/train.idx" "$T/d"
	expect_preview "$output" 4
	# options of two sizes: a batching stage names the gate
	run refurb-advise -p 'resize=64,choice=2,centercrop=48,centercrop=40' "$T/train.idx"
	expect_fail 2 "refurb-advise: pipeline "
	[[ "${lines[0]}" == *'output size depends on what layer 2 (choice) draws: give its options one size, or follow it with a crop'* ]] || false
}

@test "a chain with drawn sizes: partial rotation expand=1, final choice of crops; refurb-final refuses a drawn final size" {
	set -o pipefail
	make_dataset "$T/d" 8 2
	refurb-index -q -o "$T/train.idx" "$T/d"
	refurb-evict -q -r 2 --seed 1 "$T/train.idx" > "$T/train.evict"
	refurb-plan -b 4 --epochs 0-1 --seed 1 "$T/train.evict" |
		refurb-partial -q -c "$T/cache" -p 'resize=64,rotation=30:expand=1,pad=2:padding_mode=symmetric' "$T/train.idx" |
		refurb-final -q -p 'choice=2:layers=1/2,rrcrop=48,resize=56,centercrop=48,erasing=value=random,normalize=imagenet' > "$T/out.stream"
	run refurb-dump "$T/out.stream"
	[ "$status" -eq 0 ]
	[[ "$output" == *"images	48x48x3 float32 NCHW"* ]] || false
	# a view of its own per -p (the partial part's size is drawn; its
	# rotation, cached on purpose, is the same in both views)
	refurb-plan -b 4 --epochs 0-1 --seed 1 "$T/train.evict" |
		refurb-partial -q -c "$T/cache3" -p 'resize=64,rotation=30:expand=1' "$T/train.idx" |
		refurb-final -q --allow-shared-draws -p 'centercrop=40' -p 'rrcrop=40,invert' > "$T/views.stream"
	run refurb-dump "$T/views.stream"
	[ "$status" -eq 0 ]
	refurb-plan -b 4 --epochs 0 --seed 1 "$T/train.evict" |
		refurb-partial -q -c "$T/cache2" -p 'resize=64' "$T/train.idx" > "$T/plan.annotated"
	run refurb-final -q -p 'centercrop=48,rotation=30:expand=1' < "$T/plan.annotated"
	expect_fail 2 'refurb-final: pipeline "centercrop=48x48,rotation=degrees=-3e+01-3e+01:interp=nearest:fill=0/0/0:expand=1": output size depends on the angle layer 2 (rotation expand=1) draws'
}

@test "convert: AugMix with every argument becomes augmix, which refurb runs" {
	need_torchvision
	expect_convert 'T.Compose([T.Resize(48), T.AugMix(), T.AugMix(severity=5, mixture_width=2, chain_depth=2, alpha=0.5, all_ops=False, interpolation=InterpolationMode.NEAREST, fill=[1, 2, 3]), T.AugMix(chain_depth=0, fill=7), T.PILToTensor()])' \
		"resize=48:interp=bilinear,augmix=severity=3:width=3:depth=-1:alpha=1:all_ops=1:interp=bilinear:fill=none,augmix=severity=5:width=2:depth=2:alpha=0.5:all_ops=0:interp=nearest:fill=1/2/3,augmix=severity=3:width=3:depth=-1:alpha=1:all_ops=1:interp=bilinear:fill=7"
	small_dataset
	expect_preview "$output,centercrop=40" 2
}

@test "convert: an AugMix argument refurb cannot express is named" {
	need_torchvision
	run "$PY" -m refurb_stream convert '[T.AugMix(interpolation=InterpolationMode.BICUBIC)]'
	expect_fail 1 "refurb_stream convert: AugMix (transforms[0]): interpolation bicubic (AugMix works on a tensor: nearest or bilinear; torchvision refuses it too)"
	run "$PY" -m refurb_stream convert '[T.AugMix(mixture_width=20)]'
	expect_fail 1 "refurb_stream convert: AugMix (transforms[0]): mixture_width=20 (refurb takes 1..16)"
	run "$PY" -m refurb_stream convert '[T.AugMix(chain_depth=17)]'
	expect_fail 1 "refurb_stream convert: AugMix (transforms[0]): chain_depth=17"
	run "$PY" -m refurb_stream convert '[T.AugMix(alpha=0.0)]'
	expect_fail 1 "refurb_stream convert: AugMix (transforms[0]): alpha=0.0 (Dirichlet needs alpha > 0)"
	run "$PY" -m refurb_stream convert 'T.Compose([T.ToTensor(), T.AugMix()])'
	expect_fail 1 "refurb_stream convert: AugMix (transforms[1]): on a float tensor (after ToTensor)"
}

@test "augmix: bad values are named with their valid range" {
	small_dataset
	expect_bad_spec 'augmix=severity=11' 'column 17: severity 11 out of range 1..10'
	expect_bad_spec 'augmix=mixture_width=0' 'column 22: width 0 out of range 1..16'
	expect_bad_spec 'augmix=interpolation=bicubic' 'column 22: unknown interpolation "bicubic"'
	[[ "$output" == *"interpolation: nearest, bilinear"$'\n'"Usage:"* ]] || false
	expect_bad_spec 'augmix=alpha=-1' 'column 14: alpha -1 out of range: need 0 < alpha <= 1e+06'
	expect_bad_spec 'augmix=alpha=0' 'column 14: alpha 0 out of range: need 0 < alpha <= 1e+06'
	expect_bad_spec 'AugMix' 'column 1: unknown filter "AugMix" (did you mean "augmix"?)'
}

@test "augmix in the partial and in the final pipeline: the same stream with -j 1 and -j 2" {
	need_numpy
	set -o pipefail
	make_dataset "$T/d" 12 2
	refurb-index -q -o "$T/i" "$T/d"
	refurb-evict -q -r 2 -s 3 -o "$T/e" "$T/i"
	# the same cache path for both (the stream names its cache)
	for j in 1 2; do
		rm -rf "$T/c"
		refurb-plan -q -b 4 -e 0-2 "$T/e" |
			refurb-partial -q -j "$j" -c "$T/c" -p 'resize=48,augmix=severity=4' "$T/i" |
			refurb-final -q -j "$j" -p 'augmix=width=2:depth=2:interp=nearest:fill=9,crop=32' -o "$T/s$j"
	done
	cmp "$T/s1" "$T/s2"
	# augmix really ran: with vflip=p=0 in its place (same layer
	# positions, no change) the images differ, the labels do not
	rm -rf "$T/c"
	refurb-plan -q -b 4 -e 0-2 "$T/e" |
		refurb-partial -q -c "$T/c" -p 'resize=48' "$T/i" |
		refurb-final -q -p 'vflip=p=0,crop=32' -o "$T/s3"
	"$PY" - "$T/s1" "$T/s3" <<'PY'
import sys
import numpy as np
from refurb_stream import open_stream
a, b = list(open_stream(sys.argv[1])), list(open_stream(sys.argv[2]))
assert len(a) == len(b) == 9, (len(a), len(b))
for x, y in zip(a, b):
    assert (x.labels == y.labels).all()
    assert not (x.images == y.images).all()
PY
}

MOCO='[T.Compose([T.RandomResizedCrop(224, scale=(0.2, 1)), T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8), T.RandomGrayscale(0.2), T.RandomApply([T.GaussianBlur(23, (0.1, 2))], p=0.5), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])] * 2'

@test "convert --explain: the split as two lines, its unique fraction and view collisions, the inserted resize and the recipe's resolution at its cost" {
	need_torchvision
	run -0 --separate-stderr "$PY" -m refurb_stream convert --explain --epochs 200 --views "$MOCO"
	# stdout: refurb-final's arguments, as without --explain
	[[ "$output" == "-p rrcrop=224x224:scale=0.2-1:"*",flip=p=0.5,normalize="*" --views 2" ]] || false
	[ "${stderr_lines[0]}" = "refurb_stream convert: cached once every 3 uses (refurb-partial -p): resize=256" ]
	[[ "${stderr_lines[1]}" == "refurb_stream convert: run on every use (refurb-final -p): rrcrop=224x224:scale=0.2-1:"*",gaussblur=kernel_size=23x23:sigma=0.1-2,flip=p=0.5,normalize="* ]] || false
	[[ "${stderr_lines[2]}" =~ ^refurb_stream\ convert:\ unique\ fraction\ at\ r\ =\ 3\ after\ 200\ epochs:\ 1\.0000\;\ view\ collisions\ \(2\ views\ alike\):\ [0-9.e-]+%$ ]] || false
	[ "${stderr_lines[3]}" = "refurb_stream convert: inserted: resize=256 (not in the recipe) before the RandomResizedCrop: the crop is cut from the image resized to 256 px on its shorter side, not from the photo: a 0.2-scale crop (the recipe's smallest) is 132 px of it, upsampled 1.7x to 224; on a 500x375 photo (--image-size) torchvision cuts it from 194 px (1.2x)" ]
	[[ "${stderr_lines[4]}" == "refurb_stream convert: to keep the recipe's resolution: cache the decode at 375 px (partial resize=375,"* ]] || false
	[ "${stderr_lines[5]}" = "refurb_stream convert:   its cost, estimated from pixel counts (--index INDEX measures it): records 2.1x larger (raw 562 KB vs 262 KB per image at 500x375), and the crop resamples from up to 2.1x the pixels" ]
	# stderr not a terminal and no --explain: the spec alone, as before
	run -0 --separate-stderr "$PY" -m refurb_stream convert --views "$MOCO"
	[ -z "$stderr" ]
}

@test "convert --explain: r never above the epochs; a recipe's own resize is cached, nothing inserted; views that would repeat are said to be refused" {
	need_torchvision
	run -0 --separate-stderr "$PY" -m refurb_stream convert --explain --reuse 6 --epochs 2 \
		'T.Compose([T.Resize(64), T.RandomCrop(56), T.RandomHorizontalFlip()])'
	[ "${stderr_lines[0]}" = "refurb_stream convert: cached once every 2 uses (refurb-partial -p): resize=64:interp=bilinear" ]
	[ "${stderr_lines[1]}" = "refurb_stream convert: run on every use (refurb-final -p): crop=56x56,flip=p=0.5" ]
	[[ "${stderr_lines[2]}" == "refurb_stream convert: unique fraction at r = 2 after 2 epochs: "*"; one view: no view collisions" ]] || false
	[[ "$stderr" != *inserted* ]] || false
	run -0 --separate-stderr "$PY" -m refurb_stream convert --explain --views \
		'[T.Compose([T.Resize(64), T.CenterCrop(56), T.RandomHorizontalFlip()])] * 2'
	[ "${stderr_lines[1]}" = "refurb_stream convert: run on every use (refurb-final -p): centercrop=56x56,flip=p=0.5" ]
	[[ "${stderr_lines[2]}" == *"view collisions (2 views alike): 50% - over 1%: refurb-final refuses these views (--allow-view-collisions runs them)" ]] || false
}

@test "convert --views: refurb-final's arguments are the final part of the split it names; the cached resize and center crop run once, the images are torchvision's" {
	need_torchvision
	set -o pipefail
	local views='[T.Compose([T.Resize(40), T.CenterCrop(32), T.ToTensor()])] * 2'
	# not a terminal, no --explain: the arguments, and one line naming the cached part
	run -0 --separate-stderr "$PY" -m refurb_stream convert --views "$views"
	[ "$output" = "-p centercrop=32x32,normalize=mean=0:std=1 --views 2" ]
	[ "$stderr" = "refurb_stream convert: give refurb-partial -p 'resize=40:interp=bilinear,centercrop=32x32' (cached once every r uses; refurb-final's arguments are the rest)" ]
	run -0 --separate-stderr "$PY" -m refurb_stream convert -q --views "$views"
	[ -z "$stderr" ]
	# the two parts as printed give torchvision's pixels
	make_dataset "$T/d" 6 1
	refurb-index -q -o "$T/i" "$T/d"
	refurb-evict -q -r 2 --seed 1 "$T/i" > "$T/e"
	refurb-plan -b 3 --epochs 0 --seed 1 "$T/e" |
		refurb-partial -q -c "$T/c" -p 'resize=40:interp=bilinear,centercrop=32x32' "$T/i" |
		refurb-final -q -p centercrop=32x32,normalize=mean=0:std=1 --views 2 --allow-view-collisions -o "$T/s"
	refurb-dump "$T/i" | grep -v '^#' | cut -f1,8 > "$T/paths"
	"$PY" - "$T/s" "$T/d" "$T/paths" <<'PY'
import sys, numpy as np, torchvision.transforms as T
from PIL import Image
from refurb_stream import open_stream
path = dict(l.split() for l in open(sys.argv[3]))
t = T.Compose([T.Resize(40), T.CenterCrop(32), T.ToTensor()])
n = 0
for b in open_stream(sys.argv[1]):
    for j, sid in enumerate(b.ids):
        want = t(Image.open(sys.argv[2] + "/" + path[str(sid)]).convert("RGB")).numpy()
        for v in range(2):
            assert np.abs(b.images[j][v] - want).max() < 2.5 / 255, (sid, v)
            n += 1
assert n == 12, n
PY
}

@test "convert --explain --index: the cost of keeping the recipe's resolution, measured" {
	need_torchvision
	make_dataset "$T/d" 8 1
	refurb-index -q -o "$T/i" "$T/d"
	run -0 --separate-stderr "$PY" -m refurb_stream convert --explain --index "$T/i" \
		--image-size 100x80 --epochs 3 'T.Compose([T.RandomResizedCrop(48, scale=(0.2, 1)), T.RandomHorizontalFlip()])'
	[ "${stderr_lines[0]}" = "refurb_stream convert: cached once every 3 uses (refurb-partial -p): resize=55" ]
	[[ "$stderr" =~ its\ cost,\ measured\ \(refurb-advise\ -n\ 20\ --repeat\ 3\ on\ [^\ ]*/i,\ the\ whole\ chain\'s\ CPU\ time\ per\ sample\ at\ r\ =\ 3\):\ [0-9.]+\ ms\ per\ image\ against\ [0-9.]+\ ms,\ cache ]] || false
	# bad values: usage errors
	run "$PY" -m refurb_stream convert --image-size 5 'T.RandomHorizontalFlip()'
	expect_fail 2 "refurb_stream convert: --image-size: '5' is not WxH (e.g. 500x375)"
	run "$PY" -m refurb_stream convert --reuse 0 'T.RandomHorizontalFlip()'
	expect_fail 2 "refurb_stream convert: --reuse: '0' is not a whole number >= 1"
}

@test "convert: a subclass of torchvision's RandomApply keeps its p (DINO-style GaussianBlur(RandomApply)); one with its own __call__ or forward is refused" {
	need_torchvision
	cat > "$T/sub.py" <<'PY'
import torchvision.transforms as T
class GaussianBlur(T.RandomApply):
    def __init__(self, p=0.5):
        super().__init__([T.GaussianBlur(9, (0.1, 2.))], p=p)
class Choice(T.RandomChoice):
    pass
transform = T.Compose([T.RandomResizedCrop(48), GaussianBlur(0.1), Choice([T.RandomHorizontalFlip(), T.RandomGrayscale()])])
PY
	run -0 --separate-stderr "$PY" -m refurb_stream convert --file "$T/sub.py"
	[[ "$output" == *",apply=p=0.1:n=1,gaussblur=kernel_size=9x9:sigma=0.1-2,choice="* ]] || false
	cat > "$T/own.py" <<'PY'
import torchvision.transforms as T
class Sometimes(T.RandomApply):
    def forward(self, img):
        return img
transform = T.Compose([T.RandomResizedCrop(48), Sometimes([T.RandomHorizontalFlip()], p=0.3)])
PY
	run -1 --separate-stderr "$PY" -m refurb_stream convert --file "$T/own.py"
	[[ "$stderr" == "refurb_stream convert: Sometimes (transforms[1]): a subclass of torchvision's RandomApply with its own forward: refurb cannot know what it does; use torchvision's transform" ]] || false
}

@test "convert --explain: asymmetric views (BYOL) say that views of different pipelines are not compared, not 'one view'" {
	need_torchvision
	run -0 --separate-stderr "$PY" -m refurb_stream convert --explain --epochs 3 --views \
		'[T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip()]), T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.RandomSolarize(128, p=0.2)])]'
	[[ "${stderr_lines[3]}" == "refurb_stream convert: views 0: unique fraction at r = 3 after 3 epochs: "*"; one view of this pipeline (views of different pipelines are not compared)" ]] || false
	[[ "${stderr_lines[4]}" == "refurb_stream convert: views 1: "*"; one view of this pipeline (views of different pipelines are not compared)" ]] || false
	run -0 --separate-stderr "$PY" -m refurb_stream convert --explain 'T.RandomResizedCrop(32)'
	[[ "${stderr_lines[2]}" == *"; one view: no view collisions" ]] || false
}
