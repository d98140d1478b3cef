"""Stores written by earlier versions stay valid (issue 27.3).

python/tests/data/store-2026-11/store was written by `tcpeval sweep` of
sweep.toml with the code of 2026-11 (run keys: the hash of the whole resolved
scenario), plus one failure record (failed.toml). Today's plan of the same
sweep must find every run in it, so a sweep over it runs nothing."""

import copy
import errno
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcpeval import cli, runkey
from tcpeval import store as store_mod
from tcpeval import sweep as sw
from tcpeval.runkey import KEY_VERSION, legacy_run_key
from tcpeval.store import Store

DATA = Path(__file__).parent / "data" / "store-2026-11"


@pytest.fixture
def old_store(tmp_path) -> Path:
    """A copy: opening a store may write into it (lock, index, migration)."""
    return Path(shutil.copytree(DATA / "store", tmp_path / "store"))


def test_todays_plan_finds_every_run_of_an_old_store(old_store):
    plan = sw.plan(DATA / "sweep.toml")
    store = Store(old_store)
    assert len(plan.runs) == 4
    assert all(store.has(r.key) for r in plan.runs)
    stats = sw.run_plan(plan, store, workers=1)
    assert (stats["skipped"], stats["done"], stats["failed"]) == (4, 0, 0)
    assert not store.quarantined


