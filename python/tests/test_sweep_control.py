"""Sweeps under control (issue 26, part B): a point that kills its worker or
exceeds its memory cap fails alone, Ctrl-C stops at once and says what was
kept, and workers die with their parent.

Crashes and slow points are injected by patching `run_backend` before the pool
forks its workers (they inherit the patch): in this process for run_plan, in a
wrapper around the CLI for the signal tests."""

import importlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import types

import numpy as np
import pytest
from typer.testing import CliRunner

from tcpeval import sweep as sw
from tcpeval.cli import app
from tcpeval.store import Store

run_mod = importlib.import_module("tcpeval.run")  # not the package's run() function

RTTS = ["20ms", "30ms", "40ms"]
DOC = {
    "network": {"bottleneck": "20Mbps", "rtt": "40ms"},
    "flows": [{"cc": "reno", "count": 2, "start": ["0s", "1s"]}],
    "run": {"duration": "3s", "measure_from": "1s", "seed": 7},
    "sweep": {"network.rtt": RTTS},
}
ROGUE_RTT_NS = 30_000_000  # the 30 ms point is the one that misbehaves


def patch_rogue(monkeypatch, misbehave):
    real = run_mod.run_backend

    def backend(resolved):
        if resolved["flows"][0]["rtt_ns"] == ROGUE_RTT_NS:
            misbehave()
        return real(resolved)

    monkeypatch.setattr(run_mod, "run_backend", backend)


def failure_of(store: Store, rtt: str) -> str:
    [record] = [json.loads(p.read_text()) for p in (store.root / "failed").glob("*.json")]
    assert record["params"] == {"network.rtt": rtt}
    return record["error"]


def vm_size() -> int:
    with open("/proc/self/status") as f:
        [line] = [line for line in f if line.startswith("VmSize:")]
    return int(line.split()[1]) * 1024


def rust_out_of_memory():
    """What Rust does when an allocation fails: print, then abort."""
    os.write(2, b"memory allocation of 68719476736 bytes failed\n")
    os.abort()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_point_that_kills_its_worker_fails_alone_and_the_sweep_goes_on(
        tmp_path, monkeypatch, workers):
    patch_rogue(monkeypatch, os.abort)  # an engine abort (a Rust panic in a destructor, ...)
    store = Store(tmp_path / "s")
    stats = sw.run_plan(sw.plan(DOC), store, workers=workers)
    assert (stats["done"], stats["failed"]) == (2, 1)
    error = failure_of(store, "30ms")
    assert error.startswith("worker died: killed by signal SIGABRT while running this point")
    idx = store.index()
    assert sorted(idx.status) == ["failed", "ok", "ok"]
    # Fixed: the rerun computes only the failed point.
    monkeypatch.undo()
    stats = sw.run_plan(sw.plan(DOC), store, workers=workers)
    assert (stats["skipped"], stats["done"], stats["failed"]) == (2, 1, 0)
    stats = sw.run_plan(sw.plan(DOC), store, workers=workers)  # nothing left: no pool
    assert (stats["skipped"], stats["done"], stats["failed"]) == (3, 0, 0)


def test_a_worker_that_exits_is_reported_with_its_status_and_last_output(tmp_path, monkeypatch):
    def leave():
        print("giving up: the sky fell", file=sys.stderr, flush=True)
        os._exit(3)

    patch_rogue(monkeypatch, leave)
    store = Store(tmp_path / "s")
    stats = sw.run_plan(sw.plan(DOC), store, workers=1)
    assert (stats["done"], stats["failed"]) == (2, 1)
    error = failure_of(store, "30ms")
    assert error.splitlines()[0] == "worker died: exited with status 3 while running this point"
    assert "giving up: the sky fell" in error


def test_a_python_exception_that_is_not_an_exception_fails_only_its_point(tmp_path, monkeypatch):
    class Panic(BaseException):  # like pyo3's PanicException
        pass

    def panic():
        raise Panic("engine panicked")

    patch_rogue(monkeypatch, panic)
    store = Store(tmp_path / "s")
    stats = sw.run_plan(sw.plan(DOC), store, workers=1)
    assert (stats["done"], stats["failed"]) == (2, 1)
    assert failure_of(store, "30ms").startswith("Panic: engine panicked")


