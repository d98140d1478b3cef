"""Plots, comparisons and exports of finished runs (issue 31 items 1, 5, 6):
the figures hold the runs' data (inspected on the Figure object), comparisons
are computed from the summaries, bad names exit 2 naming what is allowed."""

import csv
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from helpers import small_scenario
from typer.testing import CliRunner

import tcpeval
from tcpeval import cli
from tcpeval.compare import FLOW_VALUES, compare
from tcpeval.plot import PlotError, flow_values, group_values, plot
from tcpeval.store import Store, write_run

ROOT = Path(__file__).resolve().parents[2]


def make_run(directory: Path, **flow) -> Path:
    doc = small_scenario(duration="3s", measure_from="1s")
    doc["flows"] = [{**doc["flows"][0], **flow}]
    write_run(tcpeval.run(doc), directory)
    return directory


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("plot")
    return (make_run(base / "reno"), make_run(base / "cubic", cc="cubic"),
            make_run(base / "one", count=1, start="0s"))


@pytest.fixture(scope="module")
def store(tmp_path_factory, runs):
    """A store over flows.0.cc: each run holds one of the runs above."""
    s = Store(tmp_path_factory.mktemp("plotstore") / "s")
    results = {cc: tcpeval.run(small_scenario(duration="3s", measure_from="1s")
                               | {"flows": [{"cc": cc, "count": 2, "start": ["0s", "1s"]}]})
               for cc in ("reno", "cubic")}
    specs = [SimpleNamespace(key=f"{n:020x}", repetition=rep, seed=rep, params={"flows.0.cc": cc})
             for n, (cc, rep) in enumerate([("reno", 0), ("reno", 1), ("cubic", 0), ("cubic", 1)])]
    for spec in specs:
        s.write(spec, results[spec.params["flows.0.cc"]])
    s.record_sweep(SimpleNamespace(name="cc", axes={"flows.0.cc": ["reno", "cubic"]},
                                   repetitions=2, runs=specs))
    return s


def invoke(*args):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def flows_table(run: Path) -> pd.DataFrame:
    return pd.read_parquet(run / "flows.parquet")


# ----- plot ---------------------------------------------------------------------------------


def test_a_timeseries_has_one_line_per_flow_holding_its_throughput(runs):
    fig = plot(runs[0], "timeseries", "throughput_mbps")
    ax = fig.axes[0]
    flows = flows_table(runs[0])
    summary = json.loads((runs[0] / "summary.json").read_text())
    assert [line.get_label() for line in ax.lines] == [f["label"] for f in summary["flows"]]
    for line, (_, rows) in zip(ax.lines, flows.groupby("flow"), strict=True):
        assert np.allclose(line.get_xdata(), rows["t_s"])
        assert np.allclose(line.get_ydata(), rows["throughput_mbps"])
    assert ax.get_xlabel() == "time (s)" and "Mbit/s" in ax.get_ylabel()


def test_rtt_before_the_first_sample_is_missing_not_zero(runs):
    trace = pd.read_parquet(runs[0] / "trace.parquet")
    assert (trace["srtt_ms"] == 0).any()  # the engine writes 0 before a sample
    ax = plot(runs[0], "timeseries", "srtt_ms").axes[0]
    values = np.concatenate([line.get_ydata() for line in ax.lines])
    assert not (values == 0).any() and np.isnan(values).any()


def test_a_cdf_rises_to_one_over_the_sorted_values(runs):
    ax = plot(runs[0], "cdf", "cwnd_pkts").axes[0]
    trace = pd.read_parquet(runs[0] / "trace.parquet")
    for line, (_, rows) in zip(ax.lines, trace.groupby("flow"), strict=True):
        assert np.allclose(line.get_xdata(), np.sort(rows["cwnd_pkts"]))
        y = line.get_ydata()
        assert y[-1] == 1 and np.all(np.diff(y) > 0)


def test_runs_overlaid_are_named_by_run_and_grouped_by_cc(runs):
    ax = plot(runs[:2], "timeseries", "throughput_mbps").axes[0]
    assert [line.get_label() for line in ax.lines] == [
        "reno: reno-0", "reno: reno-1", "cubic: cubic-0", "cubic: cubic-1"]
    ax = plot(runs[:2], "timeseries", "throughput_mbps", by="cc").axes[0]
    assert ax.get_legend_handles_labels()[1] == ["reno", "cubic"]
    assert len({line.get_color() for line in ax.lines}) == 2


def test_the_queue_is_the_bottleneck_s(runs):
    ax = plot(runs[0], "timeseries", "queue_pkts").axes[0]
    q = pd.read_parquet(runs[0] / "queue.parquet")
    q = q[q["link"] == "bottleneck"]
    assert len(ax.lines) == 1 and np.allclose(ax.lines[0].get_ydata(), q["queue_pkts"])


