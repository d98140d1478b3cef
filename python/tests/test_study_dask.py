"""A study run on a Dask LocalCluster gives the same store as on the process
pool (issue 29, goal 5): same run keys, the same summary.json files but for
the wall clock, the same Parquet tables, byte for byte."""

import json

import pytest

from tcpeval.store import Store
from tcpeval.studies.runner import run_study

# Two ha2006 smoke cells, one with engine-drawn web background traffic (the
# seeded stream must not depend on the process that runs it) and one without.
CELLS = ["intra-reno-16ms-*"]

# The one field that legitimately differs between two runs of one scenario:
# the engine's wall-clock time (sim.wall_s), a measurement of the machine, not
# of the simulation. The index's wall_s column is the same field, copied.
WALL_CLOCK = ("sim", "wall_s")


def _files(store: Store) -> dict:
    return {str(p.relative_to(store.root)): p for p in store.root.rglob("*") if p.is_file()}


def _summary(path) -> dict:
    summary = json.loads(path.read_text())
    section, field = WALL_CLOCK
    assert isinstance(summary[section].pop(field), float)
    return summary


def test_a_study_on_a_dask_local_cluster_gives_the_process_pools_store(tmp_path):
    pytest.importorskip("dask.distributed", reason="dask is not installed (tcpeval[dask])")
    pool, dask = Store(tmp_path / "pool"), Store(tmp_path / "dask")
    stats_pool = run_study("ha2006", "smoke", pool.root, workers=2, cells=CELLS)
    stats_dask = run_study("ha2006", "smoke", dask.root, dask="local:2", cells=CELLS)
    assert stats_pool["done"] == stats_dask["done"] == 2
    assert not stats_pool["failures"] and not stats_dask["failures"]

    files_pool, files_dask = _files(pool), _files(dask)
    assert sorted(files_pool) == sorted(files_dask), "same run keys, same files"
    assert sum(name.endswith(".parquet") for name in files_pool) > 2, "runs wrote tables"
    for name, path in files_pool.items():
        if name.endswith("summary.json"):
            assert _summary(path) == _summary(files_dask[name]), name
        elif name != "index.parquet":  # every Parquet table, scenario, params, sweep record
            assert path.read_bytes() == files_dask[name].read_bytes(), name

    index_pool = pool.index().drop(columns="wall_s").sort_values("key", ignore_index=True)
    index_dask = dask.index().drop(columns="wall_s").sort_values("key", ignore_index=True)
    assert index_pool.equals(index_dask)
