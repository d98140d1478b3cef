"""Stores written by earlier versions stay valid (issue 27.3).

python/tests/data/store-2026-11/store was written by `tcpeval sweep` of
sweep.toml with the code of 2026-11 (run keys: the hash of the whole resolved
scenario), plus one failure record (failed.toml). Today's plan of the same
sweep must find every run in it, so a sweep over it runs nothing."""

import shutil
from pathlib import Path

import pytest

from tcpeval import sweep as sw
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
