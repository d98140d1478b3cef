"""Parameter sweeps: a scenario plus `[sweep]` axes expands to runs, which run in
parallel (a local process pool or a Dask cluster) into a result store
(`store.py`). Finished runs are never redone: each run's identity is the hash of
its fully resolved scenario, so an interrupted sweep resumes where it stopped and
changing one axis value reruns only what changed (`runkey.py`: fields left at
their defaults do not count, so new defaulted fields keep old stores valid).

```toml
[sweep]
repetitions = 5
"network.rtt" = ["25ms", "50ms", "100ms"]
"network.buffer" = { range = [20, 100, 20], format = "{}%bdp" }
"flows.0.cc" = ["reno", "cubic"]
```
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib
import itertools
import json
import math
import os
import signal
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from .constants import MTU_BYTES
from .pool import POLL_S
from .runkey import run_key
from .scenario import (
    ScenarioError,
    apply_override,
    check_key,
    load_scenario,
    read_toml,
    resolve,
)


@dataclass
class RunSpec:
    """One run of a sweep: its axis values, repetition, seed and resolved scenario."""

    params: dict
    repetition: int
    seed: int
    resolved: dict
    key: str = field(init=False)

    def __post_init__(self):
        self.key = run_key(self.resolved)


@dataclass
class Plan:
    name: str
    axes: dict[str, list]
    repetitions: int
    runs: list[RunSpec]

    def estimated_packets(self) -> int:
        """Upper bound on simulated bottleneck packets: rate x duration / MTU."""
        total = 0.0
        for r in self.runs:
            rate = max(h["rate_bps"] for h in r.resolved["network"]["hops"])
            total += rate * r.resolved["duration_ns"] / 1e9 / (MTU_BYTES * 8)
        return int(total)


def derive_seed(base: int, repetition: int) -> int:
    """Seed of repetition r: the same for every axis value (common random numbers
    across the grid), different across repetitions."""
    digest = hashlib.sha256(f"tcpeval/{base}/{repetition}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def repetition_seeds(sweep: dict, base_seed: int) -> list[int]:
    """Pops `repetitions` and `seeds` off a sweep table: the seed of each
    repetition. `seeds` lists them explicitly (a study keeping the seeds its
    published runs used); otherwise one repetition uses `run.seed` and several
    use seeds derived from it."""
    reps = sweep.pop("repetitions", None)
    seeds = sweep.pop("seeds", None)
    if reps is not None and (not isinstance(reps, int) or isinstance(reps, bool)
                             or not 1 <= reps <= MAX_PLAN_RUNS):
        raise ScenarioError(f"sweep.repetitions: must be a whole number in 1..{MAX_PLAN_RUNS}")
    if seeds is None:
        reps = reps or 1
        return [derive_seed(base_seed, r) for r in range(reps)] if reps > 1 else [base_seed]
    if not (isinstance(seeds, list) and 1 <= len(seeds) <= MAX_PLAN_RUNS and all(
            isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**63 for s in seeds)):
        raise ScenarioError(f"sweep.seeds: must be a list of 1..{MAX_PLAN_RUNS} whole numbers "
                            "in 0..2^63-1, one per repetition")
    if reps is not None and reps != len(seeds):
        raise ScenarioError(f"sweep.seeds: {len(seeds)} seeds for {reps} repetitions; give "
                            "one seed per repetition (or leave out repetitions)")
    return list(seeds)


# Runs of one plan: each holds its resolved scenario (a few kB) while the sweep
# plans and runs; a million would hold gigabytes.
MAX_PLAN_RUNS = 100_000


def axis_values(key: str, spec) -> list:
    """An axis: a list, or {range = [start, stop, step], format = "{}%bdp"}
    (stop included when the steps land on it)."""
    if isinstance(spec, list):
        if not spec:
            raise ScenarioError(f"sweep.{key}: an axis needs at least one value")
        return spec
    if isinstance(spec, dict) and "range" in spec:
        unknown = set(spec) - {"range", "format"}
        if unknown:
            raise ScenarioError(f"sweep.{key}: unknown key {sorted(unknown)[0]!r}; "
                                "allowed: range, format")
        import numpy as np

        start, stop, step = _range(key, spec["range"])
        n = int(np.floor((stop - start) / step + 1e-9)) + 1
        values = [start + i * step for i in range(n)]
        values = [int(v) if float(v).is_integer() else round(v, 12) for v in values]
        return _formatted(key, spec.get("format"), values)
    raise ScenarioError(f"sweep.{key}: give a list of values or a {{range = [start, stop, "
                        "step]}} table")


def _range(key: str, spec) -> tuple[float, float, float]:
    import numpy as np

    where = f"sweep.{key}.range"
    if not (isinstance(spec, list) and len(spec) == 3 and all(
            isinstance(v, int | float) and not isinstance(v, bool) and np.isfinite(v)
            for v in spec)):
        raise ScenarioError(f"{where}: give [start, stop, step], three finite numbers")
    start, stop, step = spec
    if step <= 0 or stop < start:
        raise ScenarioError(f"{where}: need step > 0 and stop >= start")
    if (stop - start) / step >= MAX_PLAN_RUNS:
        raise ScenarioError(f"{where}: more than {MAX_PLAN_RUNS} values; use a larger step")
    return start, stop, step


def _formatted(key: str, fmt, values: list) -> list:
    if fmt is None:
        return values
    if not isinstance(fmt, str):
        raise ScenarioError(f"sweep.{key}.format: must be a string such as '{{}}%bdp'")
    try:
        return [fmt.format(v) for v in values]
    except (ValueError, IndexError, KeyError, AttributeError) as e:
        raise ScenarioError(f"sweep.{key}.format: {fmt!r} is not a format with one "
                            f"{{}} ({e})") from None


def _toml_literal(value) -> str:
    return json.dumps(value) if isinstance(value, str) else (
        "true" if value is True else "false" if value is False else repr(value))


def plan(source: str | Path | dict, name: str | None = None) -> Plan:
    """Expand a sweep file into runs (validating every one)."""
    if isinstance(source, dict):
        data, name = copy.deepcopy(source), name or "sweep"
    else:
        data = read_toml(source, "sweep")
        name = name or Path(source).stem
    sweep = data.pop("sweep", {})
    if not isinstance(sweep, dict):
        raise ScenarioError("sweep: must be a table of axes")
    run = data.get("run", {})
    seeds = repetition_seeds(sweep, run.get("seed", 1) if isinstance(run, dict) else 1)
    reps = len(seeds)
    for key in sweep:
        try:
            check_key(key, extra=("repetitions", "seeds"))
        except ScenarioError as e:
            raise ScenarioError(f"sweep.{e}") from None
    axes = {k: axis_values(k, v) for k, v in sweep.items()}
    total = reps * math.prod(len(v) for v in axes.values())
    if total > MAX_PLAN_RUNS:
        raise ScenarioError(f"sweep: {total} runs (axes x repetitions); at most {MAX_PLAN_RUNS}")
    runs = []
    for combo in itertools.product(*axes.values()):
        params = dict(zip(axes, combo, strict=True))
        scenario = copy.deepcopy(data)
        for key, value in params.items():
            try:
                apply_override(scenario, f"{key}={_toml_literal(value)}")
            except ScenarioError as e:
                raise ScenarioError(f"sweep.{str(e).removeprefix('--set ')}") from None
        for rep in range(reps):
            seed = seeds[rep]
            try:
                resolved = resolve(load_scenario(scenario), seed=seed)
            except ScenarioError as e:
                # The field first (a one-line message names it), then the point.
                first, *rest = str(e).splitlines()
                raise ScenarioError("\n".join([f"{first} (at sweep point {params})", *rest])
                                    ) from None
            runs.append(RunSpec(params, rep, seed, resolved))
    return Plan(name, axes, reps, runs)


# ----- execution ------------------------------------------------------------------------


class SweepError(ValueError):
    """A bad execution option (--workers, --memory-limit, --dask) or a Dask
    scheduler that cannot be reached; the message names the option."""


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a sweep: `stats` has run_plan's counts plus `abandoned` (runs
    in flight, killed) and `not_started`."""

    def __init__(self, stats: dict):
        super().__init__(stats)
        self.stats = stats

    def __str__(self) -> str:
        s = self.stats
        return (f"interrupted: {s['done']} runs stored ({s['skipped']} were already in the "
                f"store), {s['failed']} failed, {s['abandoned']} in flight abandoned, "
                f"{s['not_started']} not started; run the same command again to resume")


