#!/usr/bin/python3
"""demo_reader.py CACHEDIR STATS.tsv < STREAM - the trainer's side of `make demo`.

Reads refurb's batch stream from stdin the way a training loop would (numpy
views of each batch), and at the end prints one line per epoch: images,
cache misses (from refurb-final's --stats file), images per second seen
here, and the size of the cache directory when the epoch ended.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from refurb_stream import open_stream  # noqa: E402


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def main(cache, stats_path):
    rows, epoch, images, start = [], None, 0, time.monotonic()
    checksum = 0
    stream = open_stream(sys.stdin.buffer)
    for batch in stream:
        if batch.epoch != epoch:
            if epoch is not None:
                rows.append([epoch, images, time.monotonic() - start, dir_bytes(cache)])
            epoch, images, start = batch.epoch, 0, time.monotonic()
        images += len(batch.labels)
        checksum += int(batch.images[:, ::32, ::32].sum())  # touch the pixels
    rows.append([epoch, images, time.monotonic() - start, dir_bytes(cache)])
    misses = {}
    with open(stats_path) as f:
        next(f)
        for line in f:
            e, _, _, m = line.split("\t")[:4]
            misses[int(e)] = misses.get(int(e), 0) + int(m)
    h = stream.header
    print("stream: %dx%dx%d %s, %d classes" % (h.height, h.width, h.channels,
                                               h.dtype.name, len(h.classes)))
    print("%5s %7s %7s %9s %10s" % ("epoch", "images", "misses", "images/s", "cache MiB"))
    for e, n, secs, size in rows:
        print("%5d %7d %7d %9.0f %10.1f" % (e, n, misses.get(e, 0), n / secs, size / 2**20))


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    main(sys.argv[1], sys.argv[2])
