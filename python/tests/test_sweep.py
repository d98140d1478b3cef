"""Sweeps and the result store (issue 7)."""

import importlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcpeval import sweep as sw
from tcpeval.scenario import ScenarioError
from tcpeval.store import Store

BASE = {
    "network": {"bottleneck": "20Mbps", "rtt": "40ms"},
    "flows": [{"cc": "reno", "count": 2, "start": ["0s", "1s"]}],
    "run": {"duration": "4s", "measure_from": "1s", "seed": 7},
}


def sweep_doc(**axes):
    return {**BASE, "sweep": {"repetitions": 2, **axes}}


def test_axes_expand_to_the_product_times_repetitions():
    p = sw.plan(sweep_doc(**{"network.rtt": ["20ms", "40ms"],
                             "network.buffer": {"range": [20, 100, 40], "format": "{}%bdp"}}))
    assert p.axes["network.buffer"] == ["20%bdp", "60%bdp", "100%bdp"]
    assert len(p.runs) == 2 * 3 * 2
    assert len({r.key for r in p.runs}) == 12
    # Seeds depend on the repetition only (common random numbers across the grid).
    seeds = {(r.repetition, r.seed) for r in p.runs}
    assert len(seeds) == 2 and {r.seed for r in p.runs} == {sw.derive_seed(7, 0),
                                                            sw.derive_seed(7, 1)}
    r0 = p.runs[0]
    # 20% of the BDP of 20 Mbit/s x 20 ms (50 kB) = 10 kB = 6.7 packets, rounded up
    assert r0.resolved["network"]["hops"][0]["buffer_pkts"] == 7



@given(seeds=st.lists(st.integers(0, 2**63 - 1), min_size=1, max_size=4))
@settings(max_examples=10, deadline=None)
def test_explicit_seeds_are_the_repetitions_seeds(seeds):
    """`seeds` gives each repetition its seed (a study keeping its runs' seeds):
    one run per seed and point, in order, each resolved with its seed."""
    p = sw.plan({**BASE, "sweep": {"seeds": seeds, "network.rtt": ["20ms", "40ms"]}})
    assert p.repetitions == len(seeds) and len(p.runs) == 2 * len(seeds)
    assert [(r.repetition, r.seed) for r in p.runs] == [*enumerate(seeds)] * 2
    assert all(r.resolved["seed"] == r.seed for r in p.runs)


@pytest.mark.parametrize("sweep,message", [
    ({"seeds": []}, "sweep.seeds: must be a list"),
    ({"seeds": [1, "2"]}, "sweep.seeds: must be a list"),
    ({"seeds": [1, -1]}, "sweep.seeds: must be a list"),
    ({"seeds": [1, 2], "repetitions": 3}, "sweep.seeds: 2 seeds for 3 repetitions"),
])
def test_bad_seeds_name_the_field(sweep, message):
    with pytest.raises(ScenarioError, match=message):
        sw.plan({**BASE, "sweep": sweep})

@pytest.mark.parametrize("change,copies", [
    ({}, 2),                                                    # nothing random: copies
    ({"network": {**BASE["network"], "loss": 1e-4}}, 0),        # random loss
    ({"network": {**BASE["network"], "queue": "red"}}, 0),      # RED's random drops
    ({"flows": [{**BASE["flows"][0], "start_jitter": "40ms"}]}, 0),
    ({"flows": [{**BASE["flows"][0], "send_overhead": "10us"}]}, 0),
])
def test_the_plan_says_when_repetitions_would_be_copies(change, copies):
    p = sw.plan({**sweep_doc(**{"network.rtt": ["20ms", "40ms"]}), **change})
    assert sw.copied_points(p) == copies
    assert ("identical runs" in sw.describe(p)) == (copies > 0)


def test_changing_one_axis_value_changes_only_its_runs():
    a = sw.plan(sweep_doc(**{"network.rtt": ["20ms", "40ms"]}))
    b = sw.plan(sweep_doc(**{"network.rtt": ["20ms", "60ms"]}))
    shared = {r.key for r in a.runs} & {r.key for r in b.runs}
    assert len(shared) == 2  # the 20 ms runs (2 repetitions)


@pytest.mark.parametrize("axes,message", [
    ({"network.rtt": []}, "at least one value"),
    ({"network.rtt": {"range": [5, 1, 1]}}, "stop >= start"),
    ({"network.nope": [1]}, "network.nope: unknown key"),
    ({"flows.0.cc": ["reno", "bogus"]}, "unknown algorithm 'bogus'"),
])
def test_bad_axes_are_reported_before_anything_runs(axes, message):
    with pytest.raises(ScenarioError, match=message):
        sw.plan(sweep_doc(**axes))


