"""Start a refurb chain beside the trainer, on a FIFO, and clean up.

    from refurb_stream import RefurbDataset
    from refurb_stream.chain import Chain

    with Chain("refurb-plan -b 256 -e 0-89 train.evict"
               " | refurb-partial -c cache -p 'resize=256,randaug=n=2:m=9' train.idx"
               " | refurb-final -p 'crop=224,flip' -o {fifo}") as fifo:
        ds = RefurbDataset(fifo)
        for epoch in range(90):
            for images, labels in ds:
                ...

Multi-crop (DINO's 2 global and 8 local crops, refurb_stream.multicrop):
refurb-final -g "2:$GLOBAL1;$GLOBAL2" -g "8:$LOCAL" -o {fifo}, and the
dataset's images are a list of two tensors, N,2,224,224,C and
N,8,96,96,C.

The command is run by /bin/sh in its own process group, with {fifo}
replaced by the path of a FIFO made in a fresh temporary directory (also
in the environment as REFURB_FIFO).  Leaving the `with` block stops what
is left of the chain (SIGTERM to its group: each program checkpoints and
exits cleanly), waits until every program of it has exited (so a chain
started next on the same cache finds it unlocked) and removes the FIFO.  A chain that exited
with a non-zero status raises ChainError, with its status, once the
block is left (the reader has already raised ChainStopped by then, and
the chain's own messages are on stderr).

However the trainer dies (kill -9, the OOM killer, scancel --signal=KILL),
the chain dies with it: a small watchdog process, started beside the
chain in a session of its own, sees the trainer gone (its parent
changes) within 0.2 s, stops the chain as leaving the block does
(SIGTERM, then SIGKILL after a few seconds), waits for its programs, so
that the cache is unlocked, and removes the FIFO and its directory.

This is the seam a launcher builds on (one chain per rank): Chain only
knows a command line and a FIFO.
"""
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time

# seconds the watchdog gives a chain whose trainer died before SIGKILL
WATCHDOG_GRACE = 3.0

# The watchdog (run by the trainer's Python, without site or torch):
# argv: trainer pid, the chain's process group, FIFO, its directory,
# grace seconds.  It waits until the trainer is gone (its parent is no
# longer the trainer: the kernel gave it to init or a subreaper), then
# stops the chain like Chain.stop and removes the FIFO and its directory.
_WATCHDOG = r"""
import os, shutil, signal, sys, time
trainer, group, fifo, tmp, grace = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                    sys.argv[4], float(sys.argv[5]))
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    signal.signal(s, signal.SIG_IGN)    # Chain.stop ends it with SIGKILL

def alive():
    try:
        os.killpg(group, 0)
        return True
    except ProcessLookupError:
        return False
    except OSError:
        return True

while os.getppid() == trainer:
    time.sleep(0.2)
if alive():
    try:
        os.killpg(group, signal.SIGTERM)
    except OSError:
        pass
    fd = -1
    deadline = time.monotonic() + grace
    while alive() and time.monotonic() < deadline:
        if fd < 0:              # a writer waiting for its reader, or blocked
            try:                # on a full FIFO, goes on and sees SIGTERM
                fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                pass
        try:
            if fd >= 0 and os.read(fd, 1 << 20):
                continue
        except OSError:
            pass
        time.sleep(0.01)
    if alive():
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + 5  # reaped by init, the cache unlocked
    while alive() and time.monotonic() < deadline:
        time.sleep(0.02)
shutil.rmtree(tmp, ignore_errors=True)
"""


class ChainError(RuntimeError):
    """The chain exited with a non-zero status."""