def test_tcpeval_sweep_over_an_old_store_runs_nothing(old_store):
    r = CliRunner().invoke(cli.app, ["sweep", str(DATA / "sweep.toml"), "--out",
                                     str(old_store), "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert "0 run, 4 already in the store, 0 failed" in r.output


def test_opening_an_old_store_renames_its_runs_to_their_current_keys(old_store):
    plan = sw.plan(DATA / "sweep.toml")
    old_keys = {p.name for p in (old_store / "runs").iterdir()}
    assert len(old_keys) == 4
    Store(old_store)
    runs = old_store / "runs"
    assert {p.name for p in runs.iterdir()} == {r.key for r in plan.runs}
    assert not old_keys & {r.key for r in plan.runs}  # every run was renamed
    for r in plan.runs:
        params = json.loads((runs / r.key / "params.json").read_text())
        assert (params["key"], params["key_version"]) == (r.key, KEY_VERSION)
    sweep_doc = json.loads((old_store / "sweeps" / "sweep.json").read_text())
    assert sweep_doc["runs"] == [r.key for r in plan.runs]
    # A failure record of rule 1 holds no scenario to recompute its key from.
    assert not list((old_store / "failed").iterdir())
    assert json.loads((old_store / "store.json").read_text())["key_version"] == KEY_VERSION
    assert len(Store(old_store).index()) == 4


def test_a_store_that_cannot_be_written_is_read_through_aliases(old_store, monkeypatch):
    def read_only(*_):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(store_mod, "_atomic_text", read_only)
    before = sorted(p.name for p in (old_store / "runs").iterdir())
    store = Store(old_store)
    assert sorted(p.name for p in (old_store / "runs").iterdir()) == before
    assert all(store.has(r.key) for r in sw.plan(DATA / "sweep.toml").runs)


def test_failure_records_with_their_scenario_survive_a_key_change(tmp_path, monkeypatch):
    spec = sw.plan(DATA / "failed.toml").runs[0]
    store = Store(tmp_path / "s")
    store.write_failure(spec, "boom")
    # A later rule (here: rule 1 again) renames the record by its scenario.
    monkeypatch.setattr(store_mod, "run_key", legacy_run_key)
    monkeypatch.setattr(store_mod, "KEY_VERSION", KEY_VERSION + 1)
    Store(tmp_path / "s")
    record = json.loads((tmp_path / "s" / "failed" / f"{legacy_run_key(spec.resolved)}.json")
                        .read_text())
    assert (record["error"], record["key_version"]) == ("boom", KEY_VERSION + 1)
    assert len(list((tmp_path / "s" / "failed").iterdir())) == 1


def test_a_new_field_with_a_default_keeps_every_key(monkeypatch):
    plan = sw.plan(DATA / "sweep.toml")
    before = [r.key for r in plan.runs]
    # As if the engine's schema had grown two fields with defaults.
    monkeypatch.setitem(runkey.defaults()["flows[]"], "pacing", False)
    monkeypatch.setitem(runkey.defaults()["network"], "ecn", "off")
    for r in plan.runs:
        grown = copy.deepcopy(r.resolved)
        grown["network"]["ecn"] = "off"
        for f in grown["flows"]:
            f["pacing"] = False
        assert runkey.run_key(grown) == r.key
        grown["flows"][0]["pacing"] = True  # set: a different run
        assert runkey.run_key(grown) != r.key
    assert [r.key for r in plan.runs] == before


def test_the_canonical_form_keeps_what_differs_from_the_defaults():
    r = sw.plan(DATA / "sweep.toml").runs[0].resolved
    c = runkey.canonical(r)
    flow = c["flows"][0]
    assert "mss" not in flow and "sack" not in flow and "send_overhead_ns" not in flow
    hop = c["network"]["hops"][0]
    assert flow["cc"] == "reno" and hop["loss"] == 1e-3
    assert "udp" not in c and "red" not in hop and "delay_ns" not in hop
    assert flow["group"] == "reno-0"  # a value that is not the default


def test_a_damaged_run_under_the_new_key_is_moved_aside_not_the_good_copy(old_store):
    plan = sw.plan(DATA / "sweep.toml")
    runs = old_store / "runs"
    old = sorted(p.name for p in runs.iterdir())[0]
    new = runkey.run_key(json.loads((runs / old / "scenario.json").read_text()))
    shutil.copytree(runs / old, runs / new)
    (runs / new / "summary.json").write_text("garbage")  # damaged, under the new key
    store = Store(old_store)
    assert store.has(new) and not (runs / old).exists()
    assert json.loads((runs / new / "summary.json").read_text())["flows"]  # the good copy
    assert [k for k, _ in store.quarantined] == [new]
    assert all(store.has(r.key) for r in plan.runs)


def _as_rule_2(store: Path) -> None:
    """The old store as the code of key rule 2 (2026-11-26, a network of a single
    bottleneck's fields plus optional hops) left it after migrating it: its runs
    named by the keys that code computed (keys-v2.json)."""
    names = json.loads((DATA / "keys-v2.json").read_text())
    runs = store / "runs"
    for old, new in names.items():
        params = json.loads((runs / old / "params.json").read_text())
        (runs / old / "params.json").write_text(json.dumps({**params, "key": new,
                                                            "key_version": 2}))
        (runs / old).rename(runs / new)
    sweep = store / "sweeps" / "sweep.json"
    doc = json.loads(sweep.read_text())
    sweep.write_text(json.dumps({**doc, "runs": [names.get(k, k) for k in doc["runs"]]}))
    (store / "store.json").write_text(json.dumps({"tcpeval": "store", "key_version": 2}))


def test_a_store_of_key_rule_2_finds_every_run_after_the_hop_list(old_store):
    _as_rule_2(old_store)
    plan = sw.plan(DATA / "sweep.toml")
    assert KEY_VERSION == 3 and not {r.key for r in plan.runs} & set(
        json.loads((DATA / "keys-v2.json").read_text()).values())
    store = Store(old_store)
    assert all(store.has(r.key) for r in plan.runs)
    assert {p.name for p in (old_store / "runs").iterdir()} == {r.key for r in plan.runs}
    sweep_doc = json.loads((old_store / "sweeps" / "sweep.json").read_text())
    assert sweep_doc["runs"] == [r.key for r in plan.runs]


def test_the_old_network_form_is_read_as_one_hop():
    r = sw.plan(DATA / "sweep.toml").runs[0].resolved
    hop = r["network"]["hops"][0]
    old = {**r, "network": {"bottleneck_rate_bps": hop["rate_bps"], "bottleneck_delay_ns": 0,
                            "access_rate_bps": r["network"]["access_rate_bps"], "hops": None,
                            **{k: v for k, v in hop.items() if k not in ("rate_bps", "delay_ns")}}}
    assert runkey.current_form(old) == r
    assert runkey.run_key(old) == runkey.run_key(r)
    assert runkey.current_form(r) is r
