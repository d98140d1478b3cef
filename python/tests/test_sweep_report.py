"""The sweep report (issue 31 item 1): `tcpeval report STORE --x --y --hue`
draws a store's means with 95% confidence intervals, box plots and the
throughput-against-delay scatter, each with its numbers in a table."""

import re

import numpy as np
import pytest
from typer.testing import CliRunner

from tcpeval import cli
from tcpeval.metrics import t_quantile
from tcpeval.plot import PlotError, flow_values
from tcpeval.report import sweep_report, sweep_sections
from tcpeval.store import Store
from tcpeval.sweep import plan, run_plan

SWEEP = {
    "network": {"bottleneck": "10Mbps", "rtt": "40ms", "buffer": "0.5bdp", "loss": 0.003},
    "flows": [{"cc": "reno"}],
    "run": {"duration": "2s", "interval": "0.5s"},
    "sweep": {"flows.0.cc": ["reno", "cubic"], "network.rtt": ["20ms", "60ms"],
              "repetitions": 3},
}
X, HUE = "network.rtt", "flows.0.cc"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """12 runs: two algorithms x two RTTs x three seeds (random loss: the seeds differ)."""
    s = Store(tmp_path_factory.mktemp("sweepreport") / "store")
    stats = run_plan(plan(SWEEP, "cc_rtt"), s, workers=1)
    assert stats["done"] == 12
    return s


@pytest.fixture(scope="module")
def sections(store):
    return sweep_sections(flow_values([store.root]), X, "throughput_mbps", HUE)


def _values(store, rtt: str, cc: str) -> np.ndarray:
    idx = store.index()
    rows = idx[(idx[X] == rtt) & (idx[HUE] == cc) & (idx["status"] == "ok")]
    return rows["flow0.throughput_mbps"].to_numpy(float)


def test_the_means_and_intervals_are_the_repetitions(store, sections):
    mean = sections[0]
    ax = mean.fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["20ms", "60ms"]
    assert [c.get_label() for c in ax.containers] == ["reno", "cubic"]
    for line, cc in zip(ax.containers, ["reno", "cubic"], strict=True):
        for i, rtt in enumerate(["20ms", "60ms"]):
            v = _values(store, rtt, cc)
            half = t_quantile(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
            assert len(v) == 3 and half > 0, "three seeds that differ"
            assert line.lines[0].get_ydata()[i] == pytest.approx(v.mean())
            assert line.lines[1][1].get_ydata()[i] == pytest.approx(v.mean() + half)
            row = next(r for r in mean.rows if r[:2] == [rtt, cc])
            assert row[2:] == [3, pytest.approx(v.mean()), pytest.approx(v.mean() - half),
                               pytest.approx(v.mean() + half)]


def test_one_box_per_pair_with_its_median(store, sections):
    box = sections[1]
    ax = box.fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["20ms / reno", "20ms / cubic", "60ms / reno", "60ms / cubic"]
    medians = [ln.get_ydata()[0] for ln in ax.lines if ln.get_gid() == "median"]
    for label, median, row in zip(labels, medians, box.rows, strict=True):
        v = _values(store, *label.split(" / "))
        assert median == pytest.approx(np.median(v))
        assert row == [label, 3, pytest.approx(v.min()), pytest.approx(np.percentile(v, 25)),
                       pytest.approx(np.median(v)), pytest.approx(np.percentile(v, 75)),
                       pytest.approx(v.max())]


def test_the_scatter_has_a_point_per_run_and_each_group_s_ellipse(store, sections):
    from matplotlib.patches import Ellipse

    scatter = sections[2]
    ax = scatter.fig.axes[0]
    assert ax.xaxis_inverted(), "Pantheon: lower delay to the right"
    runs, means = ax.collections[0::2], ax.collections[1::2]
    assert sum(len(c.get_offsets()) for c in runs) == 12
    ellipses = [p for p in ax.patches if isinstance(p, Ellipse)]
    assert len(ellipses) == 2
    idx = store.index()
    for cc, pts, mean, ell, row in zip(["reno", "cubic"], runs, means, ellipses, scatter.rows,
                                       strict=True):
        rows = idx[idx[HUE] == cc]
        xy = np.column_stack([rows["flow0.mean_srtt_ms"], rows["flow0.throughput_mbps"]])
        assert sorted(map(tuple, pts.get_offsets())) == sorted(map(tuple, xy))
        assert tuple(mean.get_offsets()[0]) == pytest.approx(tuple(xy.mean(axis=0)))
        vals = np.linalg.eigvalsh(np.cov(xy.T))
        assert (ell.width, ell.height) == pytest.approx(tuple(2 * np.sqrt(vals[::-1])))
        assert row[:3] == [cc, 6, pytest.approx(xy[:, 0].mean())]


def test_bad_names_are_errors_naming_what_is_allowed(store, tmp_path):
    with pytest.raises(PlotError, match=r"--x: 'network\.bottleneck' .*flows\.0\.cc"):
        sweep_report(store.root, tmp_path / "r.html", "network.bottleneck")
    with pytest.raises(PlotError, match=r"--y: 'goodput' .*throughput_mbps"):
        sweep_report(store.root, tmp_path / "r.html", X, "goodput")
    r = CliRunner().invoke(cli.app, ["report", str(tmp_path), "--x", X])
    assert r.exit_code == 2 and "not a result store" in r.output


def test_the_command_writes_the_page_into_the_store(store):
    r = CliRunner().invoke(cli.app, ["report", str(store.root), "--x", X, "--hue", HUE,
                                     "--y", "mean_srtt_ms"])
    assert r.exit_code == 0, r.output
    page = (store.root / "report.html").read_text()
    assert page.count("<img") == 3 and page.count("<table>") == 3
    assert re.search(r"<th>mean mean_srtt_ms</th>", page)


def test_the_report_renders_in_chromium(store, tmp_path):
    from test_report_browser import CHROMIUM, check_page

    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (make test installs it when it can)")
    page = sweep_report(store.root, tmp_path / "report.html", X, "throughput_mbps", HUE)
    dom = check_page(page, tmp_path)
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", dom)
    assert len(captions) == 3 and "95%" in captions[0] and "ellipse" in captions[2]
