#!/usr/bin/env bats
# The bad-input matrix (issue 8, item 4): every program against every bad
# input that concerns it, with the exit status and the first line of
# stderr a user sees.  One row per case:
#
#   id | case | program | status | stderr | command
#
# The command runs with bash in the fixture directory built by setup_file
# (see there for what each file is), its stdout thrown away unless it
# says otherwise.  stderr is one of:
#   TEXT     the first line of stderr starts with TEXT
#   ~TEXT    some line of stderr starts with TEXT (a note after a summary)
# and @/ in TEXT stands for the fixture directory (images are named by
# their absolute path: the index records the dataset's absolute root).
#   (none)   stderr is empty
# Status 141 is death by SIGPIPE, the standard behaviour of a filter whose
# reader went away (as cat's); refurb-partial and refurb-final instead
# catch EPIPE, checkpoint and exit 0 with a note (they own a cache).
# Programs run with -q where they have it, so that a first line is an
# error or a warning, never a summary.  Each @test below runs the rows of
# one program and reports every row that differs.

load helpers
# a failure anywhere in a pipeline fails it (tests/lint-bats)
set -o pipefail

MATRIX='
i01 | missing dataset directory | refurb-index | 1 | refurb-index: nodir: cannot open dataset directory | refurb-index -q -o x.idx nodir
i02 | a file given for the directory | refurb-index | 1 | refurb-index: empty: not a directory | refurb-index -q -o x.idx empty
i03 | directory without class directories | refurb-index | 1 | refurb-index: emptydir: no class directories | refurb-index -q -o x.idx emptydir
i04 | corrupt JPEG: not a JPEG (GIF bytes) | refurb-index | 0 | refurb-index: c0/z.jpg: GIF image (refurb reads JPEG and PNG) | refurb-index -q -o x.idx ix-notjpeg
i05 | corrupt JPEG: header cut short | refurb-index | 0 | refurb-index: c0/z.jpg: JPEG header is truncated | refurb-index -q -o x.idx ix-hdrcut
i06 | corrupt JPEG: width 0 in SOF | refurb-index | 0 | refurb-index: c0/z.jpg: bad JPEG header: Empty JPEG image | refurb-index -q -o x.idx ix-width0
i07 | corrupt JPEG: empty file | refurb-index | 0 | refurb-index: c0/z.jpg: empty file | refurb-index -q -o x.idx ix-empty
i08 | corrupt JPEG: data truncated, header intact (found later) | refurb-index | 0 | (none) | refurb-index -q -o x.idx ix-trunc
i09 | --strict and a corrupt JPEG | refurb-index | 1 | refurb-index: c0/z.jpg: GIF image (refurb reads JPEG and PNG) | refurb-index -q --strict -o x.idx ix-notjpeg
i10 | missing --list file | refurb-index | 1 | refurb-index: nolist: | refurb-index -q --list nolist -o x.idx
i11 | garbage --list line | refurb-index | 1 | refurb-index: garbage.list: line 1: | refurb-index -q --list garbage.list -o x.idx
i12 | a directory given as the output | refurb-index | 1 | refurb-index: adir: cannot replace: Is a directory | refurb-index -q -o adir ds
i13 | FIFO closed by the reader (-o -) | refurb-index | 141 | (none) | fifo_closed refurb-index -q --list big.list -o -
i14 | FIFO given as -o, closed by the reader | refurb-index | 141 | (none) | fifo_closed_path refurb-index -q --list big.list -o
i15 | PNG wider than refurb handles: the reason | refurb-index | 0 | refurb-index: c0/z.png: PNG of 100000x10 pixels: wider or taller than 65535, the largest side refurb handles | refurb-index -q -o x.idx ix-widepng
e01 | missing index | refurb-evict | 1 | refurb-evict: nofile: cannot open | refurb-evict -q nofile
e02 | empty index | refurb-evict | 1 | refurb-evict: empty: empty file, not a refurb index | refurb-evict -q empty
e03 | truncated index | refurb-evict | 1 | refurb-evict: trunc.idx: truncated index | refurb-evict -q trunc.idx
e04 | wrong magic (a schedule given) | refurb-evict | 1 | refurb-evict: train.evict: bad magic (not a refurb index) | refurb-evict -q train.evict
e05 | index from a future version | refurb-evict | 1 | refurb-evict: future.idx: index format version 9 | refurb-evict -q future.idx
e06 | corrupt index body | refurb-evict | 1 | refurb-evict: corrupt.idx: index body checksum mismatch | refurb-evict -q corrupt.idx
e07 | a directory given for the index | refurb-evict | 1 | refurb-evict: adir: is a directory | refurb-evict -q adir
e08 | a directory given as the output | refurb-evict | 1 | refurb-evict: adir: cannot replace: Is a directory | refurb-evict -q -o adir train.idx
e09 | FIFO closed by the reader | refurb-evict | 141 | (none) | fifo_closed refurb-evict -q big.idx
p01 | missing schedule | refurb-plan | 1 | refurb-plan: nofile: cannot open | refurb-plan -q nofile
p02 | empty schedule | refurb-plan | 1 | refurb-plan: empty: truncated | refurb-plan -q empty
p03 | truncated schedule | refurb-plan | 1 | refurb-plan: trunc.evict: truncated | refurb-plan -q trunc.evict
p04 | wrong magic (an index given) | refurb-plan | 1 | refurb-plan: train.idx: bad magic (not a refurb schedule) | refurb-plan -q train.idx
p05 | schedule from a future version | refurb-plan | 1 | refurb-plan: future.evict: schedule format version 9 | refurb-plan -q future.evict
p06 | corrupt schedule body | refurb-plan | 1 | refurb-plan: corrupt.evict: body checksum mismatch | refurb-plan -q corrupt.evict
p07 | a directory given for the schedule | refurb-plan | 1 | refurb-plan: adir: is a directory | refurb-plan -q adir
p08 | --index of another dataset | refurb-plan | 1 | refurb-plan: train.evict: schedule made for another index | refurb-plan -q --index big.idx train.evict
p09 | truncated --index | refurb-plan | 1 | refurb-plan: trunc.idx: truncated index | refurb-plan -q --index trunc.idx train.evict
p10 | FIFO closed by the reader | refurb-plan | 141 | (none) | fifo_closed refurb-plan -q -e 0-999 train.evict
a01 | missing index | refurb-partial | 1 | refurb-partial: nofile: cannot open | refurb-partial -q -c c-a01 -p resize=64 nofile < plan.txt
a02 | truncated index | refurb-partial | 1 | refurb-partial: trunc.idx: truncated index | refurb-partial -q -c c-a02 -p resize=64 trunc.idx < plan.txt
a03 | wrong magic (a schedule given) | refurb-partial | 1 | refurb-partial: train.evict: bad magic (not a refurb index) | refurb-partial -q -c c-a03 -p resize=64 train.evict < plan.txt
a04 | index from a future version | refurb-partial | 1 | refurb-partial: future.idx: index format version 9 | refurb-partial -q -c c-a04 -p resize=64 future.idx < plan.txt
a05 | a directory given for the index | refurb-partial | 1 | refurb-partial: adir: is a directory | refurb-partial -q -c c-a05 -p resize=64 adir < plan.txt
a06 | missing plan (-i) | refurb-partial | 1 | refurb-partial: nofile: cannot open | refurb-partial -q -c c-a06 -p resize=64 -i nofile train.idx
a07 | empty plan | refurb-partial | 1 | refurb-partial: empty: empty (no plan header line) | refurb-partial -q -c c-a07 -p resize=64 -i empty train.idx
a08 | not a plan (wrong magic) | refurb-partial | 1 | refurb-partial: garbage: line 1: not a refurb plan | refurb-partial -q -c c-a08 -p resize=64 -i garbage train.idx
a09 | plan from a future version | refurb-partial | 1 | refurb-partial: future.plan: line 1: plan format version 9 | refurb-partial -q -c c-a09 -p resize=64 -i future.plan train.idx
a10 | garbage plan line (bad sample id) | refurb-partial | 1 | refurb-partial: badid.plan: line 3: column 11: expected a sample id | refurb-partial -q -c c-a10 -p resize=64 -i badid.plan train.idx
a11 | garbage plan line (unknown type) | refurb-partial | 1 | refurb-partial: badtype.plan: line 3: unknown line type | refurb-partial -q -c c-a11 -p resize=64 -i badtype.plan train.idx
a12 | plan sample id beyond the index | refurb-partial | 1 | refurb-partial: beyond.plan: line 2: sample id 999, the index has 30 | refurb-partial -q -c c-a12 -p resize=64 -i beyond.plan train.idx
a13 | plan cut inside a line | refurb-partial | 1 | refurb-partial: cut.plan: line 4 has no newline | refurb-partial -q -c c-a13 -p resize=64 -i cut.plan train.idx
a14 | plan made for another index | refurb-partial | 1 | refurb-partial: (stdin): plan was made for another index | refurb-partial -q -c c-a14 -p resize=64 big.idx < plan.txt
a15 | cache made by another pipeline | refurb-partial | 1 | refurb-partial: cache: cache was made with a different pipeline | refurb-partial -q -c cache -p resize=32 train.idx < plan.txt
a16 | a file given for the cache directory | refurb-partial | 1 | refurb-partial: empty/lock: cannot open lock file: Not a directory | refurb-partial -q -c empty -p resize=64 train.idx < plan.txt
a17 | cache directory holding other files (no lock left) | refurb-partial | 1 | refurb-partial: ds: not a refurb cache and not empty | refurb-partial -q -c ds -p resize=64 train.idx < plan.txt; s=$?; [ -e ds/lock ] && exit 3; exit $s
a28 | the same with --reset (no lock left) | refurb-partial | 1 | refurb-partial: ds: not a refurb cache and not empty | refurb-partial -q --reset -c ds -p resize=64 train.idx < plan.txt; s=$?; [ -e ds/lock ] && exit 3; exit $s
a18 | cache from a future version | refurb-partial | 1 | refurb-partial: futurecache/manifest: cache format version 9 | refurb-partial -q -c futurecache -p resize=64 train.idx < plan.txt
a19 | pipeline spec error | refurb-partial | 2 | refurb-partial: bad pipeline spec at column 11: unknown filter "blur" | refurb-partial -q -c c-a19 -p resize=64,blur train.idx < plan.txt
a20 | normalize in the partial pipeline | refurb-partial | 2 | refurb-partial: the partial pipeline must produce 8-bit images | refurb-partial -q -c c-a20 -p resize=64,normalize train.idx < plan.txt
a21 | JPEG truncated since indexing | refurb-partial | 0 | refurb-partial: @/pb-trunc/c0/z.jpg: Premature end of JPEG file (sample | refurb-partial -q --max-bad 1 -c c-a21 -p resize=64 pb-trunc.idx < pb-trunc.plan
a22 | JPEG with an EOI inside its data | refurb-partial | 0 | refurb-partial: @/pb-scribble/c0/z.jpg: Corrupt JPEG data | refurb-partial -q --max-bad 1 -c c-a22 -p resize=64 pb-scribble.idx < pb-scribble.plan
a23 | image replaced by a non-JPEG | refurb-partial | 0 | refurb-partial: @/pb-notjpeg/c0/z.jpg: not a JPEG | refurb-partial -q --max-bad 1 -c c-a23 -p resize=64 pb-notjpeg.idx < pb-notjpeg.plan
a24 | image replaced by a directory | refurb-partial | 0 | refurb-partial: @/pb-dir/c0/z.jpg: not a regular file (sample | refurb-partial -q --max-bad 1 -c c-a24 -p resize=64 pb-dir.idx < pb-dir.plan
a25 | image deleted since indexing | refurb-partial | 0 | refurb-partial: @/pb-gone/c0/z.jpg: cannot open: No such file | refurb-partial -q --max-bad 1 -c c-a25 -p resize=64 pb-gone.idx < pb-gone.plan
a26 | --strict and a broken image | refurb-partial | 1 | refurb-partial: @/pb-trunc/c0/z.jpg: Premature end of JPEG file | refurb-partial -q --strict -c c-a26 -p resize=64 pb-trunc.idx < pb-trunc.plan
a27 | FIFO closed by the reader | refurb-partial | 0 | ~refurb-partial: the reader closed the stream at epoch | fifo_closed refurb-partial -c c-a27 -p resize=64 -i long.plan train.idx
a40 | dataset moved since indexing: nothing read | refurb-partial | 1 | refurb-partial: nothing read: all 4 images of the first batch failed, the first: @/pb-moved/c0/ | refurb-partial -q -c c-a40 -p resize=64 pb-moved.idx < pb-moved.plan
a41 | --root pointing to the wrong directory | refurb-partial | 1 | refurb-partial: nothing read: all 4 images of the first batch failed, the first: ds/c0/ | refurb-partial -q --root ds -c c-a41 -p resize=64 pb-moved.idx < pb-moved.plan
a42 | more than --max-bad images cannot be read (default 1%) | refurb-partial | 1 | ~refurb-partial: 1 image cannot be read, more than --max-bad 1% allows (0 of 6 samples per epoch), the first: @/pb-trunc/c0/z.jpg | refurb-partial -q -c c-a42 -p resize=64 pb-trunc.idx < pb-trunc.plan
a43 | --max-bad neither a percentage nor a count | refurb-partial | 2 | refurb-partial: --max-bad: | refurb-partial -q --max-bad 5x% -c c-a43 -p resize=64 pb-trunc.idx < pb-trunc.plan
a44 | partial output larger than a cache record: the image named | refurb-partial | 1 | refurb-partial: @/one/c0/z.jpg: the partial pipeline| refurb-partial -q -c c-a44 -p pad=4800 one.idx < one.plan
f01 | missing plan (-i) | refurb-final | 1 | refurb-final: nofile: cannot open | refurb-final -q -p crop=48 -i nofile
f02 | empty plan | refurb-final | 1 | refurb-final: empty: empty (no plan header line) | refurb-final -q -p crop=48 -i empty
f03 | not a plan (wrong magic) | refurb-final | 1 | refurb-final: garbage: line 1: not a refurb plan | refurb-final -q -p crop=48 -i garbage
f04 | annotated plan from a future version | refurb-final | 1 | refurb-final: future.ann: line 1: plan format version 9 | refurb-final -q -p crop=48 -i future.ann
f05 | plan not annotated by refurb-partial | refurb-final | 1 | refurb-final: plan.txt: header has no valid cache= | refurb-final -q -p crop=48 -i plan.txt
f06 | annotations stripped from a line | refurb-final | 1 | refurb-final: noaddr.ann: batch 0 of epoch 0: sample | refurb-final -q -p crop=48 -i noaddr.ann
f07 | garbage plan line | refurb-final | 1 | refurb-final: badid.ann: line 3: column 11: expected a sample id | refurb-final -q -p crop=48 -i badid.ann
f08 | plan cut inside a line | refurb-final | 1 | refurb-final: cut.ann: line 4 has no newline | refurb-final -q -p crop=48 -i cut.ann
f09 | plan ends early (partial died) | refurb-final | 1 | refurb-final: early.ann: ends in epoch 0, batch 2 (the header promises epochs 0-1); the program writing the plan stopped early (see its message), the stream is left without its END frame | refurb-final -q -p crop=48 -i early.ann
f10 | missing --index | refurb-final | 1 | refurb-final: nofile: cannot open | refurb-final -q -p crop=48 --index nofile -i ann.txt
f11 | truncated --index | refurb-final | 1 | refurb-final: trunc.idx: truncated index | refurb-final -q -p crop=48 --index trunc.idx -i ann.txt
f12 | wrong magic --index | refurb-final | 1 | refurb-final: train.evict: bad magic (not a refurb index) | refurb-final -q -p crop=48 --index train.evict -i ann.txt
f13 | --index from a future version | refurb-final | 1 | refurb-final: future.idx: index format version 9 | refurb-final -q -p crop=48 --index future.idx -i ann.txt
f14 | a directory given for --index | refurb-final | 1 | refurb-final: adir: is a directory | refurb-final -q -p crop=48 --index adir -i ann.txt
f15 | --index of another dataset | refurb-final | 1 | refurb-final: ann.txt: plan was made for another index than big.idx | refurb-final -q -p crop=48 --index big.idx -i ann.txt
f16 | cache made by another pipeline (-c) | refurb-final | 1 | refurb-final: cache32: the cache was made for another plan or pipeline | refurb-final -q -p crop=24 -c cache32 -i ann.txt
f17 | missing cache directory (-c) | refurb-final | 1 | refurb-final: nodir/manifest: cannot open | refurb-final -q -p crop=48 -c nodir -i ann.txt
f18 | cache from a future version | refurb-final | 1 | refurb-final: futurecache/manifest: cache format version 9 | refurb-final -q -p crop=48 -c futurecache -i ann.txt
f19 | pipeline spec error | refurb-final | 2 | refurb-final: bad pipeline spec at column 9: unknown filter "blur" | refurb-final -q -p crop=48,blur -i ann.txt
f20 | final pipeline without a fixed output size | refurb-final | 2 | refurb-final: pipeline "resize=48 | refurb-final -q -p resize=48 -i ann.txt
f21 | crop larger than the images | refurb-final | 1 | refurb-final: @/ds/class | refurb-final -q -p crop=4800 -i ann.txt
f22 | corrupt record: recomputed | refurb-final | 0 | refurb-final: sample 5: record recomputed from its image (@/fb-crc.c/0000000 | refurb-final -q -p crop=48 -i fb-crc.ann
f23 | record segments deleted: recomputed | refurb-final | 0 | refurb-final: sample | refurb-final -q -p crop=48 -i fb-gone.ann
f24 | corrupt record and broken image: left out | refurb-final | 0 | refurb-final: @/fb-both/c0/z.jpg: Premature end of JPEG file (sample | refurb-final -q -p crop=48 -i fb-both.ann
f25 | --strict and a corrupt record | refurb-final | 1 | refurb-final: @/fb-crc.c/0000000 | refurb-final -q --strict -p crop=48 -i fb-crc.ann
f26 | sample refurb-partial left out (@0) | refurb-final | 0 | (none) | refurb-final -q -p crop=48 -i fb-leftout.ann
f27 | FIFO closed by the reader | refurb-final | 0 | ~refurb-final: the reader closed the stream at epoch 0 | fifo_closed refurb-final -p crop=48 -i ann.txt
d01 | missing file | refurb-dump | 1 | refurb-dump: nofile: No such file or directory | refurb-dump -q nofile
d02 | empty file | refurb-dump | 1 | refurb-dump: empty: not a refurb file (unknown magic) | refurb-dump -q empty
d03 | wrong magic | refurb-dump | 1 | refurb-dump: garbage: not a refurb file (unknown magic) | refurb-dump -q garbage
d04 | truncated index | refurb-dump | 1 | refurb-dump: trunc.idx: truncated index | refurb-dump -q trunc.idx
d05 | index from a future version | refurb-dump | 1 | refurb-dump: future.idx: index format version 9 | refurb-dump -q future.idx
d06 | schedule from a future version | refurb-dump | 1 | refurb-dump: future.evict: schedule format version 9 | refurb-dump -q future.evict
d07 | plan from a future version | refurb-dump | 1 | refurb-dump: future.plan: line 1: plan format version 9 | refurb-dump -q future.plan
d08 | stream from a future version | refurb-dump | 1 | refurb-dump: future.bin: frame 0 at byte 0: batch stream format version 9 | refurb-dump -q future.bin
d09 | cache from a future version | refurb-dump | 1 | refurb-dump: futurecache/manifest: cache format version 9 | refurb-dump -q futurecache
d10 | a directory that is not a cache | refurb-dump | 1 | refurb-dump: adir: is a directory, but not a refurb cache | refurb-dump -q adir
d11 | garbage plan line | refurb-dump | 1 | refurb-dump: badid.plan: line 3: column 11: expected a sample id | refurb-dump -q badid.plan
d12 | stream cut inside a frame | refurb-dump | 1 | refurb-dump: cut.bin: frame 1 at byte 576: stream ends inside the frame | refurb-dump -q cut.bin
d13 | stream checksum mismatch | refurb-dump | 1 | refurb-dump: crc.bin: frame 1 at byte 576: payload checksum mismatch | refurb-dump -q crc.bin
d14 | corrupt index body | refurb-dump | 1 | refurb-dump: corrupt.idx: index body checksum mismatch | refurb-dump -q corrupt.idx
d15 | --verify of a cache with a corrupt record | refurb-dump | 1 | ~fb-crc.c: 5 records checked, 2 problems | refurb-dump -q --verify fb-crc.c >&2
d16 | --preview pipeline spec error | refurb-dump | 2 | refurb-dump: bad pipeline spec at column 6: missing argument | refurb-dump -q --preview crop= -o x.jpg ds/class000/img000000.jpg
d17 | --preview of a truncated JPEG | refurb-dump | 1 | refurb-dump: ix-trunc/c0/z.jpg: Premature end of JPEG file | refurb-dump -q --preview resize=32 -o x.jpg ix-trunc/c0/z.jpg
d18 | --preview of a non-JPEG | refurb-dump | 1 | refurb-dump: garbage: not a JPEG file | refurb-dump -q --preview resize=32 -o x.jpg garbage
d19 | FIFO closed by the reader | refurb-dump | 141 | (none) | fifo_closed refurb-dump -q big.idx
y01 | missing file | refurb_stream | 1 | refurb_stream: nofile: No such file or directory | stream_py check nofile
y02 | a directory | refurb_stream | 1 | refurb_stream: adir: Is a directory | stream_py check adir
y03 | wrong magic | refurb_stream | 1 | refurb_stream: magic.bin: frame 0 at byte 0: bad magic | stream_py check magic.bin
y04 | stream from a future version | refurb_stream | 1 | refurb_stream: future.bin: frame 0 at byte 0: format version 9 | stream_py check future.bin
y05 | stream cut inside a frame | refurb_stream | 1 | refurb_stream: cut.bin: frame 1 at byte 576: stream ends inside the frame | stream_py check cut.bin
y06 | stream checksum mismatch | refurb_stream | 1 | refurb_stream: crc.bin: frame 1 at byte 576: payload checksum mismatch | stream_py check crc.bin
y07 | stream with left-out samples (valid) | refurb_stream | 0 | (none) | stream_py check fb-leftout.bin > /dev/null
v01 | missing index | refurb-advise | 1 | refurb-advise: nofile: cannot open | refurb-advise -q -n 4 --repeat 1 -p resize=64,crop=48 nofile
v02 | truncated index | refurb-advise | 1 | refurb-advise: trunc.idx: truncated index | refurb-advise -q -n 4 --repeat 1 -p resize=64,crop=48 trunc.idx
v03 | wrong magic (a schedule given) | refurb-advise | 1 | refurb-advise: train.evict: bad magic (not a refurb index) | refurb-advise -q -n 4 --repeat 1 -p resize=64,crop=48 train.evict
v04 | index from a future version | refurb-advise | 1 | refurb-advise: future.idx: index format version 9 | refurb-advise -q -n 4 --repeat 1 -p resize=64,crop=48 future.idx
v05 | a directory given for the index | refurb-advise | 1 | refurb-advise: adir: is a directory | refurb-advise -q -n 4 --repeat 1 -p resize=64,crop=48 adir
v06 | pipeline spec error | refurb-advise | 2 | refurb-advise: bad pipeline spec at column 11: unknown filter "blur" | refurb-advise -q -p resize=64,blur train.idx
v07 | a cost file given for the index | refurb-advise | 1 | refurb-advise: train.costs: bad magic (not a refurb index) | refurb-advise -q -n 4 -p resize=64,crop=48 train.costs
p11 | --balance cost= a missing file | refurb-plan | 1 | refurb-plan: nofile: cannot open | refurb-plan -q -i train.idx --balance cost=nofile train.evict
p12 | --balance cost= garbage | refurb-plan | 1 | refurb-plan: garbage: bad magic (not a refurb cost file) | refurb-plan -q -i train.idx --balance cost=garbage train.evict
p13 | --balance cost= an index given | refurb-plan | 1 | refurb-plan: train.idx: bad magic (not a refurb cost file) | refurb-plan -q -i train.idx --balance cost=train.idx train.evict
p14 | --balance cost= a file of another index | refurb-plan | 1 | refurb-plan: train.costs: cost file made for another index than big.idx | refurb-plan -q -i big.idx --balance cost=train.costs big.evict
a29 | --costs of another pipeline | refurb-partial | 1 | refurb-partial: train.costs: cost file made for pipeline | refurb-partial -q -c c-a29 -p resize=32 --costs train.costs train.idx < plan.txt
'

# ---- running the rows ----

# fifo_closed CMD...: run CMD with stdout into a FIFO whose reader takes
# 10 bytes and closes it; the status is CMD's.
fifo_closed() {
	rm -f "$BATS_TEST_TMPDIR/fifo"
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	head -c 10 "$BATS_TEST_TMPDIR/fifo" > /dev/null &
	"$@" > "$BATS_TEST_TMPDIR/fifo"
}

# fifo_closed_path CMD...: the same, the FIFO's path given as CMD's
# last argument (refurb-index -o FIFO).
fifo_closed_path() {
	rm -f "$BATS_TEST_TMPDIR/fifo"
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	head -c 10 "$BATS_TEST_TMPDIR/fifo" > /dev/null &
	"$@" "$BATS_TEST_TMPDIR/fifo"
}

stream_py() {
	PYTHONPATH="$TOP/python" /usr/bin/python3 -m refurb_stream "$@"
}

# check_rows PROGRAM: run PROGRAM's rows of the matrix, report each one
# that differs, fail if any did.
check_rows() {
	local id what prog want prefix cmd got bad=0 rows=0
	while IFS="|" read -r id what prog want prefix cmd; do
		prog=$(echo $prog)
		[ "$prog" = "$1" ] || continue
		id=$(echo $id) want=$(echo $want)
		prefix="${prefix# }" prefix="${prefix% }" cmd="${cmd# }"
		prefix="${prefix//@\//$PWD/}"   # @/ is the fixture directory
		rows=$((rows + 1))
		got=0
		bash -c "$cmd" > /dev/null 2> "$BATS_TEST_TMPDIR/err" || got=$?
		if [ "$got" != "$want" ] || ! stderr_matches "$prefix"; then
			echo "$id ($what): $cmd"
			echo "    expected status $want and stderr '$prefix'"
			echo "    got status $got, stderr:"
			head -n 5 "$BATS_TEST_TMPDIR/err" | sed 's/^/        /'
			bad=1
		fi
	done <<< "$MATRIX"
	echo "$1: $rows rows"
	[ "$rows" -gt 0 ] && [ "$bad" -eq 0 ]
}

# stderr_matches PREFIX: the captured stderr against a stderr column.
stderr_matches() {
	local err="$BATS_TEST_TMPDIR/err"
	case "$1" in
	"(none)") [ ! -s "$err" ] ;;
	"~"*) awk -v p="${1#\~}" 'index($0, p) == 1 { ok = 1 } END { exit !ok }' "$err" ;;
	*) awk -v p="$1" 'NR == 1 { ok = index($0, p) == 1 } END { exit !ok }' "$err" ;;
	esac
}

# ---- the fixture ----

# corrupt_jpeg KIND SRC DST: a bad variant of the JPEG SRC.
corrupt_jpeg() {
	local size sof
	size=$(stat -c %s "$2")
	case "$1" in
	notjpeg) printf 'GIF89a%0100d' 0 > "$3" ;;
	hdrcut) head -c 100 "$2" > "$3" ;;
	empty) : > "$3" ;;
	trunc) head -c $((size / 2)) "$2" > "$3" ;;
	scribble) cp "$2" "$3"
		# an EOI marker in the middle of the entropy-coded data
		printf '\377\331' | dd of="$3" bs=1 seek=$((size / 2)) conv=notrunc 2> /dev/null ;;
	width0) cp "$2" "$3"
		sof=$(LC_ALL=C grep -obUaP '\xff[\xc0\xc1\xc2]' "$2" | cut -d: -f1 | sed -n 1p)
		printf '\0\0' | dd of="$3" bs=1 seek=$((sof + 7)) conv=notrunc 2> /dev/null ;;
	esac
}