def execute(spec: RunSpec):
    """Run one sweep point (in a worker process); returns (key, Result, None) or
    (key, None, error text)."""
    from .pool import memory_error
    from .run import build_result, run_backend

    try:
        raw, wall = run_backend(spec.resolved)
        if not raw.get("validity", {}).get("valid", True):
            # A testbed run that failed a validity gate is not a result.
            return spec.key, None, "invalid run: " + "; ".join(raw["validity"]["reasons"])
        return spec.key, build_result(spec.resolved, raw, wall), None
    except MemoryError as e:
        return spec.key, None, memory_error(e)
    except Exception as e:  # noqa: BLE001 - a failed run is recorded, not fatal
        return spec.key, None, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=5)}"


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)


def parse_memory_limit(text: str) -> int:
    """--memory-limit: a size such as "4GiB" or "16GB", or "unlimited" (0)."""
    from .pool import MIN_MEMORY_LIMIT, format_bytes
    from .units import UnitError, parse_size

    if text.strip().lower() == "unlimited":
        return 0
    try:
        size = parse_size(text)
    except UnitError as e:
        raise SweepError(f"--memory-limit: {e}, or 'unlimited'") from None
    if size < MIN_MEMORY_LIMIT:
        raise SweepError(f"--memory-limit: {text!r} is below the minimum of "
                         f"{format_bytes(MIN_MEMORY_LIMIT)} (a run needs about 1 GiB)")
    return size