def test_a_point_over_the_memory_limit_fails_naming_the_limit(tmp_path, monkeypatch):
    limit = (vm_size() // 2**30 + 2) * 2**30  # room for a normal run, not for 8 GiB more

    def hog():
        np.empty(limit + 8 * 2**30, dtype=np.uint8)

    patch_rogue(monkeypatch, hog)
    store = Store(tmp_path / "s")
    stats = sw.run_plan(sw.plan(DOC), store, workers=2, memory_limit=limit)
    assert (stats["done"], stats["failed"]) == (2, 1)
    error = failure_of(store, "30ms")
    assert error.startswith(f"exceeded the memory limit of {limit // 2**30} GiB per worker")
    assert "raise it with --memory-limit" in error.splitlines()[0]


def test_an_engine_allocation_failure_is_reported_as_the_memory_limit(tmp_path, monkeypatch):
    patch_rogue(monkeypatch, rust_out_of_memory)
    store = Store(tmp_path / "s")
    stats = sw.run_plan(sw.plan(DOC), store, workers=1, memory_limit=16 * 2**30)
    assert (stats["done"], stats["failed"]) == (2, 1)
    first = failure_of(store, "30ms").splitlines()[0]
    assert first == ("exceeded the memory limit of 16 GiB per worker (memory allocation of "
                     "68719476736 bytes failed, then its worker died: killed by signal SIGABRT); "
                     "raise it with --memory-limit (e.g. --memory-limit 32GiB)")


def test_the_default_memory_limit_is_a_share_of_memory_with_a_floor():
    from tcpeval.pool import GIB, default_memory_limit, physical_memory

    assert default_memory_limit(1) == max(4 * GIB, int(0.8 * physical_memory()))
    assert default_memory_limit(10**6) == 4 * GIB


@pytest.mark.parametrize("args,message", [
    (["--memory-limit", "lots"], "--memory-limit: bad size 'lots'"),
    (["--memory-limit", "4MiB"], "--memory-limit: '4MiB' is below the minimum of 256 MiB"),
    (["--dask", "local:abc"], "--dask: 'local:abc': local:N needs a whole number"),
])
def test_bad_execution_options_are_one_line_exit_2(tmp_path, args, message):
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(toml(DOC))
    res = CliRunner().invoke(app, ["sweep", str(sweep_file), "--out", str(tmp_path / "s"), *args])
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split())
    assert "Traceback" not in res.output
    assert not list((tmp_path / "s").glob("runs/*"))


def test_run_plan_refuses_a_pool_without_workers(tmp_path):
    with pytest.raises(sw.SweepError, match="^--workers: 0 is not allowed"):
        sw.run_plan(sw.plan(DOC), Store(tmp_path / "s"), workers=0)


def test_an_unreachable_dask_scheduler_is_one_line(tmp_path, monkeypatch):
    pytest.importorskip("dask.distributed")
    monkeypatch.setattr(sw, "DASK_CONNECT_TIMEOUT", "1s")
    with pytest.raises(sw.SweepError, match=r"^--dask: cannot reach a Dask scheduler at "
                                            r"'tcp://127.0.0.1:1' \(.*\); give"):
        sw.run_plan(sw.plan(DOC), Store(tmp_path / "s"), dask="tcp://127.0.0.1:1")


def test_a_dask_worker_that_died_fails_its_run_not_the_sweep():
    distributed = pytest.importorskip("dask.distributed")

    class Dead:
        released = False

        def result(self):
            worker = types.SimpleNamespace(address="tcp://10.0.0.1:4000")
            raise distributed.KilledWorker("execute-123", worker, 3)

        def release(self):
            self.released = True

    fut = Dead()
    key, result, error = sw._dask_outcome(fut, "k1")
    assert (key, result) == ("k1", None) and error.startswith("dask: KilledWorker:")
    assert fut.released


def test_ctrl_c_in_run_plan_stops_before_the_next_point(tmp_path):
    """Deterministic: the progress callback sends SIGINT after the first stored
    run; with one worker nothing else is in flight, so nothing more runs."""

    class InterruptAfterFirst:
        def start(self, total):
            pass

        def advance(self, ok):
            os.kill(os.getpid(), signal.SIGINT)

    store = Store(tmp_path / "s")
    # As in an interactive shell (a test run in the background inherits SIGINT
    # ignored, and a sweep keeps an ignored SIGINT ignored).
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(sw.SweepInterrupted) as info:
            sw.run_plan(sw.plan(DOC), store, workers=1, progress=InterruptAfterFirst())
        restored = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)
    s = info.value.stats
    assert (s["done"], s["failed"], s["abandoned"], s["not_started"]) == (1, 0, 0, 2)
    assert len(list((store.root / "runs").iterdir())) == 1
    assert len(store.index()) == 1  # the index was rebuilt with the stored run
    assert "interrupted: 1 runs stored" in str(info.value)
    assert restored is signal.default_int_handler  # the sweep's own handler is gone


# ----- the CLI under signals ----------------------------------------------------------------