# future FILE OUT: FILE with format version byte 9 (byte 7 of the magic).
future() {
	cp "$1" "$2"
	printf '\011' | dd of="$2" bs=1 seek=7 conv=notrunc 2> /dev/null
}

# flip FILE OFFSET: invert one byte of FILE.
flip() {
	printf '\377' | dd of="$1" bs=1 seek="$2" conv=notrunc 2> /dev/null
}

# small_set NAME KIND: NAME/c0 with 5 good images and z.jpg, indexed,
# planned (epoch 0, batches of 4); then z.jpg is broken as KIND says
# (a JPEG variant, "dir" or "gone"), as if it broke after indexing.
small_set() {
	mkdir -p "$1/c0"
	cp $(ls ds/class000/*.jpg | head -n 5) "$1/c0/"
	cp "$(sample_jpeg ds)" "$1/c0/z.jpg"
	refurb-index -q -o "$1.idx" "$1"
	refurb-evict -q -r 2 -o "$1.evict" "$1.idx"
	refurb-plan -q -b 4 -e 0 "$1.evict" > "$1.plan"
}

break_image() {
	case "$2" in
	dir) rm "$1/c0/z.jpg"; mkdir "$1/c0/z.jpg" ;;
	gone) rm "$1/c0/z.jpg" ;;
	*) corrupt_jpeg "$2" "$(sample_jpeg ds)" "$1/c0/z.jpg.new"
		mv "$1/c0/z.jpg.new" "$1/c0/z.jpg" ;;
	esac
}

# z_record CACHE SET: segment and offset of the record of SET/c0/z.jpg
z_record() {
	local id
	id=$(refurb-dump "$2.idx" | awk -F'\t' '!/^#/ && $8 ~ /z.jpg$/ { print $1 }')
	# (awk reads to the end: an early exit could kill refurb-dump with SIGPIPE)
	refurb-dump "$1" | awk -v s="$id" '!/^#/ && $4 == s && !n++ { print $1, $2 }'
}

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	make_train 30 3
	refurb-plan -q -b 8 -e 0-1 train.evict > plan.txt
	refurb-plan -q -b 8 -e 0-299 train.evict > long.plan
	refurb-partial -q -c cache -p resize=64 train.idx < plan.txt > ann.txt
	refurb-final -q -p crop=48 < ann.txt > s.bin
	refurb-partial -q -c cache32 -p resize=32 train.idx < plan.txt > /dev/null
	refurb-partial -q -c cache-costs -p resize=64 --costs train.costs train.idx \
		< plan.txt > /dev/null
	# plain bad files
	: > empty
	mkdir adir emptydir
	echo 'this is not a refurb file, nor a JPEG' > garbage
	head -c 50 train.idx > trunc.idx
	head -c 30 train.evict > trunc.evict
	future train.idx future.idx
	future train.evict future.evict
	future s.bin future.bin
	cp train.idx corrupt.idx
	flip corrupt.idx 100
	cp train.evict corrupt.evict
	flip corrupt.evict 70
	cp -r cache futurecache
	future cache/manifest futurecache/manifest
	printf 'a list line without a label\n' > garbage.list
	# a big index (24000 entries of one image) and list: outputs larger
	# than a pipe holds, for the FIFO rows
	seq 1 24000 | awk -v f="$(sample_jpeg ds)" '{ printf "%s\tc%d\n", f, $1 % 3 }' > big.list
	refurb-index -q --list big.list -o big.idx
	refurb-evict -q -r 3 -s 7 -o big.evict big.idx
	# bad plans and annotated plans
	sed '1s/^#refurb-plan 1/#refurb-plan 9/' plan.txt > future.plan
	sed '1s/^#refurb-plan 1/#refurb-plan 9/' ann.txt > future.ann
	{ head -n 2 plan.txt; echo "B 0 1 1 8 zz:m1 1:h"; } > badid.plan
	{ head -n 2 ann.txt; echo "B 0 1 1 8 zz:m1@1.2.3.4"; } > badid.ann
	{ head -n 2 plan.txt; echo "X hello"; } > badtype.plan
	{ head -n 1 plan.txt; sed -n 2p plan.txt | sed 's/ [0-9]*:/ 999:/'; } > beyond.plan
	{ head -n 3 plan.txt; sed -n 4p plan.txt | cut -c 1-20 | tr -d '\n'; } > cut.plan
	{ head -n 3 ann.txt; sed -n 4p ann.txt | cut -c 1-20 | tr -d '\n'; } > cut.ann
	head -n 3 ann.txt > early.ann
	sed '2s/@[0-9a-f.]*//g' ann.txt > noaddr.ann
	# bad streams
	head -c 5000 s.bin > cut.bin
	cp s.bin crc.bin
	flip crc.bin 5000
	{ printf 'NOTSTRM'; tail -c +8 s.bin; } > magic.bin
	# datasets with one bad JPEG at index time
	for k in notjpeg hdrcut width0 empty trunc; do
		mkdir -p "ix-$k/c0"
		cp $(ls ds/class000/*.jpg | head -n 2) "ix-$k/c0/"
		corrupt_jpeg "$k" "$(sample_jpeg ds)" "ix-$k/c0/z.jpg"
	done
	# a PNG of 100000x10 pixels among JPEGs
	mkdir -p ix-widepng/c0
	cp $(ls ds/class000/*.jpg | head -n 2) ix-widepng/c0/
	/usr/bin/python3 -c '
import struct, sys, zlib
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
w, h = 100000, 10
rows = zlib.compress(b"".join(b"\0" + bytes(w) for _ in range(h)))
sys.stdout.buffer.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
    + chunk(b"IDAT", rows) + chunk(b"IEND", b""))' > ix-widepng/c0/z.png
	# one image, for a partial pipeline whose output no record holds
	mkdir -p one/c0
	cp "$(sample_jpeg ds)" one/c0/z.jpg
	refurb-index -q -o one.idx one
	refurb-evict -q -r 2 -o one.evict one.idx
	refurb-plan -q -b 1 -e 0 one.evict > one.plan
	# images that broke after indexing (refurb-partial)
	for k in trunc scribble notjpeg dir gone; do
		small_set "pb-$k"
		break_image "pb-$k" "$k"
	done
	# a dataset moved after indexing
	small_set pb-moved
	mv pb-moved pb-moved-away
	# refurb-final's bad records: fb-crc a corrupt record, fb-gone its
	# segment deleted, fb-both a corrupt record whose image is broken too,
	# fb-leftout a sample refurb-partial left out
	for k in crc gone both leftout; do
		small_set "fb-$k"
		if [ "$k" = leftout ]; then break_image "fb-$k" trunc; fi
		refurb-partial -q --max-bad 1 -c "fb-$k.c" -p resize=64 "fb-$k.idx" < "fb-$k.plan" \
			> "fb-$k.ann" 2> /dev/null
	done
	set -- $(z_record fb-crc.c fb-crc)
	flip "fb-crc.c/$1.seg" $(($2 + 100))
	set -- $(z_record fb-both.c fb-both)
	flip "fb-both.c/$1.seg" $(($2 + 100))
	break_image fb-both trunc
	rm fb-gone.c/*.seg
	refurb-final -q -p crop=48 < fb-leftout.ann > fb-leftout.bin
}

setup() {
	cd "$BATS_FILE_TMPDIR"
	export -f fifo_closed fifo_closed_path stream_py
	export TOP BATS_TEST_TMPDIR
}

@test "matrix: refurb-index" { check_rows refurb-index; }
@test "matrix: refurb-evict" { check_rows refurb-evict; }
@test "matrix: refurb-plan" { check_rows refurb-plan; }
@test "matrix: refurb-partial" { check_rows refurb-partial; }
@test "matrix: refurb-final" { check_rows refurb-final; }
@test "matrix: refurb-dump" { check_rows refurb-dump; }
@test "matrix: refurb-advise" { check_rows refurb-advise; }
@test "matrix: refurb_stream check" { need_numpy; check_rows refurb_stream; }

@test "the matrix has a row for every program and every case it names" {
	# every case of issue 8 item 4, for the programs it concerns
	for pattern in 'ix-\|pb-' 'trunc.idx' 'garbage' 'future' 'badid\|badtype\|beyond\|cut.plan' \
		'cache32\|c cache ' '-p [a-z=0-9,]*blur' 'nofile\|nodir' 'adir' 'fifo_closed'; do
		grep -q -- "$pattern" <<< "$MATRIX" || { echo "no row for $pattern"; false; }
	done
	# ids are unique
	# (assigned first: a failing awk would leave an empty, passing string)
	dups=$(awk -F'|' 'NF > 1 { print $1 }' <<< "$MATRIX" | sort | uniq -d)
	[ -z "$dups" ]
	# every row has its six fields
	short=$(awk -F'|' 'NF > 1 && NF < 6' <<< "$MATRIX")
	[ -z "$short" ]
}