def test_a_failing_run_is_recorded_and_the_others_finish(tmp_path, monkeypatch):
    # `tcpeval.run` is also the package's run() function: take the module itself.
    run_mod = importlib.import_module("tcpeval.run")
    real = run_mod.run_backend

    def flaky(resolved):
        if resolved["flows"][0]["rtt_ns"] == 20_000_000:
            raise RuntimeError("injected failure")
        return real(resolved)

    monkeypatch.setattr(run_mod, "run_backend", flaky)
    p = sw.plan(sweep_doc(**{"network.rtt": ["20ms", "40ms"]}))
    store = Store(tmp_path / "s")
    stats = sw.run_plan(p, store, workers=1)
    assert (stats["done"], stats["failed"]) == (2, 2)
    idx = store.index()
    assert sorted(idx.status) == ["failed", "failed", "ok", "ok"]
    assert idx[idx.status == "failed"].error.str.contains("injected failure").all()
    # Fixed: the rerun runs only the failed ones and clears their failure records.
    monkeypatch.setattr(run_mod, "run_backend", real)
    stats = sw.run_plan(p, store, workers=1)
    assert (stats["skipped"], stats["done"], stats["failed"]) == (2, 2, 0)
    assert list((tmp_path / "s" / "failed").iterdir()) == []


def write_sweep(tmp_path, runs_axis):
    doc = sweep_doc(**{"network.buffer": runs_axis})
    doc["run"]["duration"] = "60s"
    doc["network"]["bottleneck"] = "100Mbps"
    path = tmp_path / "sweep.toml"
    path.write_text(_toml(doc))
    return path


def _toml(doc) -> str:
    lines = []
    for table in ("network", "run", "sweep"):
        lines.append(f"[{table}]")
        for k, v in doc[table].items():
            key = f'"{k}"' if "." in k else k
            lines.append(f"{key} = {json.dumps(v)}")
    for f in doc["flows"]:
        lines.append("[[flows]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in f.items()]
    return "\n".join(lines) + "\n"


def sweep_cmd(path, store, *extra):
    return [sys.executable, "-m", "tcpeval.cli", "sweep", str(path), "--out", str(store), *extra]


def test_a_killed_sweep_resumes_without_losing_or_repeating_runs(tmp_path):
    path = write_sweep(tmp_path, [f"{n}pkt" for n in range(50, 850, 50)])  # 32 runs
    store = tmp_path / "store"
    proc = subprocess.Popen(sweep_cmd(path, store, "--workers", "1"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    runs = store / "runs"
    deadline = time.time() + 60
    while time.time() < deadline:
        done = [p for p in runs.glob("*/summary.json") if not p.parent.name.startswith(".")]
        if len(done) >= 4:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    finished_before = {p.parent.name for p in runs.glob("*/summary.json")
                       if not p.parent.name.startswith(".")}
    assert 4 <= len(finished_before) < 32, "the kill must land mid-sweep"
    mtimes = {k: (runs / k / "summary.json").stat().st_mtime_ns for k in finished_before}
    rerun = subprocess.run(sweep_cmd(path, store, "--workers", "2"), capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(finished_before)} already in the store" in rerun.stdout
    plan_keys = {r.key for r in sw.plan(path).runs}
    final = [p.name for p in runs.iterdir()]
    assert sorted(final) == sorted(plan_keys), "every run exactly once, no temporaries left"
    for k in finished_before:  # finished runs were not redone
        assert (runs / k / "summary.json").stat().st_mtime_ns == mtimes[k]
    idx = Store(store).index()
    assert len(idx) == 32 and idx.key.is_unique and (idx.status == "ok").all()


def test_dask_local_cluster_gives_the_same_results_as_the_process_pool(tmp_path):
    pytest.importorskip("dask.distributed")
    p = sw.plan(sweep_doc(**{"network.rtt": ["20ms", "40ms"]}))
    a, b = Store(tmp_path / "pool"), Store(tmp_path / "dask")
    sw.run_plan(p, a, workers=2)
    sw.run_plan(p, b, dask="local:2")
    for r in p.runs:
        sa = json.loads((a.root / "runs" / r.key / "summary.json").read_text())
        sb = json.loads((b.root / "runs" / r.key / "summary.json").read_text())
        sa["sim"].pop("wall_s"), sb["sim"].pop("wall_s")
        assert sa == sb


def test_concurrent_sweeps_into_one_store_never_corrupt_it(tmp_path):
    path = write_sweep(tmp_path, [f"{n}pkt" for n in range(50, 450, 50)])  # 16 runs
    store = tmp_path / "store"
    procs = [subprocess.Popen(sweep_cmd(path, store, "--workers", "1"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
    idx = Store(store).index()
    assert len(idx) == 16 and idx.key.is_unique and (idx.status == "ok").all()
    assert sorted(p.name for p in (store / "runs").iterdir()) == sorted(idx.key), \
        "every run once, no temporaries or replaced copies left"
    assert not (store / "corrupt").exists() and list((store / "failed").iterdir()) == []
    for key in idx.key:
        summary = json.loads((store / "runs" / key / "summary.json").read_text())
        assert summary["bottleneck"]["utilization"] > 0
