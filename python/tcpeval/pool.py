"""A pool of long-lived worker processes that outlives its workers' deaths.

`concurrent.futures.ProcessPoolExecutor` cannot survive a worker that dies
(every pending future ends with BrokenProcessPool), so one point that aborts the
engine, segfaults or exhausts memory would stop a whole sweep. Here each worker
takes one item at a time over its own pipe. When a worker dies, its item is
reported as failed with the reason and a new worker takes its place; nothing is
queued in a worker, so stopping the pool computes nothing more.

Workers are forked: they start with everything the parent imported (no import
cost per worker) and with its state (so a test can patch what a worker runs).
A fork copies only the forking thread, and a lock another thread held at that
moment stays locked in the child for ever, so the parent must not run other
Python threads while a pool is open: the sweep's progress bar is refreshed from
the pool's loop (`idle`), not by rich's refresh thread.

Each worker:
- ignores SIGINT: the terminal sends Ctrl-C to the whole process group, and the
  parent alone decides what happens;
- is killed by the kernel when the parent dies (PR_SET_PDEATHSIG), so a killed
  sweep leaves no worker behind;
- has its address space capped (RLIMIT_AS), so a runaway point fails on its own
  instead of growing until the kernel's OOM killer picks a victim;
- writes its stdout and stderr to a file of its own (not the parent's pipes);
  its last lines explain a death (Rust prints "memory allocation of N bytes
  failed" before aborting).
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe, wait

PR_SET_PDEATHSIG = 1  # include/uapi/linux/prctl.h
POLL_S = 0.25  # how often the loop checks `stop` and calls `idle`
STOP_GRACE_S = 5.0  # time a stopped worker gets to clean up (a testbed run tears down)
TAIL_BYTES = 2000  # of a dead worker's output, kept in its point's failure record
SEARCH_BYTES = 2**16  # searched for the engine's allocation failure
GIB = 2**30
MIN_MEMORY_LIMIT = 256 * 2**20


@dataclass
class _Worker:
    pid: int
    conn: Connection
    log: object  # the worker's stdout and stderr (a temporary file)
    item: object = None
    busy: bool = False


class Pool:
    """`workers` processes computing `fn(item)`; use as a context manager (leaving
    it stops the workers, killing those still busy)."""

    def __init__(self, fn: Callable, workers: int, memory_limit: int | None = None):
        self.fn, self.memory_limit = fn, memory_limit
        self.workers: list[_Worker] = []
        for _ in range(workers):
            self.workers.append(self._start())

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def busy(self) -> int:
        return sum(w.busy for w in self.workers)

    def map(self, items: Iterable, stop: Callable[[], bool] = lambda: False,
            idle: Callable[[], None] | None = None) -> Iterator[tuple[object, bool, object]]:
        """Yield (item, True, fn(item)) or (item, False, why it failed) in the
        order items finish. Returns early, leaving the rest undone, once `stop()`
        is true; `idle()` is called every POLL_S while waiting."""
        queue = list(items)
        queue.reverse()
        while not stop() and (queue or self.busy):
            for w in self.workers:
                if not w.busy and queue and not stop():
                    self._give(w, queue.pop())
            ready = wait([w.conn for w in self.workers if w.busy], timeout=POLL_S)
            for w in [w for w in self.workers if w.conn in ready]:
                yield self._collect(w)
            if idle:
                idle()

    def close(self) -> None:
        """Let idle workers exit; terminate busy ones (SIGTERM, then SIGKILL after
        STOP_GRACE_S) and reap them all."""
        for w in self.workers:
            if w.busy:
                _signal(w.pid, signal.SIGTERM)
            else:
                with contextlib.suppress(OSError):  # it died meanwhile
                    w.conn.send(None)
        deadline = time.monotonic() + STOP_GRACE_S
        for w in self.workers:
            _reap(w.pid, deadline)
            w.conn.close()
            w.log.close()
        self.workers = []

    # ----- one worker ----------------------------------------------------------------

    def _start(self) -> _Worker:
        ours, theirs = Pipe()
        log = tempfile.TemporaryFile()  # noqa: SIM115 - closed with the worker
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker: never returns
            siblings = [w.conn for w in self.workers]
            _serve(theirs, self.fn, self.memory_limit, parent, log.fileno(), [ours, *siblings])
        theirs.close()
        return _Worker(pid, ours, log)

    def _give(self, w: _Worker, item) -> None:
        w.item, w.busy = item, True
        with contextlib.suppress(OSError):  # it died while idle: _collect says so
            w.conn.send(item)

    def _collect(self, w: _Worker) -> tuple[object, bool, object]:
        item = w.item
        try:
            ok, value = w.conn.recv()
        except (EOFError, OSError):
            ok, value = False, self._death(w)
            self.workers[self.workers.index(w)] = self._start()
        w.item, w.busy = None, False
        return item, ok, value

    def _death(self, w: _Worker) -> str:
        _signal(w.pid, signal.SIGKILL)  # a broken pipe with the worker alive: end it
        status = _reap(w.pid, time.monotonic() + STOP_GRACE_S)
        output = _tail(w.log, SEARCH_BYTES)
        w.conn.close()
        w.log.close()
        return death_reason(status, output, self.memory_limit)


def _serve(conn: Connection, fn: Callable, memory_limit: int | None, parent: int,
           log_fd: int, inherited: list[Connection]) -> None:
    """The worker's life: take an item, send back (True, fn(item)) or (False,
    the error), until the parent sends None or goes away."""
    code = 0
    try:
        _die_with_parent(parent)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for c in inherited:  # the parent's ends of pipes: keep only our own
            c.close()
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        # Fresh stream objects: the parent's may hold buffered text or a lock.
        sys.stdout = sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        if faulthandler.is_enabled():  # its crash dumps belong in the log too
            faulthandler.enable(sys.stderr)
        if memory_limit:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
        while (item := conn.recv()) is not None:
            os.ftruncate(log_fd, 0)  # the log holds this item's output only
            os.lseek(log_fd, 0, os.SEEK_SET)
            try:
                reply = (True, fn(item))
            except BaseException as e:  # noqa: BLE001 - e.g. a Rust panic: this item fails
                reply = (False, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=5)}")
            conn.send(reply)
    except EOFError:
        pass  # the parent is gone
    except BaseException:  # noqa: BLE001 - say why in the log, which explains the death
        traceback.print_exc()
        code = 1
    finally:
        os._exit(code)


def _die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(0)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _reap(pid: int, deadline: float) -> int:
    """Wait for the worker to exit, killing it at the deadline; its wait status."""
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 0
        if done:
            return status
        if time.monotonic() >= deadline:
            _signal(pid, signal.SIGKILL)
            return os.waitpid(pid, 0)[1]
        time.sleep(0.01)


def _tail(log, n: int) -> str:
    size = os.fstat(log.fileno()).st_size
    return os.pread(log.fileno(), n, max(0, size - n)).decode(errors="replace").strip()


# ----- explaining failures ----------------------------------------------------------------


def death_reason(status: int, output: str, memory_limit: int | None) -> str:
    """One line saying why a worker died while running a point, then the end of
    its output."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        how = f"killed by signal {_signal_name(sig)}"
    else:
        sig, how = None, f"exited with status {os.WEXITSTATUS(status)}"
    failed_allocation = re.search(r"memory allocation of \d+ bytes failed", output)
    if memory_limit and failed_allocation:
        first = (f"exceeded the memory limit of {format_bytes(memory_limit)} per worker "
                 f"({failed_allocation[0]}, then its worker died: {how}); "
                 f"{raise_hint(memory_limit)}")
    elif sig == signal.SIGKILL:
        first = (f"worker died: {how} while running this point (by the kernel's "
                 "out-of-memory killer if memory ran out)")
    else:
        first = f"worker died: {how} while running this point"
    tail = output[-TAIL_BYTES:]
    return first + (f"\nits last output:\n{tail}" if tail else "")


def raise_hint(limit: int) -> str:
    return f"raise it with --memory-limit (e.g. --memory-limit {-(-2 * limit // GIB)}GiB)"


def memory_error(error: BaseException) -> str:
    """The message of a MemoryError raised in a worker, naming its limit."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return f"out of memory: {type(error).__name__}: {error}"
    return (f"exceeded the memory limit of {format_bytes(limit)} per worker "
            f"({type(error).__name__}: {error}); {raise_hint(limit)}")


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


def format_bytes(n: int) -> str:
    for unit, size in (("GiB", GIB), ("MiB", 2**20)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def default_memory_limit(workers: int) -> int:
    """An equal share of 80% of physical memory per worker, at least 4 GiB. A
    normal run's peak address space is about 1.5 GiB (the engine, numpy and
    pyarrow reserve more than they use) and fits in 0.6 GiB when capped."""
    return max(4 * GIB, int(0.8 * physical_memory() / max(1, workers)))
