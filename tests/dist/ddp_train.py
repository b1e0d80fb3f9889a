#!/usr/bin/python3
"""tests/dist/ddp_train.py OUT INDEX CACHE [options] - train a small CNN
with DistributedDataParallel (gloo, CPU) on batches from this rank's
refurb chain (refurb_stream.launch), as torchrun or srun starts it.

Every rank writes OUT/rank-K.log, one line per step:

    epoch step count id,id,... sha1-of-labels-ids-and-pixels

and OUT/rank-K.done ("steps S epochs A-B") when it finishes.  After
every epoch rank 0 saves OUT/checkpoint.pt (model, optimizer, the epoch
done); with --resume a run starts after the checkpoint's epoch
(start_epoch), so a job killed in epoch E continues there.

--epochs E --batch B --reuse R --even MODE; --partial/--final SPEC;
--chain-log FILE: append "RANK PIDS" of the chain's programs (for a test
that kills them); --step-sleep S: sleep S seconds after every step (a
slower trainer, so that a test can kill the job in the middle);
--rank1-index PATH: rank 1 reads PATH instead of INDEX (ranks that
disagree, which check_ranks_agree stops on the first batch).  Exit
status 0; 3 when the chain failed or the ranks disagree.
"""
import argparse
import hashlib
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from refurb_stream import ChainError, RanksDisagree, check_ranks_agree, launch

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("index")
ap.add_argument("cache")
ap.add_argument("--epochs", type=int, default=3)
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--reuse", type=int, default=2)
ap.add_argument("--even", default="pad")
ap.add_argument("--partial", default="resize=32")
ap.add_argument("--final", default="crop=28,flip")
ap.add_argument("--resume", action="store_true")
ap.add_argument("--chain-log")
ap.add_argument("--step-sleep", type=float, default=0)
ap.add_argument("--rank1-index")
a = ap.parse_args()

torch.set_num_threads(1)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(1)
nn = torch.nn
model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
    nn.Flatten(), nn.Linear(16 * 16, 3))
ddp = DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
ckpt_path = os.path.join(a.out, "checkpoint.pt")
start = 0
if a.resume and os.path.exists(ckpt_path):
    ckpt = torch.load(ckpt_path)
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
    start = ckpt["epoch"] + 1

log = open(os.path.join(a.out, "rank-%d.log" % rank), "a")
steps, batches_per_epoch = 0, None
try:
    index = a.rank1_index if rank == 1 and a.rank1_index else a.index
    with launch(index, a.cache, a.partial, a.final, reuse=a.reuse, epochs=a.epochs,
                batch_size=a.batch, seed=7, start_epoch=start, even=a.even) as chain:
        if a.chain_log:
            with open(a.chain_log, "a") as f:
                f.write("%d %s\n" % (rank, " ".join(str(p.pid) for p in chain.procs)))
        for b in chain:
            if batches_per_epoch is None:
                h = chain.header
                check_ranks_agree(h, dist.all_gather_object, world)
                batches_per_epoch = -(-h.epoch_images // h.batch_size)
            x = torch.from_numpy(b.images).permute(0, 3, 1, 2).float() / 255
            y = torch.from_numpy(b.labels.astype("int64"))
            loss = nn.functional.cross_entropy(ddp(x), y)
            opt.zero_grad()
            loss.backward()          # the all-reduce: every rank must get here
            opt.step()
            steps += 1
            digest = hashlib.sha1(b.labels.tobytes() + b.ids.tobytes() + b.images.tobytes())
            log.write("%d %d %d %s %s\n" % (b.epoch, b.step, len(b.ids),
                                            ",".join(map(str, b.ids)), digest.hexdigest()))
            log.flush()
            time.sleep(a.step_sleep)
            if b.step == batches_per_epoch - 1:
                if rank == 0:
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                                "epoch": b.epoch}, ckpt_path + ".tmp")
                    os.replace(ckpt_path + ".tmp", ckpt_path)
                dist.barrier()
except (ChainError, RanksDisagree) as e:
    print("ddp_train: rank %d: %s" % (rank, e), file=sys.stderr, flush=True)
    sys.exit(3)
with open(os.path.join(a.out, "rank-%d.done" % rank), "w") as f:
    f.write("steps %d epochs %d-%d\n" % (steps, start, a.epochs - 1))
dist.destroy_process_group()