def run_plan(p: Plan, store, *, workers: int | None = None, dask: str | None = None,
             memory_limit: int | None = None, progress=None) -> dict:
    """Run every not-yet-finished run of the plan into `store`. Returns counts
    {"total", "skipped", "done", "failed", "failures": [(params, error)]}.

    Local runs go to a pool of worker processes (`pool.Pool`): a run whose worker
    dies (abort, segfault, out of memory) is recorded as failed and the others go
    on. `memory_limit` caps each worker's address space in bytes (None: a share
    of physical memory, `pool.default_memory_limit`; 0: no cap). Ctrl-C stops the
    sweep at once, keeping every run already stored: raises SweepInterrupted."""
    if workers is not None and workers < 1:
        raise SweepError(f"--workers: {workers} is not allowed; give a whole number >= 1")
    todo = [r for r in p.runs if not store.has(r.key)]
    stats = {"total": len(p.runs), "skipped": len(p.runs) - len(todo), "done": 0,
             "failed": 0, "failures": []}
    by_key = {r.key: r for r in todo}
    with _ctrl_c() as interrupted, _runner(todo, workers, dask, memory_limit) as runner:
        store.record_sweep(p)
        if progress:
            progress.start(len(todo))
        tick = getattr(progress, "tick", None)
        try:
            for key, result, error in runner.results(interrupted.is_set, tick):
                _record(store, by_key[key], result, error, stats)
                if progress:
                    progress.advance(ok=error is None)
        finally:
            store.rebuild_index()
        if interrupted.is_set() and stats["done"] + stats["failed"] < len(todo):
            stats["abandoned"] = runner.in_flight()
    if "abandoned" in stats:
        stats["not_started"] = len(todo) - stats["done"] - stats["failed"] - stats["abandoned"]
        raise SweepInterrupted(stats)
    return stats


def _record(store, spec: RunSpec, result, error: str | None, stats: dict) -> None:
    if error is None:
        store.write(spec, result)
        stats["done"] += 1
    else:
        store.write_failure(spec, error)
        stats["failed"] += 1
        stats["failures"].append((spec.params, spec.repetition, error.splitlines()[0]))


@contextlib.contextmanager
def _ctrl_c():
    """While a sweep runs, Ctrl-C sets an event (checked by the runner's loop)
    instead of raising wherever the main thread happens to be, so a run being
    written is finished and counted. Only the main thread can handle signals."""
    event = threading.Event()
    # A sweep started with SIGINT ignored (in the background of a script, or
    # under a supervisor that ignores it) keeps ignoring it, as Python does.
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is signal.SIG_IGN):
        yield event
        return
    old = signal.signal(signal.SIGINT, lambda *_: event.set())
    try:
        yield event
    finally:
        signal.signal(signal.SIGINT, old)


def _runner(todo: list[RunSpec], workers: int | None, dask: str | None,
            memory_limit: int | None):
    if not todo:
        return _NothingToRun()
    if dask:
        return _DaskRunner(todo, dask)
    workers = min(workers or default_workers(), len(todo))
    if any(r.resolved["meta"]["backend"] == "testbed" for r in todo):
        workers = 1  # kernel runs share the machine's CPUs and would disturb each other
    return _PoolRunner(todo, workers, memory_limit)


class _NothingToRun(contextlib.nullcontext):
    def __enter__(self):
        return self  # nullcontext's would be None

    def results(self, stop, idle):
        return iter(())

    def in_flight(self) -> int:
        return 0


