"""Parameter sweeps: a scenario plus `[sweep]` axes expands to runs, which run in
parallel (a local process pool or a Dask cluster) into a result store
(`store.py`). Finished runs are never redone: each run's identity is the hash of
its fully resolved scenario, so an interrupted sweep resumes where it stopped and
changing one axis value reruns only what changed.

```toml
[sweep]
repetitions = 5
"network.rtt" = ["25ms", "50ms", "100ms"]
"network.buffer" = { range = [20, 100, 20], format = "{}%bdp" }
"flows.0.cc" = ["reno", "cubic"]
```
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .scenario import ScenarioError, apply_override, load_scenario, read_toml, resolve


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
        """Upper bound on simulated bottleneck packets: rate x duration / 1500 B."""
        total = 0.0
        for r in self.runs:
            net = r.resolved["network"]
            total += net["bottleneck_rate_bps"] * r.resolved["duration_ns"] / 1e9 / (1500 * 8)
        return int(total)


def run_key(resolved: dict) -> str:
    """Content hash of a resolved scenario (canonical JSON)."""
    text = json.dumps(resolved, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def derive_seed(base: int, repetition: int) -> int:
    """Seed of repetition r: the same for every axis value (common random numbers
    across the grid), different across repetitions."""
    digest = hashlib.sha256(f"tcpeval/{base}/{repetition}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


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
        try:
            start, stop, step = spec["range"]
        except (TypeError, ValueError):
            raise ScenarioError(f"sweep.{key}.range: give [start, stop, step]") from None
        if step <= 0 or stop < start:
            raise ScenarioError(f"sweep.{key}.range: need step > 0 and stop >= start")
        n = int(np.floor((stop - start) / step + 1e-9)) + 1
        values = [start + i * step for i in range(n)]
        values = [int(v) if float(v).is_integer() else round(v, 12) for v in values]
        fmt = spec.get("format")
        return [fmt.format(v) for v in values] if fmt else values
    raise ScenarioError(f"sweep.{key}: give a list of values or a {{range = [start, stop, "
                        "step]}} table")


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
    reps = sweep.pop("repetitions", 1)
    if not isinstance(reps, int) or reps < 1:
        raise ScenarioError("sweep.repetitions: must be a whole number >= 1")
    axes = {k: axis_values(k, v) for k, v in sweep.items()}
    base_seed = data.get("run", {}).get("seed", 1)
    runs = []
    for combo in itertools.product(*axes.values()):
        params = dict(zip(axes, combo, strict=True))
        scenario = copy.deepcopy(data)
        for key, value in params.items():
            try:
                apply_override(scenario, f"{key}={_toml_literal(value)}")
            except ScenarioError as e:
                raise ScenarioError(f"sweep.{key}: {e}") from None
        for rep in range(reps):
            seed = derive_seed(base_seed, rep) if reps > 1 else base_seed
            try:
                resolved = resolve(load_scenario(scenario), seed=seed)
            except ScenarioError as e:
                raise ScenarioError(f"sweep point {params}: {e}") from None
            runs.append(RunSpec(params, rep, seed, resolved))
    return Plan(name, axes, reps, runs)


# ----- execution ------------------------------------------------------------------------


def execute(spec: RunSpec):
    """Run one sweep point (in a worker process); returns (key, Result) or
    (key, error text)."""
    from .run import build_result, run_backend

    try:
        raw, wall = run_backend(spec.resolved)
        if not raw.get("validity", {}).get("valid", True):
            # A testbed run that failed a validity gate is not a result.
            return spec.key, None, "invalid run: " + "; ".join(raw["validity"]["reasons"])
        return spec.key, build_result(spec.resolved, raw, wall), None
    except Exception as e:  # noqa: BLE001 - a failed run is recorded, not fatal
        return spec.key, None, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=5)}"


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)


def run_plan(p: Plan, store, *, workers: int | None = None, dask: str | None = None,
             progress=None) -> dict:
    """Run every not-yet-finished run of the plan into `store`. Returns counts
    {"total", "skipped", "done", "failed", "failures": [(params, error)]}."""
    store.record_sweep(p)
    todo = [r for r in p.runs if not store.has(r.key)]
    stats = {"total": len(p.runs), "skipped": len(p.runs) - len(todo), "done": 0,
             "failed": 0, "failures": []}
    if progress:
        progress.start(len(todo))
    by_key = {r.key: r for r in todo}
    for key, result, error in _results(todo, workers, dask):
        spec = by_key[key]
        if error is None:
            store.write(spec, result)
            stats["done"] += 1
        else:
            store.write_failure(spec, error)
            stats["failed"] += 1
            stats["failures"].append((spec.params, spec.repetition, error.splitlines()[0]))
        if progress:
            progress.advance(ok=error is None)
    store.rebuild_index()
    return stats


def _results(todo: list[RunSpec], workers: int | None, dask: str | None):
    if not todo:
        return
    if dask:
        yield from _dask_results(todo, dask)
        return
    workers = workers or default_workers()
    if any(r.resolved["meta"]["backend"] == "testbed" for r in todo):
        workers = 1  # kernel runs share the machine's CPUs and would disturb each other
    if workers == 1:
        for spec in todo:
            yield execute(spec)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(execute, spec) for spec in todo]
        for fut in as_completed(futures):
            yield fut.result()


def _dask_results(todo: list[RunSpec], address: str):
    """Run on dask.distributed: `local:N` starts a LocalCluster of N workers,
    anything else is a scheduler address. Workers compute and return results;
    the client writes them into the store (so workers need no shared disk)."""
    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None
    if address.startswith("local:"):
        n = int(address.split(":", 1)[1] or default_workers())
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address)
    try:
        futures = client.map(execute, todo, pure=False)
        for fut in as_completed(futures):
            yield fut.result()
            fut.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def seed_matters(resolved: dict) -> bool:
    """Whether the seed changes what the simulator does: random loss, RED's drops,
    background traffic or a sender's send overhead. (Start jitter is drawn into
    the start times, so it shows as configs that differ; the kernel testbed
    varies by itself.)"""
    net = resolved["network"]
    links = [net, *(net.get("hops") or [])]
    return (resolved["meta"].get("backend", "sim") != "sim"
            or resolved["meta"].get("background") is not None
            or any(h["loss"] > 0 or h["queue"] == "red" for h in links)
            or any(f.get("send_overhead_ns") for f in resolved["flows"]))


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
                     "traffic or send overhead), so their repetitions are identical runs; give "
                     "the flows a start_jitter or a send_overhead to make them differ")
    return "\n".join(lines)


