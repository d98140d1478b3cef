"""End-to-end runs through the real engine: summary numbers against the raw
tables, determinism, result files, CLI behaviour."""

import json
import subprocess
import sys

import pandas as pd
import pyarrow.parquet as pq
import pytest
from helpers import small_scenario

import tcpeval
from tcpeval.run import build_result
from tcpeval.store import write_run


@pytest.fixture(scope="module")
def result():
    return tcpeval.run(small_scenario())


def test_summary_throughput_is_the_mean_over_whole_intervals_in_the_window(result):
    f = result.flows
    for flow in result.summary["flows"]:
        start = max(2.0, flow["start_s"])
        rows = f[(f.flow == flow["id"]) & (f.t_s - 1.0 >= start - 1e-9) & (f.t_s <= 10.0)]
        expect = rows.delivered_bytes.sum() * 8 / len(rows) / 1e6
        assert flow["throughput_mbps"] == pytest.approx(expect)


def test_jain_and_utilization_from_the_tables(result):
    x = [fl["throughput_mbps"] for fl in result.summary["flows"]]
    assert result.summary["jain_index"] == pytest.approx(sum(x) ** 2 / (2 * sum(v * v for v in x)))
    links = result.links[(result.links.link == "bottleneck") & (result.links.t_s > 2.0)]
    util = (links.tx_bytes * 8 / 20e6).mean()
    assert result.summary["bottleneck"]["utilization"] == pytest.approx(util)
    assert 0.9 < util <= 1.0001


def test_same_seed_same_output_different_seed_differs():
    lossy = small_scenario()
    lossy["network"]["loss"] = 1e-3
    a, b = tcpeval.run(lossy), tcpeval.run(lossy)
    strip = lambda s: {k: v for k, v in s.items() if k != "sim"}  # noqa: E731
    assert strip(a.summary) == strip(b.summary)
    pd.testing.assert_frame_equal(a.trace, b.trace)
    pd.testing.assert_frame_equal(a.flows, b.flows)
    c = tcpeval.run(lossy, seed=2)
    assert strip(c.summary) != strip(a.summary)


def test_parallel_streams_are_reported_as_one_flow_and_its_streams():
    r = tcpeval.run({"flows": [{"cc": "reno", "streams": 4, "max_window": "64KB"}],
                     "network": {"bottleneck": "100Mbps", "rtt": "50ms"},
                     "run": {"duration": "10s", "measure_from": "2s"}})
    assert len(r.summary["flows"]) == 1 and r.summary["flows"][0]["streams"] == 4
    assert len(r.summary["streams"]) == 4
    # Window-limited: 4 streams x 44 segments x 1448 B / 50 ms = 40.8 Mbit/s
    assert r.summary["flows"][0]["throughput_mbps"] == pytest.approx(4 * 44 * 1448 * 8 / 0.05 / 1e6,
                                                                     rel=0.03)


def test_write_run_is_atomic(tmp_path, result, monkeypatch):
    out = write_run(result, tmp_path / "run")
    names = sorted(p.name for p in out.iterdir())
    assert names == [".tcpeval-run", "completions.parquet", "engine.json", "flows.parquet",
                     "links.parquet", "queue.parquet",
                     "scenario.json", "summary.json", "trace.parquet", "udp.parquet"]
    before = (out / "summary.json").read_text()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", boom)  # the run's tables go through it
    with pytest.raises(OSError):
        write_run(result, out)
    assert (out / "summary.json").read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["run"], "no temporary leftovers"


def test_build_result_round_trips_raw_tables(result):
    again = build_result(result.scenario, result.raw, 0.0)
    pd.testing.assert_frame_equal(again.flows, result.flows)


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "tcpeval.cli", *args], capture_output=True,
                          text=True, cwd=cwd)


def test_cli_run_writes_results_and_prints_the_table(tmp_path, examples):
    out = tmp_path / "res"
    p = cli("run", str(examples / "reno_single.toml"), "--out", str(out), "--set",
            "run.duration='8s'", "--set", "run.measure_from='2s'")
    assert p.returncode == 0, p.stderr
    assert "Per-flow results" in p.stdout and "utilization" in p.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["bottleneck"]["utilization"] > 0.9


def test_cli_json_prints_only_the_summary(tmp_path, examples):
    p = cli("run", str(examples / "reno_single.toml"), "--out", str(tmp_path / "r"), "--json",
            "--set", "run.duration='8s'", "--seed", "3")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["seed"] == 3


@pytest.mark.parametrize("args,needle", [
    (["--set", "flows.0.cc=foo"], "flows[0].cc: unknown algorithm 'foo'"),
    (["--set", "network.bottleneck='fast'"], "network.bottleneck: bad rate"),
    (["--set", "run.nope=1"], "run.nope: unknown key"),
    (["--set", "network.loss=-0.1"], "network.loss"),
])
def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path, examples, args, needle):
    out = tmp_path / "never"
    p = cli("run", str(examples / "reno_single.toml"), "--out", str(out), *args)
    assert p.returncode == 2
    assert needle in p.stderr
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_cli_missing_file_exits_2(tmp_path):
    p = cli("run", str(tmp_path / "nope.toml"))
    assert p.returncode == 2 and "no such scenario file" in p.stderr


def test_run_report_is_self_contained_with_every_figure(tmp_path, result):
    from tcpeval.report import run_report

    page = run_report(result, tmp_path / "r" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 6
    assert "<script" not in page and "http" not in page.split("<body>")[1]
    for f in result.summary["flows"]:
        assert f["label"] in page


def test_metrics_recomputes_over_another_window(tmp_path, result):
    from tcpeval.run import load_run, resummarize

    write_run(result, tmp_path / "r")
    loaded = load_run(tmp_path / "r")
    same = resummarize(loaded)
    assert same["flows"] == result.summary["flows"]
    late = resummarize(loaded, 6.0, 10.0)
    f = result.flows
    rows = f[(f.flow == 0) & (f.t_s > 6.5) & (f.t_s <= 10.0)]
    assert late["flows"][0]["throughput_mbps"] == pytest.approx(
        rows.delivered_bytes.sum() * 8 / len(rows) / 1e6)
    p = cli("metrics", str(tmp_path / "r"), "--from", "6s", "--to", "10s", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["window_s"] == [6.0, 10.0]
    bad = cli("metrics", str(tmp_path / "r"), "--from", "9s", "--to", "3s")
    assert bad.returncode == 2 and "window" in bad.stderr
