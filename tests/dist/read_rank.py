#!/usr/bin/python3
"""tests/dist/read_rank.py OUT INDEX CACHE [options] - read this rank's
batches through refurb_stream.launch (RANK/WORLD_SIZE from the
environment) and write one line per batch to OUT:

    epoch step count id,id,... sha1-of-labels-ids-and-pixels

--epochs E --start-epoch S --start-step K --reuse R --batch B --even MODE as launch();
--stop-after N: break out of the loop after N batches (the trainer
stops early); --crash-after N: raise after N batches (the trainer
crashes); --hang-after N: sleep forever after N batches (to be killed);
--fork-holder FILE: fork a child that holds the stream's pipe open and
sleeps 60 s (its pid in FILE), as a DataLoader worker would.
Exit status: 0, 3 on ChainError (its message on stderr), 4 on a crash."""
import argparse
import hashlib
import os
import sys
import time

from refurb_stream import ChainError, launch

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("index")
ap.add_argument("cache")
ap.add_argument("--epochs", type=int, default=3)
ap.add_argument("--start-epoch", type=int, default=0)
ap.add_argument("--start-step", type=int, default=0)
ap.add_argument("--reuse", type=int, default=2)
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--even", default="pad")
ap.add_argument("--partial", default="resize=32")
ap.add_argument("--final", default="crop=24,flip")
ap.add_argument("--stop-after", type=int, default=-1)
ap.add_argument("--crash-after", type=int, default=-1)
ap.add_argument("--hang-after", type=int, default=-1)
ap.add_argument("--fork-holder")
a = ap.parse_args()

n = 0
try:
    with open(a.out, "w") as out, \
            launch(a.index, a.cache, a.partial, a.final, reuse=a.reuse, epochs=a.epochs,
                   batch_size=a.batch, seed=7, start_epoch=a.start_epoch,
                   start_step=a.start_step,
                   even=a.even) as chain:
        if a.fork_holder:
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            with open(a.fork_holder, "w") as f:
                f.write("%d\n" % pid)
        for b in chain:
            h = hashlib.sha1(b.labels.tobytes() + b.ids.tobytes() + b.images.tobytes())
            out.write("%d %d %d %s %s\n" % (b.epoch, b.step, len(b.ids),
                                            ",".join(map(str, b.ids)), h.hexdigest()))
            out.flush()
            n += 1
            if n == a.stop_after:
                break
            if n == a.crash_after:
                raise RuntimeError("the trainer crashed")
            if n == a.hang_after:
                time.sleep(3600)
except ChainError as e:
    print("read_rank: %s" % e, file=sys.stderr)
    sys.exit(3)
except RuntimeError as e:
    print("read_rank: %s" % e, file=sys.stderr)
    sys.exit(4)
