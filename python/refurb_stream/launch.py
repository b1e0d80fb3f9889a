"""One refurb chain per distributed rank, started from the trainer.

    from refurb_stream import launch
    with launch("train.idx", "/local/refurb", "resize=256,randaug=n=2:m=9",
                "crop=224,flip", reuse=3, epochs=90, batch_size=64,
                seed=7) as chain:
        for images, labels, ids, epoch, step in chain:
            ...   # the same number of steps on every rank (--even pad)

launch() reads the rank from the environment (RANK, WORLD_SIZE and
LOCAL_RANK as torchrun sets them; SLURM_PROCID, SLURM_NTASKS and
SLURM_LOCALID under srun), and starts the rank's chain as child
processes:

    refurb-evict -r R -s SEED --shard K/N -o DIR/shard-K-of-N.evict INDEX
    refurb-plan -b B -e START-LAST --shard K/N --even pad ... \\
      | refurb-partial -j P -c DIR/shard-K-of-N -p PARTIAL INDEX \\
      | refurb-final -j F -p FINAL

so every rank has its own shard and its own cache under DIR (local disk
or /dev/shm), the same samples and batches per epoch as every other rank
(refurb-plan --even), and P + F worker threads from the CPUs this process
may run on (sched_getaffinity, shared among the LOCAL_WORLD_SIZE ranks of
the node when they all see the same CPUs).

Iterating yields the batches of refurb_stream.open_stream, with the
labels as int64 (as RefurbDataset's; the stream's are uint32).  Leaving the
`with` block, breaking out of the loop or an exception in the trainer
stops the chain: the stream is closed (refurb-final and refurb-partial
stop cleanly on a closed pipe), then stragglers get SIGTERM and SIGKILL
after a few seconds.  Every child also gets SIGTERM from the kernel if
the process that started it dies (PR_SET_PDEATHSIG), so a trainer killed
with kill -9, or by its launcher, leaves no refurb process behind.  The
cache survives any of these (refurb-cache(5) recovers it), so a rerun
with start_epoch=E continues with the same batches as an uninterrupted
run, and start_epoch=E, start_step=S at step S of epoch E (the steps
a checkpoint taken after step S - 1 has seen are not read again).
chain.state_dict() is such a checkpoint with the plan identity
(refurb_stream.identity): launch(..., state=it) resumes there and
refuses, with StreamError naming what differs, a chain whose options
change the batches (reuse, seed, batch size, pipelines ...).  A
chain that fails (a program exits non-zero or is killed) raises
ChainError naming the program, with the end of its stderr.

Start the chain from the thread that lives as long as the training (the
main thread): the kernel sends PR_SET_PDEATHSIG when the thread that
forked the child ends.
"""
import collections
import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time

import numpy as np

from . import StreamError, identity, open_stream

PROGRAMS = ("refurb-evict", "refurb-plan", "refurb-partial", "refurb-final")
_PR_SET_PDEATHSIG = 1

Rank = collections.namedtuple("Rank", "rank world_size local_rank local_world_size")


class ChainError(RuntimeError):
    """A program of the chain failed: .program, .status (negative: the
    signal that killed it), .stderr (its last lines)."""

    def __init__(self, program, status, stderr):
        self.program, self.status, self.stderr = program, status, stderr
        how = ("was killed by signal %d" % -status if status < 0
               else "exited with status %d" % status)
        super().__init__("%s %s%s" % (program, how,
                                      (":\n" + stderr.rstrip()) if stderr.strip() else ""))


class RanksDisagree(RuntimeError):
    """The ranks' streams do not come from one index, seeds and shard
    count (check_ranks_agree)."""


AGREED = ("index_identity", "plan_seed", "augment_seed", "shard_n", "epoch_images",
          "batch_size")


