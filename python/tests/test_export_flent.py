"""`tcpeval export RUN --format flent` (issue 31 item 5): the .flent.gz is read
by the real Flent's own loader (flent.resultset) and plotted by its command
line; its series are the run's tables."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import tcpeval
from tcpeval import cli
from tcpeval.store import write_run

resultset = pytest.importorskip("flent.resultset", reason="flent (PyPI, the [dev] extra) is "
                                "not installed")


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A run with a late flow (missing RTT before its first sample) and one
    with two streams, written as `tcpeval run --out` writes it."""
    res = tcpeval.run({"network": {"bottleneck": "20Mbps", "rtt": "30ms"},
                       "flows": [{"cc": "reno", "streams": 2}, {"cc": "cubic", "start": "1.5s"}],
                       "run": {"duration": "4s", "measure_from": "1s", "interval": "0.5s"}})
    out = tmp_path_factory.mktemp("flent") / "run"
    write_run(res, out)
    r = CliRunner().invoke(cli.app, ["export", str(out), "--format", "flent"])
    assert r.exit_code == 0, r.output
    path = Path(r.stdout.strip())
    assert path == out / "run.flent.gz"
    return res, path


def test_flent_loads_the_file_with_the_runs_series(stored):
    res, path = stored
    data = resultset.load(str(path))
    x = np.array(data.x_values)
    flows = res.flows
    np.testing.assert_allclose(x, np.unique(flows["t_s"]))
    assert data.meta("NAME") == "tcp_nup" and data.meta("STEP_SIZE") == 0.5
    total = np.zeros(len(x))
    for n, f in enumerate(res.summary["flows"]):
        series = np.array(data.series(f"TCP upload::{n + 1}"), dtype=float)
        own = flows[flows["flow"] == f["id"]]
        assert len(series) == len(x)
        np.testing.assert_allclose(series, own["throughput_mbps"])  # streams summed
        total += series
    np.testing.assert_allclose(data.series("TCP upload sum"), total)
    raw = list(data.raw_series("TCP upload::1"))
    assert [t for t, _ in raw] == pytest.approx(list(x))  # raw times relative to T0


def test_flents_ping_is_the_mean_rtt_of_each_interval(stored):
    res, path = stored
    data = resultset.load(str(path))
    trace = res.trace
    ping = data.series("Ping (ms) ICMP")
    for i, end in enumerate(data.x_values):
        inside = trace[(trace["t_s"] > end - 0.5 + 1e-9) & (trace["t_s"] <= end + 1e-9)
                       & (trace["srtt_ms"] > 0)]
        if inside.empty:
            assert ping[i] is None
        else:
            assert ping[i] == pytest.approx(inside["srtt_ms"].mean())


def test_flent_plots_the_file(stored, tmp_path):
    _, path = stored
    flent = shutil.which("flent", path=str(Path(sys.executable).parent))
    assert flent, "flent's module is installed but not its command"
    png = tmp_path / "upload.png"
    p = subprocess.run([flent, "-i", str(path), "-p", "upload", "-o", str(png)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "ERROR" not in p.stderr, p.stderr
    assert png.stat().st_size > 10_000


def test_an_unknown_format_names_the_allowed_ones(stored):
    _, path = stored
    r = CliRunner().invoke(cli.app, ["export", str(path.parent), "--format", "pcapng"])
    assert r.exit_code == 2 and "csv, json, flent" in r.output
