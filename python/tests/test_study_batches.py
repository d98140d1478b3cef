"""A study run in batches whose records outlive the machine (studies/batches.py)."""

import json

import pandas as pd
import pytest

from tcpeval.studies import batches, get
from tcpeval.studies.runner import interval_tables, open_study_store, run_study, store_records


@pytest.fixture(scope="module")
def smoke_store(tmp_path_factory):
    store = tmp_path_factory.mktemp("tengig-smoke")
    run_study("tengig", "smoke", store, workers=2)
    return store


def _archive(path, recs, fingerprint="f"):
    path.mkdir()
    (path / batches.META).write_text(json.dumps(
        {"study": "tengig", "profile": "smoke", "fingerprint": fingerprint,
         "fingerprint_profile": "smoke", "commit": "test"}))
    return path


def test_the_archive_gives_the_report_the_store_gives(smoke_store, tmp_path):
    store, profile, keys, results = open_study_store("tengig", smoke_store)
    want = get("tengig").report(results, profile, interval_tables(store, keys))["tables"]
    _, recs = store_records("tengig", smoke_store)
    assert len(recs) == len(set(keys.values())) == 80
    # Two batches whose file order is not the design's: the later runs first.
    arch = _archive(tmp_path / "a", recs)
    recs.iloc[50:].to_parquet(arch / "batch-1.parquet", index=False)
    recs.iloc[:50].to_parquet(arch / "batch-2.parquet", index=False)
    got = get("tengig").report_records(batches.records("tengig", arch)[1], profile)["tables"]
    assert set(got) == set(want)
    for name in want:
        pd.testing.assert_frame_equal(got[name], want[name], check_exact=True)
    page = batches.report("tengig", arch, tmp_path / "report").read_text()
    assert "all 80 runs finished" in page
    # the fingerprint is the smoke profile's records, run again: the same engine
    # gives the same hash
    assert batches.fingerprint("tengig") == batches.records_hash(recs.drop(columns="key"))


def test_batches_resume_where_the_archive_stops_and_refuse_another_engine(
        tmp_path, monkeypatch):
    monkeypatch.setattr(batches, "fingerprint", lambda name, workers=2: "engine-a")
    arch = tmp_path / "arch"
    assert batches.run_batch("tengig", arch, profile="smoke", workers=1, runs=2,
                             say=lambda s: None) == 2
    assert batches.run_batch("tengig", arch, profile="smoke", workers=1, runs=3,
                             say=lambda s: None) == 3
    meta, recs = batches.records("tengig", arch)
    assert len(recs) == 5 and recs["run"].is_unique
    assert len(list(arch.glob("batch-*.parquet"))) == 2
    first = batches.remaining("tengig", "smoke", set())[:5]
    assert set(recs["run"]) == set(first)   # the batch order's first five, kept in design order
    order = {r: i for i, (r, _, _) in enumerate(get("tengig").design("smoke").runs())}
    assert list(recs["run"]) == sorted(first, key=order.__getitem__)
    assert batches.remaining("tengig", "smoke", set(recs["run"]))[0] not in first
    assert "5 of 80 runs recorded" in batches.status("tengig", arch)
    page = batches.report("tengig", arch).read_text()
    assert "only 5 of 80 runs finished" in page

    monkeypatch.setattr(batches, "fingerprint", lambda name, workers=2: "engine-b")
    with pytest.raises(batches.BatchError, match="fingerprint engine-a"):
        batches.run_batch("tengig", arch, profile="smoke", workers=1, runs=1)
    assert len(batches.records("tengig", arch)[1]) == 5     # nothing added


def test_an_archive_refuses_changed_cells_and_runs_recorded_twice(smoke_store, tmp_path):
    _, recs = store_records("tengig", smoke_store)
    arch = _archive(tmp_path / "a", recs)
    changed = recs.iloc[:3].copy()
    changed.loc[1, "key"] = "0" * 16
    changed.to_parquet(arch / "batch-1.parquet", index=False)
    with pytest.raises(batches.BatchError, match=f"run {recs['run'][1]} has another key"):
        batches.records("tengig", arch)
    recs.iloc[:3].to_parquet(arch / "batch-1.parquet", index=False)
    recs.iloc[2:4].to_parquet(arch / "batch-2.parquet", index=False)
    with pytest.raises(batches.BatchError, match=f"run {recs['run'][2]} is recorded twice"):
        batches.records("tengig", arch)


def test_the_command_exits_2_naming_what_is_wrong(tmp_path, capsys):
    assert batches.main(["status", "tengig", str(tmp_path)]) == 2
    assert "no archive.json" in capsys.readouterr().err
    assert batches.main(["status", "nosuch", str(tmp_path)]) == 2
    assert "unknown study 'nosuch'" in capsys.readouterr().err


def test_batches_take_the_runs_behind_published_numbers_first_one_repetition_at_a_time():
    study = get("tengig")
    design = study.design("full")
    cell_of = {run: (cell, rep) for run, cell, rep in design.runs()}
    order = batches.batch_order("tengig", "full")
    assert sorted(order) == sorted(cell_of) and len(order) == 1280
    front = [study.backs_published(cell_of[r][0]) for r in order]
    n = sum(front)
    assert front == [True] * n + [False] * (len(order) - n)   # published cells first
    for part in (order[:n], order[n:]):
        reps = [cell_of[r][1] for r in part]
        assert reps == sorted(reps)                              # repetition by repetition
    # every published number's cells are in the front part, and nothing else
    wanted = set()
    for row in _published_rows():
        kind = "fair" if row["table"] == "fairness" else "single"
        for v in row["variant"].split("/"):
            wanted.add((kind, v, row["rtt_ms"], None if kind == "fair" else row["drop_rate"]))
    got = {(c.axes["kind"], c.axes["variant"], c.axes["rtt_ms"], c.axes.get("drop_rate"))
           for c, _ in (cell_of[r] for r in order[:n])}
    assert got == wanted and n == 5 * len(wanted)


def _published_rows():
    from tcpeval.studies import protocol

    return protocol.published("tengig", "published")