def check_ranks_agree(header, all_gather_object, world_size):
    """Raise RanksDisagree on every rank unless every rank's stream has
    rank 0's index identity, seeds, shard count, samples per epoch and
    batch size.  Call it once, on the first batch, with
    torch.distributed.all_gather_object: indexes that each node builds of
    its own copy of the shards agree only when the shards are listed in
    the same order, and another order silently gives the ranks
    overlapping shards (refurb(7), MULTIPLE NODES).  Not for
    even='none', whose ranks have different samples per epoch by
    design."""
    mine = {k: getattr(header, k) for k in AGREED}
    every = [None] * world_size
    all_gather_object(every, mine)
    for k, other in enumerate(every):
        for field in AGREED:
            if other[field] != every[0][field]:
                raise RanksDisagree(
                    "rank %d's stream has %s %r, rank 0's %r: the ranks must read one "
                    "index (built of the same files in the same order), with the same "
                    "seeds, shard count and batch size; refurb(7), MULTIPLE NODES"
                    % (k, field, other[field], every[0][field]))


def _env_int(names, default):
    for n in names:
        v = os.environ.get(n)
        if v not in (None, ""):
            try:
                return int(v)
            except ValueError:
                raise ValueError("%s=%r is not an integer" % (n, v)) from None
    return default


def rank_from_env():
    """The rank of this process: torchrun's variables, else Slurm's, else
    a single process (0 of 1)."""
    rank = _env_int(("RANK", "SLURM_PROCID"), 0)
    world = _env_int(("WORLD_SIZE", "SLURM_NTASKS"), 1)
    local = _env_int(("LOCAL_RANK", "SLURM_LOCALID"), 0)
    local_world = _env_int(("LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"), 1)
    if not 0 <= rank < world:
        raise ValueError("rank %d is not in 0..%d (WORLD_SIZE %d)" % (rank, world - 1, world))
    return Rank(rank, world, local, max(local_world, 1))


