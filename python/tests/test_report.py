"""The run report (issue 31 item 2): what its figures draw, read back from the
matplotlib Figures, and what the page states. The browser check of the page
is in test_report_browser.py."""

from __future__ import annotations

import html
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.patches import Rectangle

import tcpeval
from tcpeval.plot import bottleneck_queue, result_lines
from tcpeval.report import (
    bottleneck_hop,
    cdf_figure,
    loss_figure,
    queue_figure,
    run_report,
    time_figure,
)
from tcpeval.version import version


@pytest.fixture(scope="module")
def dumbbell():
    return tcpeval.run({"network": {"bottleneck": "20Mbps", "rtt": "40ms"},
                        "flows": [{"cc": "reno"}, {"cc": "cubic", "start": "0.5s"}],
                        "run": {"duration": "4s", "measure_from": "1s"}})


@pytest.fixture(scope="module")
def parking_lot():
    return tcpeval.run({"network": {"rtt": "40ms", "hops": [
        {"rate": "100Mbps", "delay": "5ms"}, {"rate": "40Mbps", "delay": "5ms"},
        {"rate": "80Mbps", "delay": "5ms"}]},
        "flows": [{"cc": "reno"}], "run": {"duration": "2s", "measure_from": "1s"}})


def _span(ax) -> tuple[float, float]:
    """x extent of the shaded measurement window."""
    shade = next(p for p in ax.patches if p.get_label() == "measurement window")
    assert isinstance(shade, Rectangle)
    return shade.get_x(), shade.get_x() + shade.get_width()


def test_time_figures_shade_the_window_and_span_the_run(dumbbell):
    start, end = dumbbell.summary["window_s"]
    for metric in ("throughput_mbps", "cwnd_pkts", "srtt_ms"):
        ax = time_figure(dumbbell, metric, metric).axes[0]
        assert _span(ax) == pytest.approx((start, end))
        assert ax.get_xlim() == pytest.approx((0, 4))
        assert len(ax.get_lines()) == 2  # one per flow


def test_rtt_before_the_first_sample_is_missing_not_zero(dumbbell):
    first = result_lines(dumbbell, "srtt_ms")[0]
    trace = dumbbell.trace[dumbbell.trace["flow"] == 0]
    assert trace["srtt_ms"].iloc[0] == 0 and np.isnan(first.v[0])  # t = 0: no sample yet
    for line in result_lines(dumbbell, "srtt_ms"):
        assert (line.v[~np.isnan(line.v)] > 0).all()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([0.0, 12.5, 40.0, 80.25]), min_size=1, max_size=20))
def test_every_zero_rtt_sample_becomes_missing(values):
    trace = pd.DataFrame({"t_s": np.arange(len(values)) / 10, "flow": 0, "stream": 0,
                          "srtt_ms": values})
    result = SimpleNamespace(trace=trace, summary={"flows": [{"id": 0, "label": "a",
                                                              "cc": "reno"}]})
    (line,) = result_lines(result, "srtt_ms")
    expected = np.where(np.array(values) > 0, values, np.nan)
    np.testing.assert_array_equal(line.v, expected)


def test_the_queue_is_the_narrowest_hops_with_its_buffer(parking_lot):
    hop = bottleneck_hop(parking_lot)
    assert parking_lot.summary["bottleneck"]["name"] == "hop1" and hop["rate_bps"] == 40e6
    buffers = [h["buffer_pkts"] for h in parking_lot.scenario["network"]["hops"]]
    assert len(set(buffers)) == 3  # so the limit drawn tells the hops apart
    ax = queue_figure(parking_lot).axes[0]
    lines = {li.get_label(): li for li in ax.get_lines()}
    assert set(lines["buffer limit"].get_ydata()) == {hop["buffer_pkts"]}
    np.testing.assert_array_equal(lines["queue"].get_ydata(),
                                  bottleneck_queue(parking_lot)["queue_pkts"])
    assert ax.get_title() == "bottleneck queue (hop1)"


def test_retransmits_and_drops_cover_their_intervals(dumbbell):
    ax = loss_figure(dumbbell).axes[0]
    steps = {p.get_label(): p for p in ax.patches if p.get_label() != "measurement window"}
    drops = dumbbell.links[dumbbell.links["link"] == "bottleneck"]
    assert steps["bottleneck drops"].get_data().values.tolist() == drops["drops"].tolist()
    assert steps["bottleneck drops"].get_data().edges[0] == 0  # the first interval is drawn
    for flow in dumbbell.summary["flows"]:
        counted = steps[f"{flow['label']} retransmits"].get_data().values.sum()
        assert counted == dumbbell.flows.loc[dumbbell.flows["flow"] == flow["id"],
                                             "retransmits"].sum()


def test_cdfs_cover_only_the_window(dumbbell):
    start, end = dumbbell.summary["window_s"]
    goodput, rtt = cdf_figure(dumbbell).axes
    inside = dumbbell.flows[dumbbell.flows["t_s"] > start]
    for line in goodput.get_lines():
        flow = next(f["id"] for f in dumbbell.summary["flows"] if f["label"] == line.get_label())
        assert sorted(line.get_xdata()) == sorted(inside.loc[inside["flow"] == flow,
                                                             "throughput_mbps"])
        assert line.get_ydata()[-1] == 1
    assert all(np.nanmin(li.get_xdata()) > 0 for li in rtt.get_lines())


def test_the_page_has_version_scenario_and_captioned_figures(dumbbell, tmp_path):
    page = run_report(dumbbell, tmp_path / "report.html").read_text()
    assert page.count("<img") == page.count("<figcaption>") == 6
    assert f"tcpeval {version()}" in page and version() != "unknown"
    details = page.split("<details>")[1].split("</details>")[0]
    assert json.loads(html.unescape(details.split("<pre>")[1].split("</pre>")[0])) == \
        dumbbell.scenario


def test_run_report_shows_the_scenario_file_as_given(tmp_path):
    from typer.testing import CliRunner

    from tcpeval import cli

    toml = ('# two <flows> & a note\n[network]\nbottleneck = "10Mbps"\nrtt = "20ms"\n'
            '[[flows]]\ncc = "reno"\n[run]\nduration = "2s"\n')
    (tmp_path / "s.toml").write_text(toml)
    r = CliRunner().invoke(cli.app, ["run", str(tmp_path / "s.toml"), "--out",
                                     str(tmp_path / "o"), "--report", "--set", "network.rtt=30ms"])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "o" / "report.html").read_text()
    given, resolved = page.split("<details>")[1:3]
    assert "scenario file (TOML" in given and html.escape(toml) in given
    assert html.escape('"rtt_ns": 30000000') in resolved  # the override is in what ran


def test_forty_lines_keep_distinct_styles():
    from tcpeval.plot import line_style

    styles = {tuple(line_style(n).values()) for n in range(40)}
    assert len(styles) == 40


@pytest.mark.parametrize("lines,outside", [(3, False), (7, True)])
def test_a_long_legend_goes_beside_the_axes(lines, outside):
    from tcpeval.plot import figure, legend

    fig, ax = figure()
    for n in range(lines):
        ax.plot([0, 1], [n, n], label=f"flow {n}")
    legend(ax)
    fig.canvas.draw()  # lay the figure out
    box = ax.get_legend().get_window_extent()
    assert (box.x0 >= ax.get_window_extent().x1) == outside