def test_a_store_box_plot_has_one_box_per_algorithm_with_its_median(store):
    ax = plot(store.root, "box", "throughput_mbps", by="flows.0.cc").axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["reno", "cubic"]
    idx = store.index()
    medians = [line.get_ydata()[0] for line in ax.lines if line.get_gid() == "median"]
    for cc, median in zip(["reno", "cubic"], medians, strict=True):
        rows = idx[idx["flows.0.cc"] == cc]
        values = pd.concat([rows["flow0.throughput_mbps"], rows["flow1.throughput_mbps"]])
        assert median == pytest.approx(values.median())


def test_box_values_are_one_per_flow_or_one_per_run_for_a_run_s_value(store):
    df = flow_values([store.root])
    per_flow = group_values(df, "throughput_mbps", "flows.0.cc")
    per_run = group_values(df, "jain_index", "flows.0.cc")
    assert {g: len(v) for g, v in per_flow.items()} == {"reno": 4, "cubic": 4}  # 2 runs x 2
    assert {g: len(v) for g, v in per_run.items()} == {"reno": 2, "cubic": 2}
    idx = store.index()
    assert sorted(per_run["cubic"]) == sorted(idx[idx["flows.0.cc"] == "cubic"]["jain_index"])


def test_the_scatter_puts_each_flow_at_its_delay_and_throughput(runs):
    ax = plot(runs[:2], "scatter", "throughput_mbps").axes[0]
    assert ax.xaxis_inverted()  # lower delay, better, to the right
    points = np.concatenate([c.get_offsets() for c in ax.collections])
    want = [(f["mean_srtt_ms"], f["throughput_mbps"]) for r in runs[:2]
            for f in json.loads((r / "summary.json").read_text())["flows"]]
    assert np.allclose(points, want)


@pytest.mark.parametrize("args,field,allowed", [
    (["--kind", "pie"], "--kind", "timeseries, cdf, box, scatter"),
    (["--metric", "goodput"], "--metric", "throughput_mbps, retransmits, cwnd_pkts"),
    (["--kind", "box", "--metric", "srtt_ms"], "--metric", "mean_srtt_ms, jain_index"),
    (["--by", "colour"], "--by", "cc, flow, run"),
    (["--out", "plot.gif"], "--out", ".png, .svg, .pdf"),
])
def test_bad_names_exit_2_naming_what_is_allowed(runs, args, field, allowed):
    r = invoke("plot", runs[0], *args)
    assert r.exit_code == 2 and r.output.startswith(f"error: {field}:") and allowed in r.output


def test_the_command_writes_the_file(runs, tmp_path):
    r = invoke("plot", runs[0], "--kind", "cdf", "--metric", "srtt_ms", "--out",
               tmp_path / "p.svg")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p.svg").read_text().lstrip().startswith("<?xml")


def test_plot_is_exported_by_the_package():
    assert tcpeval.plot is plot


# ----- compare ------------------------------------------------------------------------------


def test_differences_are_computed_from_the_summaries(runs):
    cmp = compare(runs)  # reno (2 flows), cubic (2 flows), one (1 flow)
    summaries = [json.loads((r / "summary.json").read_text()) for r in runs]
    for row in cmp["flows"]:
        got = [next((f[row["metric"]] for f in s["flows"] if f["id"] == row["flow"]), None)
               for s in summaries]
        assert row["values"] == got
        assert row["diffs"] == [None if v is None else v - got[0] for v in got[1:]]
    assert {r["metric"] for r in cmp["flows"]} == set(FLOW_VALUES)
    total = next(r for r in cmp["aggregate"] if r["metric"] == "total_throughput_mbps")
    assert total["values"] == [sum(f["throughput_mbps"] for f in s["flows"]) for s in summaries]


