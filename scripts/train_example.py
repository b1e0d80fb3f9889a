#!/usr/bin/python3
"""scripts/train_example.py - a real refurb client: train a small CNN on
Fashion-MNIST with PyTorch (CPU), its training batches read from the
refurb chain through a pipe, and print the test accuracy after every
epoch and the wall time.

    scripts/get-fashion-mnist            # once: data/fashion-mnist/{train,test}
    /usr/bin/python3 scripts/train_example.py --setting refurb3 --epochs 12
    /usr/bin/python3 scripts/train_example.py --all --epochs 12   # every setting
    torchrun --standalone --nproc_per_node 2 --redirects 2 --tee 2 \
        scripts/train_example.py --ddp --setting refurb3 --epochs 12

Settings (augmentation: RandAugment(2, 9) on the 28x28 grayscale image,
then a random crop with 2 pixels of padding and a horizontal flip):

  standard    r = 1: partial 'gray,randaug=n=2:m=9', final 'crop=28:pad=2,flip'
  refurb2     the same split, r = 2 (balanced eviction, cache-aware shuffle)
  refurb3     the same split, r = 3
  echo3       data echoing, r = 3: every layer partial
              ('gray,randaug=n=2:m=9,crop=28:pad=2,flip'); the final
              pipeline is 'centercrop=28', a no-op that fixes the size
  simplified  r = 1, RandAugment removed: partial 'gray', final 'crop=28:pad=2,flip'

The chain is refurb-plan | refurb-partial | refurb-final, started by this
script with the same seed for every setting; the model, its
initialisation (--seed) and the optimizer (Adam, lr 1e-3, batch 128) are
the same in every setting, so only the augmentation differs.  The test
set (10000 images) is read with PIL, not augmented, and evaluated after
every epoch.  --subset N trains on the first N training images of the
index (a stratified slice: every class keeps its share).  Needs the
programs (make), /usr/bin/python3 with torch, numpy and PIL.

--ddp: one rank of a DistributedDataParallel job (gloo, CPU), started by
torchrun or srun (RANK and WORLD_SIZE from the environment; see refurb(7)
MULTIPLE NODES).  Each rank reads its own shard through its own chain,
refurb_stream.launch(): refurb-plan --shard RANK/WORLD_SIZE --even pad,
so every rank takes the same number of steps; caches under
WORK/ddp-SETTING/.  Rank 0 builds the index, evaluates and prints; the
batch size is per rank.  (--redirects 2 --tee 2 work around a crash of
Debian 12's torchrun with its defaults.)
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import time

import numpy as np

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "python"))
BIN = os.path.join(TOP, os.environ.get("BUILD", "build"), "bin")

SETTINGS = {
    "standard": (1, "gray,randaug=n=2:m=9", "crop=28:pad=2,flip"),
    "refurb2": (2, "gray,randaug=n=2:m=9", "crop=28:pad=2,flip"),
    "refurb3": (3, "gray,randaug=n=2:m=9", "crop=28:pad=2,flip"),
    "echo3": (3, "gray,randaug=n=2:m=9,crop=28:pad=2,flip", "centercrop=28"),
    "simplified": (1, "gray", "crop=28:pad=2,flip"),
}
MEAN, STD = 0.2860, 0.3530   # Fashion-MNIST pixel statistics


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--setting", choices=sorted(SETTINGS), default="refurb3")
    ap.add_argument("--all", action="store_true", help="run every setting, print a table")
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--data", default=os.path.join(TOP, "data", "fashion-mnist"))
    ap.add_argument("--subset", type=int, default=0, help="train on N images (0: all)")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads of refurb-partial, refurb-final and torch (default 1)")
    ap.add_argument("--seed", type=int, default=1, help="model initialisation seed")
    ap.add_argument("--aug-seed", type=int, default=7, help="refurb's seed")
    ap.add_argument("--work", default=os.path.join(TOP, "build", "train-example"))
    ap.add_argument("--ddp", action="store_true",
                    help="one rank of a DistributedDataParallel job (under torchrun or srun)")
    return ap.parse_args()


def run(cmd):
    subprocess.run(cmd, check=True)


def train_index(args):
    """The index of the training set (or of its stratified subset)."""
    os.makedirs(args.work, exist_ok=True)
    full = os.path.join(args.work, "train.idx")
    if not os.path.exists(full):
        run([os.path.join(BIN, "refurb-index"), "-q", "-o", full,
             os.path.join(args.data, "train")])
    if not args.subset:
        return full
    sub = os.path.join(args.work, "train-%d.idx" % args.subset)
    if not os.path.exists(sub):
        dump = subprocess.run([os.path.join(BIN, "refurb-dump"), full], check=True,
                              stdout=subprocess.PIPE, text=True).stdout.splitlines()
        head = [l for l in dump if l.startswith("#")]
        rows = [l for l in dump if not l.startswith("#")]
        step = len(rows) / args.subset
        keep = [rows[int(i * step)] for i in range(args.subset)]
        tsv = sub + ".tsv"
        with open(tsv, "w") as f:
            f.write("\n".join(head + keep) + "\n")
        run([os.path.join(BIN, "refurb-index"), "-q", "--from-tsv", tsv, "-o", sub])
    return sub


def chain(args, setting, index):
    """The refurb chain of a setting, as a shell pipeline."""
    r, partial, final = SETTINGS[setting]
    evict = os.path.join(args.work, "%s.evict" % setting)
    cache = os.path.join(args.work, "cache-%s" % setting)
    run([os.path.join(BIN, "refurb-evict"), "-q", "-r", str(r), "-s", str(args.aug_seed),
         "-o", evict, index])
    shutil.rmtree(cache, ignore_errors=True)
    q = lambda *argv: " ".join("'%s'" % a for a in argv)
    j = str(args.threads)
    return "%s | %s | %s" % (
        q(os.path.join(BIN, "refurb-plan"), "-q", "-b", str(args.batch),
          "-e", "0-%d" % (args.epochs - 1), evict),
        q(os.path.join(BIN, "refurb-partial"), "-q", "-j", j, "--codec", "raw",
          "-c", cache, "-p", partial, index),
        q(os.path.join(BIN, "refurb-final"), "-q", "-j", j, "-p", final)), cache


def load_test(args):
    """The test set as (N,1,28,28) float32 normalised, and labels."""
    from PIL import Image
    cached = os.path.join(args.work, "test.npz")
    if os.path.exists(cached):
        z = np.load(cached)
        return z["x"], z["y"]
    root = os.path.join(args.data, "test")
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    xs, ys = [], []
    for label, c in enumerate(classes):
        for name in sorted(os.listdir(os.path.join(root, c))):
            with Image.open(os.path.join(root, c, name)) as im:
                xs.append(np.asarray(im.convert("L")))
            ys.append(label)
    x = ((np.stack(xs)[:, None].astype(np.float32) / 255) - MEAN) / STD
    y = np.array(ys, np.int64)
    np.savez(cached, x=x, y=y)
    return x, y


def make_model(torch, seed):
    nn = torch.nn
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def evaluate(torch, model, x, y):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), 1000):
            out = model(torch.from_numpy(x[i:i + 1000]))
            correct += int((out.argmax(1) == torch.from_numpy(y[i:i + 1000])).sum())
    model.train()
    return correct / len(x)


def train(args, setting, index, test):
    import torch
    from refurb_stream import open_stream
    torch.set_num_threads(args.threads)
    model = make_model(torch, args.seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    cmd, cache = chain(args, setting, index)
    r, partial, final = SETTINGS[setting]
    print("train_example: %s: r=%d, partial '%s', final '%s'" % (setting, r, partial, final))
    print("  %s" % cmd.replace("' '", " ").replace("'", ""))
    print("%5s %10s %9s %9s %8s %9s" % ("epoch", "train_loss", "train_acc", "test_acc",
                                        "time_s", "wait_s"))
    t0 = time.monotonic()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    c0 = ru.ru_utime + ru.ru_stime
    proc = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE, bufsize=0)
    accs, stats = [], [0.0, 0, 0, 0.0]   # loss sum, correct, seen, input wait
    epoch, tw = 0, time.monotonic()

    def end_epoch(e):
        acc = evaluate(torch, model, *test)
        accs.append(acc)
        print("%5d %10.4f %9.4f %9.4f %8.1f %9.1f" % (
            e, stats[0] / max(stats[2], 1), stats[1] / max(stats[2], 1), acc,
            time.monotonic() - t0, stats[3]), flush=True)
        stats[:] = [0.0, 0, 0, 0.0]

    with open_stream(proc.stdout) as stream:
        for b in stream:
            stats[3] += time.monotonic() - tw
            if b.epoch != epoch:
                end_epoch(epoch)
                epoch = b.epoch
            x = torch.from_numpy(b.images).permute(0, 3, 1, 2).float()
            x = (x / 255 - MEAN) / STD
            y = torch.from_numpy(b.labels.astype(np.int64))
            out = model(x)
            loss = loss_fn(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            stats[0] += float(loss) * len(y)
            stats[1] += int((out.argmax(1) == y).sum())
            stats[2] += len(y)
            tw = time.monotonic()
        end_epoch(epoch)
    if proc.wait() != 0:
        sys.exit("train_example: the refurb chain failed")
    wall = time.monotonic() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    chain_cpu = ru.ru_utime + ru.ru_stime - c0
    shutil.rmtree(cache, ignore_errors=True)
    print("train_example: %s: final test accuracy %.4f (best %.4f), wall %.1f s, "
          "the refurb chain used %.1f CPU-s\n"
          % (setting, accs[-1], max(accs), wall, chain_cpu))
    return dict(setting=setting, r=r, partial=partial, final=final, acc=accs[-1],
                best=max(accs), wall=wall, accs=accs, chain_cpu=chain_cpu)


def train_ddp(args, setting, index, test):
    """One rank: its shard through its own chain (launch), the model in
    DistributedDataParallel; rank 0 evaluates and prints."""
    import torch
    import torch.distributed as dist
    from refurb_stream import check_ranks_agree, launch
    torch.set_num_threads(args.threads)
    rank, world = dist.get_rank(), dist.get_world_size()
    model = make_model(torch, args.seed)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    r, partial, final = SETTINGS[setting]
    cache = os.path.join(args.work, "ddp-%s" % setting)
    if rank == 0:
        shutil.rmtree(cache, ignore_errors=True)
        print("train_example: %s: r=%d, %d ranks, each a shard and a chain "
              "(refurb-plan --even pad), batch %d per rank" % (setting, r, world, args.batch))
        print("%5s %10s %9s %9s %8s" % ("epoch", "train_loss", "train_acc", "test_acc",
                                        "time_s"))
    dist.barrier()
    t0, accs, stats, steps = time.monotonic(), [], torch.zeros(3), 0
    with launch(index, cache, partial, final, reuse=r, epochs=args.epochs,
                batch_size=args.batch, seed=args.aug_seed,
                threads=(args.threads, args.threads), bin_dir=BIN) as chain:
        per_epoch = None
        for b in chain:
            if per_epoch is None:
                check_ranks_agree(chain.header, dist.all_gather_object, world)
                per_epoch = -(-chain.header.epoch_images // chain.header.batch_size)
            # NCHW strides: DDP's gradient buckets expect that layout
            # (.contiguous() keeps a 1-channel permute's strides, which
            # torch takes for channels-last: a warning on every rank)
            x = torch.from_numpy(b.images).permute(0, 3, 1, 2).float().clone(
                memory_format=torch.contiguous_format)
            x = (x / 255 - MEAN) / STD
            y = torch.from_numpy(b.labels.astype(np.int64))
            out = ddp(x)
            loss = loss_fn(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            stats += torch.tensor([float(loss) * len(y), int((out.argmax(1) == y).sum()), len(y)])
            if b.step == per_epoch - 1:
                dist.all_reduce(stats)
                if rank == 0:
                    accs.append(evaluate(torch, model, *test))
                    print("%5d %10.4f %9.4f %9.4f %8.1f" % (
                        b.epoch, stats[0] / stats[2], stats[1] / stats[2], accs[-1],
                        time.monotonic() - t0), flush=True)
                stats.zero_()
                dist.barrier()
    if rank == 0:
        print("train_example: %s: final test accuracy %.4f (best %.4f), %d steps per rank, "
              "wall %.1f s\n" % (setting, accs[-1], max(accs), steps, time.monotonic() - t0))
    return dict(setting=setting, r=r, partial=partial, final=final, acc=accs[-1] if accs else 0,
                best=max(accs) if accs else 0, wall=time.monotonic() - t0, accs=accs,
                chain_cpu=float("nan"))


def main_ddp(args):
    import torch.distributed as dist
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        subprocess.run(["make", "-s", "-C", TOP, "all"], check=True, stdout=subprocess.DEVNULL)
        if not os.path.isdir(os.path.join(args.data, "train")):
            sys.exit("train_example: no %s/train: run scripts/get-fashion-mnist" % args.data)
        index = train_index(args)
    dist.barrier()      # rank 0 has built the programs and the index
    if rank != 0:
        index = train_index(args)
    test = load_test(args) if rank == 0 else None
    settings = list(SETTINGS) if args.all else [args.setting]
    for s in settings:
        train_ddp(args, s, index, test)
    dist.destroy_process_group()


def main():
    args = parse_args()
    if args.ddp:
        return main_ddp(args)
    subprocess.run(["make", "-s", "-C", TOP, "all"], check=True, stdout=subprocess.DEVNULL)
    if not os.path.isdir(os.path.join(args.data, "train")):
        sys.exit("train_example: no %s/train: run scripts/get-fashion-mnist" % args.data)
    index = train_index(args)
    test = load_test(args)
    n = sum(1 for l in subprocess.run([os.path.join(BIN, "refurb-dump"), index],
                                      stdout=subprocess.PIPE, text=True).stdout.splitlines()
            if not l.startswith("#"))
    print("train_example: %d training images%s, %d test images, %d epochs, batch %d, "
          "%d thread(s), seed %d" % (n, " (subset)" if args.subset else "", len(test[1]),
                                     args.epochs, args.batch, args.threads, args.seed))
    settings = list(SETTINGS) if args.all else [args.setting]
    results = [train(args, s, index, test) for s in settings]
    if len(results) > 1:
        print("| setting | r | partial | final | test acc (last epoch) | best epoch "
              "| wall s | chain CPU-s |")
        print("|---|---|---|---|---|---|---|---|")
        for r in results:
            print("| %s | %d | `%s` | `%s` | %.4f | %.4f | %.0f | %.1f |" % (
                r["setting"], r["r"], r["partial"], r["final"], r["acc"], r["best"],
                r["wall"], r["chain_cpu"]))


if __name__ == "__main__":
    main()