class _PoolRunner:
    """Local worker processes (one run at a time each)."""

    def __init__(self, todo: list[RunSpec], workers: int, memory_limit: int | None):
        from .pool import Pool, default_memory_limit

        # The run machinery (pandas, numpy, the engine) is imported here, before
        # the pool forks: every worker inherits it instead of importing it again.
        importlib.import_module(".run", __package__)
        if memory_limit is None:
            memory_limit = default_memory_limit(workers)
        self.todo = todo
        self.pool = Pool(execute, workers, memory_limit)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.pool.close()

    def results(self, stop, idle):
        for spec, ok, value in self.pool.map(self.todo, stop, idle):
            yield value if ok else (spec.key, None, value)

    def in_flight(self) -> int:
        return self.pool.busy


DASK_CONNECT_TIMEOUT = "10s"


class _DaskRunner:
    """dask.distributed: `local:N` starts a LocalCluster of N workers, anything
    else is a scheduler address. Workers compute and return results; the client
    writes them into the store (so workers need no shared disk)."""

    def __init__(self, todo: list[RunSpec], address: str):
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise SweepError("--dask: dask.distributed is not installed; "
                             "pip install 'tcpeval[dask]'") from None
        self.todo, self.pending, self.cluster = todo, set(), None
        if address.startswith("local:"):
            n = address.split(":", 1)[1]
            if n and not (n.isdigit() and int(n) >= 1):
                raise SweepError(f"--dask: {address!r}: local:N needs a whole number of "
                                 "workers >= 1 (e.g. local:4)")
            self.cluster = LocalCluster(n_workers=int(n or default_workers()),
                                        threads_per_worker=1, processes=True,
                                        dashboard_address=None)
        try:
            self.client = Client(self.cluster or address, timeout=DASK_CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError, TypeError) as e:
            self._close_cluster()
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise SweepError(f"--dask: cannot reach a Dask scheduler at {address!r} ({why}); "
                             "give the address of a running scheduler, or local:N") from None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pending:
            self.client.cancel(list(self.pending))
        self.client.close()
        self._close_cluster()

    def _close_cluster(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    def results(self, stop, idle):
        from dask.distributed import wait

        futures = self.client.map(execute, self.todo, pure=False)
        key_of = {f.key: spec.key for f, spec in zip(futures, self.todo, strict=True)}
        self.pending = set(futures)
        while self.pending and not stop():
            try:
                done, self.pending = wait(self.pending, timeout=POLL_S,
                                          return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            for fut in done:
                yield _dask_outcome(fut, key_of[fut.key])
            if idle:
                idle()

    def in_flight(self) -> int:
        running = sum(len(keys) for keys in self.client.processing().values())
        return min(len(self.pending), running)


def _dask_outcome(fut, key: str):
    """A finished future's (key, result, error); a worker that died running the
    run (KilledWorker after Dask's retries) makes the run fail, not the sweep."""
    try:
        return fut.result()
    except Exception as e:  # noqa: BLE001 - recorded as the run's failure
        return key, None, f"dask: {type(e).__name__}: {e}"
    finally:
        fut.release()


def seed_matters(resolved: dict) -> bool:
    """Whether the seed changes what the simulator does: random loss, RED's drops,
    background traffic or a sender's send overhead. (Start jitter is drawn into
    the start times, so it shows as configs that differ; the kernel testbed
    varies by itself.)"""
    links = resolved["network"]["hops"]
    return (resolved["meta"].get("backend", "sim") != "sim"
            or resolved["meta"].get("background") is not None
            or any(h["loss"] > 0 or h["queue"] == "red" for h in links)
            or any(f.get("send_overhead_ns") or f.get("send_jitter_ns")
                   for f in resolved["flows"]))


def copied_points(p: Plan) -> int:
    """Grid points whose repetitions would be identical runs: nothing random in
    them, and their configs differ only by the seed (`plan` lists each point's
    repetitions together)."""
    if p.repetitions < 2:
        return 0
    points = [p.runs[i:i + p.repetitions] for i in range(0, len(p.runs), p.repetitions)]
    return sum(len({run_key({**r.resolved, "seed": 0}) for r in runs}) == 1
               and not seed_matters(runs[0].resolved) for runs in points)


def describe(p: Plan) -> str:
    lines = [f"sweep {p.name}: {len(p.runs)} runs "
             f"({' x '.join(str(len(v)) for v in p.axes.values()) or '1'} points x "
             f"{p.repetitions} repetitions), about {p.estimated_packets():,} bottleneck packets"]
    for key, values in p.axes.items():
        lines.append(f"  {key}: {', '.join(map(str, values))}")
    copies = copied_points(p)
    if copies:
        lines.append(f"  note: {copies} point(s) have nothing random (no loss, RED, background "
                     "traffic, send overhead or send jitter), so their repetitions are "
                     "identical runs; give the flows a start_jitter, send_overhead or "
                     "send_jitter to make them differ")
    return "\n".join(lines)