def test_compare_prints_both_tables_and_overlays_the_series(runs, tmp_path):
    r = CliRunner().invoke(cli.app, ["compare", str(runs[0]), str(runs[1]), "--plot",
                                     str(tmp_path / "c.png")], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "aggregate" in r.output and "per flow" in r.output and "cubic - reno" in r.output
    assert (tmp_path / "c.png").stat().st_size > 0
    assert invoke("compare", runs[0]).exit_code == 2
    bad = invoke("compare", runs[0], tmp_path)
    assert bad.exit_code == 2 and "summary.json" in bad.output


# ----- export, --intervals, version ---------------------------------------------------------


def test_csv_export_writes_one_file_per_table_with_every_row(runs):
    r = invoke("export", runs[0], "--format", "csv")
    assert r.exit_code == 0, r.output
    for name in ("flows", "trace", "queue", "links"):
        with open(runs[0] / f"{name}.csv") as f:
            rows = list(csv.DictReader(f))
        table = pd.read_parquet(runs[0] / f"{name}.parquet")
        assert len(rows) == len(table) and list(rows[0]) == list(table.columns)
    assert "flows.csv" in (runs[0] / ".tcpeval-run").read_text()  # tcpeval's own file
    bad = invoke("export", runs[0], "--format", "xls")
    assert bad.exit_code == 2 and "csv, json" in bad.output


def test_json_export_and_run_intervals_carry_every_series(runs, tmp_path):
    doc = json.loads(invoke("export", runs[0], "--format", "json").stdout)
    assert len(doc["intervals"]["flows"]["throughput_mbps"]) == len(flows_table(runs[0]))
    scenario = tmp_path / "s.toml"
    scenario.write_text('[network]\nbottleneck = "20Mbps"\nrtt = "40ms"\n[[flows]]\n'
                        'cc = "reno"\n[run]\nduration = "2s"\n')
    r = invoke("run", scenario, "--out", tmp_path / "r", "--json", "--intervals")
    assert r.exit_code == 0, r.output
    run_doc = json.loads(r.stdout)
    assert run_doc["intervals"]["flows"]["t_s"] == list(flows_table(tmp_path / "r")["t_s"])
    lone = invoke("run", scenario, "--out", tmp_path / "r2", "--intervals")
    assert lone.exit_code == 2 and "--intervals" in lone.output


def test_version_comes_from_pyproject():
    want = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert invoke("--version").stdout == f"tcpeval {want}\n"
    assert tcpeval.__version__ == want
    done = subprocess.run([sys.executable, "-m", "tcpeval", "--version"], capture_output=True,
                          text=True, check=True)
    assert done.stdout == f"tcpeval {want}\n"
    # Completion is on: typer's options appear, and the script names the command.
    assert "--install-completion" in invoke("--help").stdout
    # typer takes the shell from the process tree unless told not to, and an
    # `sh` parent (make run from `sh -c`) is "not supported": exit 1. With its
    # test switch the option takes the shell named.
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    shown = subprocess.run([Path(sys.executable).parent / "tcpeval", "--show-completion",
                            "bash"], capture_output=True, text=True, env=env)
    assert shown.returncode == 0, (shown.returncode, shown.stdout[-500:], shown.stderr[-2000:])
    script = shown.stdout
    assert "_TCPEVAL_COMPLETE=complete_bash" in script and script.rstrip().endswith(" tcpeval")


def test_plot_errors_are_value_errors_for_python_callers(runs):
    with pytest.raises(PlotError, match="allowed"):
        plot(runs[0], "timeseries", "mean_srtt_ms")


def test_an_empty_store_is_an_error_not_an_empty_figure(tmp_path):
    Store(tmp_path / "empty")
    for kind in ("timeseries", "box"):
        r = invoke("plot", tmp_path / "empty", "--kind", kind, "--out", tmp_path / "x.png")
        assert r.exit_code == 2 and "no finished run" in r.output
    assert not (tmp_path / "x.png").exists()


def test_mean_plot_draws_each_points_mean_and_t_interval(store):
    from tcpeval.metrics import t_quantile

    ax = plot(store.root, "mean", "throughput_mbps", x="flows.0.cc").axes[0]
    bars = ax.containers[0]
    idx = store.index()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["reno", "cubic"]
    for i, cc in enumerate(["reno", "cubic"]):
        rows = idx[idx["flows.0.cc"] == cc]
        v = pd.concat([rows["flow0.throughput_mbps"], rows["flow1.throughput_mbps"]]).to_numpy()
        half = t_quantile(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
        assert bars.lines[0].get_ydata()[i] == pytest.approx(v.mean())
        top = bars.lines[1][1].get_ydata()[i]  # the upper caps
        assert top - v.mean() == pytest.approx(half) and half > 0
    bad = invoke("plot", store.root, "--kind", "mean", "--x", "network.rtt")
    assert bad.exit_code == 2 and "--x: 'network.rtt'" in bad.output and "flows.0.cc" in bad.output


def test_a_run_missing_a_table_is_one_error(runs, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in runs[0].iterdir():
        if f.name != "trace.parquet":
            (broken / f.name).write_bytes(f.read_bytes())
    r = invoke("plot", broken, "--metric", "cwnd_pkts", "--out", tmp_path / "x.png")
    assert r.exit_code == 2 and "trace.parquet" in r.output
