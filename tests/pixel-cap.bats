#!/usr/bin/env bats
# The pixel cap (refurb-pipeline(7), MEMORY; issue 29 item 4): every image
# a pipeline decodes or makes is checked against --max-pixels (default
# 10^8) before it is allocated: statically when the pipeline is read
# (usage error, exit 2, naming the layer, its least size and the cap),
# and at run time for sizes that depend on the input (naming the file, the
# layer, the size and the cap) in refurb-dump --preview, refurb-partial and
# refurb-final alike.  Small caps keep the run-time cases cheap.

bats_require_minimum_version 1.5.0
load helpers
set -o pipefail

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	# one image of 67x53 (width x height)
	mkdir -p one/c0
	cp "$TOP/tests/data/jpeg/prog420.jpg" one/c0/z.jpg
	refurb-index -q -o one.idx one
	refurb-evict -q -r 2 -o one.evict one.idx
	refurb-plan -q -b 1 -e 0-1 one.evict > one.plan
	refurb-partial -q -c cache -p resize=40x80 one.idx < one.plan > one.ann
}

setup() {
	cd "$BATS_FILE_TMPDIR"
	T="$BATS_TEST_TMPDIR"
	J="$TOP/tests/data/jpeg/prog420.jpg"
}

# cap_msg SIZE PIXELS [CAP]: the end of a static refusal's message.
cap_msg() {
	printf '%s' "makes images of $1 pixels or more ($2), more than the cap of ${3:-100000000} pixels: make it smaller, or raise --max-pixels"
}

@test "the issue's pipelines are refused before a run: the layer, its least size, the cap" {
	run refurb-dump --preview 'pad=30000,crop=56' -o "$T/s.jpg" "$J"
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "refurb-dump: pipeline \"pad=30000/"*"\": layer 1 (pad) $(cap_msg 60001x60001 3600120001)" ]] || false
	run refurb-dump --preview 'rrcrop=60000,crop=56' -o "$T/s.jpg" "$J"
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == *": layer 1 (rrcrop) $(cap_msg 60000x60000 3600000000)" ]] || false
	run refurb-partial -q -c "$T/c" -p 'crop=65535:pad_if_needed=1' one.idx < one.plan
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "refurb-partial: pipeline \"crop=65535x65535"*"\": layer 1 (crop) $(cap_msg 65535x65535 4294836225)" ]] || false
	run refurb-final -q -p 'pad=30000,crop=56' -i one.ann
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "refurb-final: pipeline \"pad=30000/"*"\": layer 1 (pad) $(cap_msg 60001x60001 3600120001)" ]] || false
}

@test "every branch a gate may take is checked; --max-pixels moves the cap" {
	run refurb-dump --preview 'choice=2,flip,resize=12000,crop=56' -o "$T/s.jpg" "$J"
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == *": layer 3 (resize) $(cap_msg 12000x12000 144000000)" ]] || false
	run refurb-dump --preview 'apply=p=0.5,pad=4,crop=40x80:pad_if_needed=1' --max-pixels 3000 -o "$T/s.jpg" "$J"
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == *": layer 3 (crop) $(cap_msg 40x80 3200 3000)" ]] || false
	# (the decode is capped too: the image has 67x53 = 3551 pixels)
	run refurb-dump --preview 'crop=40x80:pad_if_needed=1' --max-pixels 3600 -n 1 -o "$T/s.jpg" "$J"
	[ "$status" -eq 0 ]
	run refurb-final -q --max-pixels 0 -p flip -i one.ann
	expect_fail 2 "refurb-final: --max-pixels: 0 is out of range (1 to 4294836225)"
}