class Chain:
    def __init__(self, command, stop_timeout=30.0):
        self.command, self.stop_timeout = command, stop_timeout
        self.proc = self.dir = self.fifo = self.watchdog = None
        self.returncode = None

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="refurb-chain.")
        self.fifo = os.path.join(self.dir, "stream.fifo")
        os.mkfifo(self.fifo, 0o600)
        env = dict(os.environ, REFURB_FIFO=self.fifo)
        # the shell catches SIGTERM (its programs get the default action
        # back at exec) so that it outlives them: waiting for it then waits
        # for every program, and the next chain finds the cache unlocked
        cmd = "trap : TERM\n" + self.command.replace("{fifo}", shlex.quote(self.fifo))
        self.proc = subprocess.Popen(["/bin/sh", "-c", cmd], env=env,
                                     start_new_session=True)
        # in a session of its own: a signal to the trainer's process group
        # (Ctrl-C, a launcher's) does not end it before the trainer
        try:
            self.watchdog = subprocess.Popen(
                [sys.executable or "python3", "-S", "-c", _WATCHDOG, str(os.getpid()),
                 str(self.proc.pid), self.fifo, self.dir, str(WATCHDOG_GRACE)],
                stdin=subprocess.DEVNULL, start_new_session=True)
        except BaseException:
            self.stop()
            raise
        threading.Thread(target=self._unblock_reader, args=(self.proc, self.fifo),
                         daemon=True).start()
        return self.fifo

    @staticmethod
    def _unblock_reader(proc, fifo):
        """When the chain is gone, a reader still waiting to open the FIFO
        (the chain failed before opening it) gets an empty stream, and so
        an error, instead of waiting forever."""
        proc.wait()
        # the reader may not have opened the FIFO yet: keep knocking while
        # the FIFO is there (stop() removes it)
        while os.path.exists(fifo):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass        # no reader yet, or the FIFO is gone
            time.sleep(0.1)

    def stop(self):
        """Stop the chain if it still runs and wait until none of its
        programs is left (the cache is unlocked then); returns its exit
        status."""
        if self.proc is None:
            return self.returncode
        stopped = False
        if self.proc.poll() is None:
            stopped = True
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            if not self._drain_until_exit(time.monotonic() + self.stop_timeout):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # the shell may end before its pipeline (SIGTERM ends sh at once,
        # while refurb-partial still checkpoints the cache): wait for the
        # whole group, so that the cache is unlocked when stop() returns
        if not self._wait_group(time.monotonic() + self.stop_timeout):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self._wait_group(time.monotonic() + 5)  # reaped by init
        self.returncode = self.proc.returncode
        self.proc = None
        if self.watchdog is not None:   # the trainer lives: not needed now
            self.watchdog.kill()
            self.watchdog.wait()
            self.watchdog = None
        try:
            os.unlink(self.fifo)
            os.rmdir(self.dir)
        except OSError:
            pass
        # a chain stopped here is not a failed chain
        return 0 if stopped else self.returncode

    def _group_alive(self):
        """Whether a process of the chain's group is left (its shell is
        reaped already when this is asked)."""
        try:
            os.killpg(self.proc.pid, 0)
            return True
        except ProcessLookupError:
            return False
        except OSError:
            return True

    def _wait_group(self, deadline):
        """Wait until no process of the chain's group is left; True if
        none is."""
        return self._drain_while(self._group_alive, deadline)

    def _drain_until_exit(self, deadline):
        """Wait for the chain's shell until deadline; True if it exited."""
        return self._drain_while(lambda: self.proc.poll() is None, deadline)

    def _drain_while(self, running, deadline):
        """Wait while running() until deadline, reading and dropping what
        the chain still writes into the FIFO: refurb-final blocked on a
        reader that no longer reads would otherwise take its 5 s before
        exiting.  True if running() became false."""
        fd = -1
        try:
            while running():
                if time.monotonic() >= deadline:
                    return False
                if fd < 0:      # the FIFO may be gone, or not open yet
                    try:
                        fd = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
                    except OSError:
                        pass
                try:
                    if fd >= 0 and os.read(fd, 1 << 20):
                        continue
                except OSError:
                    pass
                time.sleep(0.01)
            return True
        finally:
            if fd >= 0:
                os.close(fd)

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        status = self.stop()
        if status and exc_type is None:
            raise ChainError("the refurb chain exited with status %d: %s"
                             % (status, self.command))
        return False