def test_a_sweep_started_with_ctrl_c_ignored_keeps_ignoring_it(tmp_path):
    """A sweep in the background of a script inherits SIGINT ignored; like any
    Python program it must not take Ctrl-C then (nor leave a handler behind)."""

    class Interrupt:
        def start(self, total):
            pass

        def advance(self, ok):
            os.kill(os.getpid(), signal.SIGINT)

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        stats = sw.run_plan(sw.plan(DOC), Store(tmp_path / "s"), workers=1,
                            progress=Interrupt())
        after = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)
    assert (stats["done"], stats["failed"]) == (3, 0) and after is signal.SIG_IGN


# The CLI with every run slowed down by SLOW_S seconds, each worker writing its
# pid into PID_DIR when it starts a run.
SLOW_CLI = textwrap.dedent("""
    import importlib, os, sys, time
    run = importlib.import_module("tcpeval.run")
    real = run.run_backend
    def slow(resolved):
        open(os.path.join(os.environ["PID_DIR"], str(os.getpid())), "w").close()
        time.sleep(float(os.environ["SLOW_S"]))
        return real(resolved)
    run.run_backend = slow
    from tcpeval.cli import app
    app(sys.argv[1:], prog_name="tcpeval")
""")


def slow_cli(tmp_path, slow_s: float, *args, **popen):
    pids = tmp_path / "pids"
    pids.mkdir(exist_ok=True)
    env = {**os.environ, "PID_DIR": str(pids), "SLOW_S": str(slow_s)}
    return subprocess.Popen([sys.executable, "-c", SLOW_CLI, *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_interactive_sigint, **popen)


def _interactive_sigint() -> None:
    """The child starts with Ctrl-C handled as in an interactive shell, even when
    the tests run in the background (which ignores SIGINT, and so would the
    sweep)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def twelve_run_sweep(tmp_path):
    doc = {**DOC, "sweep": {"network.rtt": [f"{ms}ms" for ms in range(20, 80, 5)]}}
    path = tmp_path / "sweep.toml"
    path.write_text(toml(doc))
    return path


def stored(store) -> set[str]:
    return {p.name for p in (store / "runs").iterdir() if not p.name.startswith(".")}


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_ctrl_c_stops_a_cli_sweep_at_once_and_a_rerun_finishes_it(tmp_path):
    path, store = twelve_run_sweep(tmp_path), tmp_path / "store"
    args = ["sweep", str(path), "--out", str(store), "--workers", "2"]
    # Its own session: Ctrl-C at a terminal goes to the whole process group.
    proc = slow_cli(tmp_path, 1.0, *args, start_new_session=True)
    wait_for(lambda: (store / "runs").is_dir() and stored(store))
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=15)
    took = time.monotonic() - t0
    assert proc.returncode == 130, err
    m = re.search(r"interrupted: (\d+) runs stored \(0 were already in the store\), 0 failed, "
                  r"(\d+) in flight abandoned, (\d+) not started; run the same command again "
                  r"to resume", err)
    assert m, err
    done, abandoned, not_started = map(int, m.groups())
    assert done == len(stored(store)) >= 1 and abandoned <= 2
    # Nothing queued was computed: 12 runs of 1 s on 2 workers leave most unstarted.
    assert done + abandoned + not_started == 12 and not_started >= 2
    assert not list((store / "failed").iterdir())
    assert took < 10, f"took {took:.1f} s to stop"  # about 0.2 s
    print(f"stopped {took:.2f} s after SIGINT")
    # A rerun computes the rest and only the rest.
    rerun = slow_cli(tmp_path, 0, *args)
    out, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err
    assert f"{12 - done} run, {done} already in the store, 0 failed" in out
    assert len(Store(store).index()) == 12


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for a reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_killing_a_sweep_kills_its_workers(tmp_path):
    path, store = twelve_run_sweep(tmp_path), tmp_path / "store"
    proc = slow_cli(tmp_path, 30.0, "sweep", str(path), "--out", str(store), "--workers", "2")
    pid_dir = tmp_path / "pids"
    wait_for(lambda: len(list(pid_dir.iterdir())) == 2)  # both workers are in a run
    workers = [int(p.name) for p in pid_dir.iterdir()]
    assert all(alive(pid) for pid in workers)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=5)  # EOF on stdout and stderr: no worker holds them
    wait_for(lambda: not any(alive(pid) for pid in workers), timeout=3)


def toml(doc) -> str:
    lines = []
    for table in ("network", "run", "sweep"):
        lines.append(f"[{table}]")
        lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in doc[table].items()]
    for f in doc["flows"]:
        lines.append("[[flows]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in f.items()]
    return "\n".join(lines) + "\n"