@test "sizes that depend on the input are refused at run time, before the allocation, naming the file" {
	# resize=70 passes the check (70x70 or more), but makes 70x88 of 67x53
	run refurb-dump --preview 'resize=70,flip' --max-pixels 5000 -n 1 -o "$T/s.jpg" "$J"
	expect_fail 1 "refurb-dump: $J: layer 1 (resize) would make a 70x88 image (6160 pixels) of this 53x67 input, more than the cap of 5000 pixels (--max-pixels)"
	# a resize's rows first: 200 wide x 53 rows, for a 200-pixel output
	run refurb-dump --preview 'flip,resize=1x200' --max-pixels 5000 -n 1 -o "$T/s.jpg" "$J"
	expect_fail 1 "refurb-dump: $J: layer 2 (resize) would make a 53x200 resize intermediate (10600 pixels) of this 53x67 input, more than the cap of 5000 pixels (--max-pixels)"
	run refurb-dump --preview 'resize=1x200' --max-pixels 5000 -n 1 -o "$T/s.jpg" "$J"
	expect_fail 1 "refurb-dump: $J: layer 1 (resize) would make a 53x200 resize intermediate"
	# the sheet's cells count too
	run refurb-dump --preview 'resize=60,flip' --max-pixels 5000 -n 2 -o "$T/s.jpg" "$J"
	expect_fail 1 "refurb-dump: the contact sheet's cells of 60x75 would take more than the cap of 5000 pixels (--max-pixels)"
}

@test "refurb-partial leaves out a sample over the cap, named; refurb-final stops on one" {
	run --separate-stderr refurb-partial -q -c "$T/c" --max-pixels 5000 -p 'resize=70,flip' one.idx < one.plan
	[ "$status" -eq 1 ]
	[[ "${stderr_lines[0]}" == "refurb-partial: /"*"/one/c0/z.jpg: layer 1 (resize) would make a 70x88 image (6160 pixels) of this 53x67 input, more than the cap of 5000 pixels (--max-pixels) (sample 0 left out of its batch"* ]] || false
	# the cached records are 40x80: resize=60 makes 60x120
	run refurb-final -q --max-pixels 7000 -p 'resize=60,flip,crop=56' -i one.ann -o "$T/x.bin"
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == "refurb-final: /"*"/one/c0/z.jpg: layer 1 (resize) would make a 60x120 image (7200 pixels) of this 40x80 input, more than the cap of 7000 pixels (--max-pixels)" ]] || false
	refurb-final -q --max-pixels 7200 -p 'resize=60,flip,crop=56' -i one.ann > "$T/s.bin"
	[ -s "$T/s.bin" ]
}

@test "a side over 65535 pixels (under the pixel cap) is refused like the cap: the layer, the size, the side cap" {
	# no image of any input: refused before the run, naming the layer
	run refurb-dump --preview 'pad=65535/0,crop=56' -o "$T/s.jpg" "$J"
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == *": layer 1 (pad) makes images of 1x131071 pixels or more, more than the 65535 pixels a side an image may have: make it smaller" ]] || false
	run refurb-final -q -p 'resize=1x40000,pad=30000/0,crop=56' -i one.ann
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == *": layer 2 (pad) makes images of 1x100000 pixels or more, more than the 65535 pixels a side"* ]] || false
	# 100 x 30000, then 300 rows: 300 x 90000 (27 Mpixels, under the cap)
	run refurb-dump --preview 'resize=100x30000,resize=300,crop=56' -n 1 -o "$T/s.jpg" "$J"
	expect_fail 1 "refurb-dump: $J: layer 2 (resize) would make a 300x90000 image of this 100x30000 input, more than the 65535 pixels a side an image may have: make it smaller"
	run --separate-stderr refurb-partial -q -c "$T/c" -p 'resize=100x30000,resize=300,crop=56' one.idx < one.plan
	[ "$status" -eq 1 ]
	[[ "${stderr_lines[0]}" == "refurb-partial: /"*"/one/c0/z.jpg: layer 2 (resize) would make a 300x90000 image of this 100x30000 input, more than the 65535 pixels a side"*"(sample 0 left out of its batch"* ]] || false
	run refurb-final -q -p 'resize=100x30000,resize=300,crop=56' -i one.ann -o "$T/x.bin"
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == "refurb-final: /"*"/one/c0/z.jpg: layer 2 (resize) would make a 300x90000 image of this 100x30000 input, more than the 65535 pixels a side"* ]] || false
}