def cpus_for_rank(local_world_size=1):
    """CPUs this rank may use: its affinity mask, divided among the ranks
    of the node when the mask is the whole machine (every rank sees the
    same CPUs, as under torchrun); a launcher that binds each rank to its
    CPUs (Slurm's --cpus-per-task, taskset) is taken as it is."""
    mine = len(os.sched_getaffinity(0))
    if local_world_size > 1 and mine == (os.cpu_count() or mine):
        return max(1, mine // local_world_size)
    return max(1, mine)


def split_threads(cpus):
    """(refurb-partial -j, refurb-final -j): a miss costs about 10x a hit's
    final work, so about 3/4 of the CPUs go to refurb-partial."""
    partial = max(1, (3 * cpus + 3) // 4)
    return partial, max(1, cpus - partial)


def _pdeathsig(parent):
    """What the child runs before exec: SIGTERM when the parent dies, and
    exit if it died already (before prctl could take effect)."""
    libc = ctypes.CDLL(None, use_errno=True)   # loaded here, in the parent

    def child():
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)
    return child


def _program(bin_dir, name):
    if bin_dir:
        return os.path.join(bin_dir, name)
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError("%s is not on PATH (give bin_dir= or REFURB_BIN)" % name)
    return found


def _tail(f, limit=4000):
    f.flush()
    f.seek(0)
    text = f.read().decode("utf-8", "replace")
    return text[-limit:]


class RankChain:
    """The chain of one rank (see the module's doc).  Iterate once; use
    as a context manager, or call close()."""

    def __init__(self, index, cache_dir, partial, final, reuse, epochs, batch_size, seed,
                 start_epoch=0, start_step=0, even="pad", codec=None, threads=None, rank=None,
                 bin_dir=None, verify=False, stop_timeout=5.0, plan_args=(),
                 partial_args=(), final_args=(), state=None):
        if state is not None:       # a checkpoint: resume where it says
            want = (state["epoch"], state["step"])
            if (start_epoch, start_step) not in ((0, 0), want):
                raise ValueError("state is at epoch %d step %d, start_epoch and start_step "
                                 "say %d:%d: give one of them" % (want + (start_epoch, start_step)))
            start_epoch, start_step = want
        self._state, self._next = state, (start_epoch, start_step)
        if even not in ("pad", "drop", "none"):
            raise ValueError("even must be 'pad', 'drop' or 'none', not %r" % (even,))
        if not 0 <= start_epoch:
            raise ValueError("start_epoch %d < 0" % start_epoch)
        if not 0 <= start_step:
            raise ValueError("start_step %d < 0" % start_step)
        self.rank = rank if rank is not None else rank_from_env()
        k, n = self.rank.rank, self.rank.world_size
        self.shard = "%d/%d" % (k, n)
        self.first_epoch, self.last_epoch = start_epoch, epochs - 1
        self.cache = os.path.join(cache_dir, "shard-%d-of-%d" % (k, n))
        self.schedule = self.cache + ".evict"
        self.threads = threads or split_threads(cpus_for_rank(self.rank.local_world_size))
        self.verify, self.stop_timeout = verify, stop_timeout
        self.header, self.procs, self._errs = None, [], []
        self._stopping, self._iterated = False, False
        bin_dir = bin_dir or os.environ.get("REFURB_BIN")
        prog = {p: _program(bin_dir, p) for p in PROGRAMS}
        os.makedirs(cache_dir, exist_ok=True)
        self.commands = [
            [prog["refurb-evict"], "-q", "-r", str(reuse), "-s", str(seed), "--shard",
             self.shard, "-o", self.schedule, index],
            [prog["refurb-plan"], "-q", "-b", str(batch_size), "-e",
             "%d-%d" % (start_epoch, self.last_epoch), "--shard", self.shard,
             "--even", even] + (["--start", "%d:%d" % (start_epoch, start_step)]
                                 if start_step else []) + list(plan_args) + [self.schedule],
            [prog["refurb-partial"], "-q", "-j", str(self.threads[0]), "-c", self.cache,
             "-p", partial] + (["--codec", codec] if codec else []) + list(partial_args)
            + [index],
            # -c: the plan's header names the cache too; given here, every
            # program of a rank names its cache (ps, pgrep -f)
            [prog["refurb-final"], "-q", "-j", str(self.threads[1]), "-c", self.cache]
            + (["-p", final] if isinstance(final, str) else list(final)) + list(final_args),
        ]
        if start_epoch <= self.last_epoch:
            self._start()

    # ---- starting ----

    def _start(self):
        evict, die_with_me = self.commands[0], _pdeathsig(os.getpid())
        with tempfile.TemporaryFile() as err:
            status = subprocess.run(evict, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=err, preexec_fn=die_with_me).returncode
            if status:
                raise ChainError("refurb-evict", status, _tail(err))
        stdin = subprocess.DEVNULL
        try:
            for i, cmd in enumerate(self.commands[1:]):
                err = tempfile.TemporaryFile()
                self._errs.append(err)
                p = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=err,
                                     bufsize=0, preexec_fn=die_with_me)
                if stdin is not subprocess.DEVNULL:
                    stdin.close()   # the next program holds it now
                stdin = p.stdout if i < 2 else None
                self.procs.append(p)
        except BaseException:
            self.close()
            raise

    # ---- reading ----

    def __iter__(self):
        if self._iterated:
            raise RuntimeError("a rank's chain can be iterated once")
        self._iterated = True
        if not self.procs:
            return
        try:
            try:
                with open_stream(self.procs[-1].stdout, self.verify) as stream:
                    self.header = h = stream.header
                    if self._state is not None:
                        identity.check_plan("rank %s's chain (cache %s)" % (self.shard, self.cache),
                                            h, self._state, stacklevel=4)
                    for batch in stream:
                        self._next = (batch.epoch, batch.step + 1)
                        # int64 labels, as RefurbDataset's (torch 1.13's
                        # from_numpy refuses uint32)
                        yield batch._replace(labels=batch.labels.astype(np.int64))
            except StreamError as e:
                self._raise_failed(e)
                raise
            self._raise_failed(None, wait=True)
        finally:
            self.close()

    def state_dict(self):
        """{'epoch', 'step', 'plan', 'identity'}: the batch after the last
        one yielded and the plan identity (refurb_stream.identity), as
        RefurbDataset.state_dict(); launch(..., state=it) resumes there
        and refuses a chain of another plan.  Needs the stream's header:
        call it after the first batch."""
        if self.header is None:
            raise RuntimeError("state_dict() needs the stream's header: call it after "
                               "the first batch")
        return identity.checkpoint(self.header, *identity.position(self.header, *self._next))

    def _failure(self):
        """The program that made the chain fail, as (name, status), or
        None.  A program killed by a signal (but SIGPIPE) is the cause,
        the most upstream first; else the most upstream that exited
        non-zero.  A program upstream of a dead one dies of SIGPIPE, one
        downstream reports a truncated input: both only follow."""
        done = [(n, p.returncode) for n, p in zip(PROGRAMS[1:], self.procs)
                if p.returncode not in (None, 0)]
        for name, status in done:
            if status < 0 and status != -signal.SIGPIPE:
                return name, status
        for name, status in done:
            if status > 0:
                return name, status
        return done[0] if done else None

    def _raise_failed(self, cause, wait=False):
        """A failed program as ChainError; with wait, after all exit."""
        deadline = time.monotonic() + (self.stop_timeout * 4 if wait else self.stop_timeout)
        while time.monotonic() < deadline:
            if all(p.poll() is not None for p in self.procs):
                break
            if not wait and self._failure():
                break
            time.sleep(0.02)
        failed = self._failure()
        if failed:
            i = PROGRAMS[1:].index(failed[0])
            raise ChainError(failed[0], failed[1], _tail(self._errs[i])) from cause

    # ---- stopping ----

    def close(self):
        """Stop the chain (idempotent): close the stream, give the programs
        stop_timeout seconds to stop, then SIGTERM, then SIGKILL."""
        if self._stopping:
            return
        self._stopping = True
        if self.procs and self.procs[-1].stdout:
            self.procs[-1].stdout.close()   # refurb-final stops on EPIPE
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            for p in self.procs:
                if sig is not None and p.poll() is None:
                    p.send_signal(sig)
            deadline = time.monotonic() + self.stop_timeout
            while any(p.poll() is None for p in self.procs) and time.monotonic() < deadline:
                time.sleep(0.02)
            if all(p.poll() is not None for p in self.procs):
                break
        for f in self._errs:
            f.close()
        self._errs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def launch(index, cache_dir, partial, final, reuse, epochs, batch_size, seed, **kw):
    """Start this rank's chain and return it (a RankChain: iterate it for
    the batches; use it in a with block).  final is refurb-final's spec,
    or a list of its arguments (multi-crop: multicrop.Recipe.final_args,
    ['-g', '2:G1;G2', '-g', '8:L']; the batches' images are then a list
    of one array per view group).  epochs counts from 0: the chain
    plans epochs start_epoch .. epochs-1.  Keywords: start_epoch=0,
    start_step=0 (the first step of start_epoch: refurb-plan --start),
    even='pad' (or 'drop'; 'none' for unequal shards), codec=None (the
    cache's codec, refurb-partial --codec), threads=None ((partial, final)
    -j; default from the CPUs of the rank), rank=None (a Rank; default
    rank_from_env()), bin_dir=None (default $REFURB_BIN, then PATH),
    verify=False (pixel checksums), stop_timeout=5 seconds, plan_args,
    partial_args, final_args (more options for each program), state=None
    (a checkpoint of chain.state_dict(): start there, and raise
    StreamError naming what differs when this chain is of another plan)."""
    return RankChain(index, cache_dir, partial, final, reuse, epochs, batch_size, seed, **kw)
