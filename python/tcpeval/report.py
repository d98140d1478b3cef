"""Self-contained HTML reports (no server: figures are embedded as PNG data).

`run_report` draws what a researcher looks at first after a run (issue 31
item 2): goodput, cwnd and RTT per flow over time, the bottleneck queue with
its buffer limit, retransmits and drops per interval, CDFs of throughput and
RTT over the measurement window, the summary table, the scenario and the tool
version. Every figure is full width, with the measurement window shaded; the
lines come from plot.py (one implementation of each series).
"""

from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import dataclass
from pathlib import Path

from .plot import (
    SERIES,
    Line,
    bottleneck_queue,
    draw_line,
    figure,
    label_axes,
    legend,
    line_style,
    result_lines,
)
from .run import Result

WIDE = (11, 3.6)  # inches: full page width at the page's 1100 px
WINDOW_COLOR = "#fff3c4"


def _png(fig) -> str:
    """The figure as base64 PNG; a pyplot figure (a study report's) is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    if fig.canvas.manager is not None:
        import matplotlib.pyplot as plt

        plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _time_axes(ax, result: Result) -> None:
    """The whole run on x (every time figure aligned), the measurement window shaded."""
    start, end = result.summary["window_s"]
    ax.axvspan(start, end, color=WINDOW_COLOR, zorder=0, label="measurement window")
    ax.set_xlim(0, result.scenario["duration_ns"] / 1e9)


def _per_interval(ax, t, values, interval_s: float, **style) -> None:
    """Counts of each report interval drawn over the interval they count (t is
    the interval's end; the last interval of a run may be shorter)."""
    if len(t):
        ax.stairs(values, [t[0] - interval_s, *t], baseline=None, **style)


def time_figure(result: Result, metric: str, title: str):
    fig, ax = figure(WIDE)
    _time_axes(ax, result)
    for n, line in enumerate(result_lines(result, metric)):
        draw_line(ax, line, "timeseries", label=line.name, **line_style(n))
    label_axes(ax, "timeseries", metric)
    ax.set_title(title)
    legend(ax)
    return fig


def bottleneck_hop(result: Result) -> dict:
    """The resolved hop the summary names as bottleneck ("bottleneck" is a
    dumbbell's only hop, "hop<j>" a parking lot's j-th)."""
    name = result.summary["bottleneck"]["name"]
    hops = result.scenario["network"]["hops"]
    return hops[int(name[3:])] if name.startswith("hop") else hops[0]


def queue_figure(result: Result):
    """The bottleneck's queue with its buffer limit: in packets, or in KB
    when the buffer is given in bytes."""
    hop = bottleneck_hop(result)
    q = bottleneck_queue(result)
    fig, ax = figure(WIDE)
    _time_axes(ax, result)
    if hop.get("buffer_pkts") is None and hop.get("buffer_bytes") is not None:
        ax.plot(q["t_s"], q["queue_bytes"] / 1e3, lw=1, label="queue")
        ax.axhline(hop["buffer_bytes"] / 1e3, color="red", ls="--", label="buffer limit")
        ax.set_ylabel("queue (KB)")
    else:
        ax.plot(q["t_s"], q["queue_pkts"], lw=1, label="queue")
        if hop.get("buffer_pkts") is not None:
            ax.axhline(hop["buffer_pkts"], color="red", ls="--", label="buffer limit")
        if "red_avg_pkts" in q and q["red_avg_pkts"].notna().any():
            ax.plot(q["t_s"], q["red_avg_pkts"].astype(float), lw=1, label="RED average")
        ax.set_ylabel("queue (packets)")
    ax.set_xlabel("time (s)")
    name = result.summary["bottleneck"]["name"]
    ax.set_title("bottleneck queue" if name == "bottleneck" else f"bottleneck queue ({name})")
    legend(ax)
    return fig


def loss_figure(result: Result):
    """Retransmits per flow and the bottleneck's drops, per report interval."""
    fig, ax = figure(WIDE)
    _time_axes(ax, result)
    interval = result.scenario["interval_ns"] / 1e9
    for n, line in enumerate(result_lines(result, "retransmits")):
        _per_interval(ax, line.t, line.v, interval, lw=1, label=f"{line.name} retransmits",
                      **line_style(n))
    links = result.links
    drops = links[links["link"] == result.summary["bottleneck"]["name"]]
    _per_interval(ax, drops["t_s"].to_numpy(), drops["drops"].to_numpy(float), interval,
                  lw=1.5, color="black", ls="--", label="bottleneck drops")
    # Log above 1: the slow-start overshoot (thousands) would flatten every
    # later interval's handful to the axis.
    ax.set_yscale("symlog", linthresh=1)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("packets per interval (log)")
    ax.set_title("retransmits and drops per report interval")
    legend(ax)
    return fig


def cdf_figure(result: Result):
    """CDFs of per-interval goodput and of the RTT samples inside the window."""
    start, end = result.summary["window_s"]
    fig, axes = figure(WIDE, columns=2)
    for ax, metric in zip(axes, ("throughput_mbps", "srtt_ms"), strict=True):
        for n, line in enumerate(result_lines(result, metric)):
            inside = (line.t > start) & (line.t <= end + 1e-9)
            window = Line(line.name, line.t[inside], line.v[inside])
            draw_line(ax, window, "cdf", label=line.name, **line_style(n))
        label_axes(ax, "cdf", metric)
        ax.set_title(f"CDF of {SERIES[metric][2].split(' (')[0]} ({start:g}-{end:g} s)")
        legend(ax)
    return fig


def _summary_table(summary: dict) -> str:
    cols = ["label", "cc", "stack", "streams", "rtt_ms", "throughput_mbps", "throughput_std_mbps",
            "retransmits", "timeouts", "mean_cwnd_pkts", "mean_srtt_ms"]
    head = "".join(f"<th>{c}</th>" for c in cols)
    rows = []
    for f in summary["flows"]:
        cells = []
        for c in cols:
            v = f.get(c)
            cells.append(f"<td>{v:.2f}</td>" if isinstance(v, float) else
                         f"<td>{html.escape('-' if v is None else str(v))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _img(fig, alt: str, caption: str) -> str:
    return (f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{_png(fig)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _figures(result: Result) -> list[str]:
    window = "shaded: the measurement window the summary covers"
    return [
        _img(time_figure(result, "throughput_mbps", "goodput per report interval"),
             "goodput", f"Goodput per flow and report interval ({window})."),
        _img(time_figure(result, "cwnd_pkts", "congestion window"), "cwnd",
             f"Congestion window per flow, streams summed ({window})."),
        _img(time_figure(result, "srtt_ms", "smoothed RTT"), "rtt",
             f"Smoothed RTT per flow; no line before a flow's first RTT sample ({window})."),
        _img(queue_figure(result), "queue",
             f"Queue of the bottleneck the summary names; dashed red: its buffer ({window})."),
        _img(loss_figure(result), "retransmits and drops",
             f"Retransmitted segments per flow and packets dropped at the bottleneck ({window})."),
        _img(cdf_figure(result), "CDFs",
             "CDFs over the measurement window: goodput per interval, RTT per trace sample."),
    ]


def _scenario(result: Result, source: str | None) -> str:
    """The scenario, folded: the file as given (when known) and as resolved."""
    text = json.dumps(result.scenario, indent=2, sort_keys=True)
    given = "" if source is None else (
        "<details><summary>scenario file (TOML, as given: --set overrides and defaults "
        f"are in the resolved scenario)</summary><pre>{html.escape(source)}</pre></details>")
    return (f"{given}<details><summary>scenario (resolved, JSON)</summary>"
            f"<pre>{html.escape(text)}</pre></details>")


def run_report(result: Result, path: str | Path, title: str = "tcpeval run",
               source: str | None = None) -> Path:
    """Write a self-contained HTML report of one run (`run_report(load_run(dir), path)`
    for a stored run); `source` is the scenario file's text, shown as given."""
    from .version import version

    s = result.summary
    b = s["bottleneck"]
    start, end = s["window_s"]
    jain = "-" if s["jain_index"] is None else f"{s['jain_index']:.3f}"
    hop = "" if b["name"] == "bottleneck" else f" ({html.escape(b['name'])})"
    body = f"""<h1>{html.escape(title)}</h1>
<p class="version">tcpeval {html.escape(version())}</p>
<p>backend {s['backend']}, seed {s['seed']}, measurement window {start:g}-{end:g} s.
Bottleneck{hop} {b['capacity_mbps']:g} Mbit/s: utilization {100 * b['utilization']:.1f}%,
drops {b['drops']}, loss rate {b['loss_rate']:.2e}, mean queue {b['mean_queue_pkts']:.1f}
packets. Jain index {jain}.</p>
{_summary_table(s)}
{''.join(_figures(result))}
{_scenario(result, source)}"""
    return _write_page(path, title, body)


# ----- the sweep report -------------------------------------------------------------------


def sweep_report(store: str | Path, path: str | Path, x: str, y: str = "throughput_mbps",
                 hue: str | None = None, title: str | None = None) -> Path:
    """Write a self-contained HTML report of a result store (a sweep's or a
    study's): the mean of `y` with its 95% confidence interval over the
    repetitions at each value of axis `x`, one line per value of `hue`; box
    plots of `y` per (x, hue); and Pantheon's throughput-against-delay scatter,
    one point per run with each hue's mean and 1-sigma ellipse. Each figure has
    its numbers in a table under it. Raises PlotError for a bad axis or metric."""
    from .plot import SUMMARY, PlotError, flow_values
    from .version import version

    root = Path(store)
    if not (root / "runs").is_dir():
        raise PlotError(f"{root}: not a result store (no runs/)")
    if y not in SUMMARY:
        raise PlotError(f"--y: {y!r} is not a summary value; allowed: {', '.join(SUMMARY)}")
    df = flow_values([root])
    if df.empty:
        raise PlotError(f"{root}: no finished run to report")
    sections = [s.html() for s in sweep_sections(df, x, y, hue)]
    runs = df["run_id"].nunique()
    title = title or f"tcpeval sweep report: {root.name}"
    hue_words = "" if hue is None else f", one line per {html.escape(hue)}"
    body = f"""<h1>{html.escape(title)}</h1>
<p class="version">tcpeval {html.escape(version())}</p>
<p>Result store <code>{html.escape(str(root))}</code>: {runs} finished runs,
{len(df)} flows. {html.escape(y)} against {html.escape(x)}{hue_words}.</p>
{''.join(sections)}"""
    return _write_page(path, title, body)


def _write_page(path: str | Path, title: str, body: str) -> Path:
    """Write an HTML page atomically (a temporary renamed into place)."""
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse;margin-bottom:2em}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}
figure{{margin:1.5em 0 0.5em}}img{{width:100%}}figcaption{{color:#444;font-size:90%}}
.version{{color:#666}}pre{{background:#f6f6f6;padding:1em;overflow:auto}}</style>
</head><body>{body}</body></html>
"""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(page)
    tmp.replace(out)
    return out


@dataclass
class Section:
    """A figure of the sweep report and the numbers drawn in it."""

    fig: object
    alt: str
    caption: str
    head: list[str]
    rows: list[list]

    def html(self) -> str:
        return _img(self.fig, self.alt, self.caption) + _table(self.head, self.rows)


def sweep_sections(df, x: str, y: str, hue: str | None) -> list[Section]:
    """The report's figures over `flow_values` of a store: mean and CI, box
    plots, throughput against delay."""
    return [_mean_section(df, x, y, hue), _box_section(df, x, y, hue),
            _scatter_section(df, hue or x)]


def _table(head: list[str], rows: list[list]) -> str:
    def cell(v) -> str:
        if isinstance(v, float):
            return "<td>-</td>" if v != v else f"<td>{v:.4g}</td>"
        return f"<td>{html.escape(str(v))}</td>"

    return (f"<table><tr>{''.join(f'<th>{html.escape(h)}</th>' for h in head)}</tr>"
            + "".join("<tr>" + "".join(map(cell, r)) + "</tr>" for r in rows) + "</table>")


def _hues(df, hue: str | None) -> list:
    return [None] if hue is None else list(dict.fromkeys(df[hue].astype(str)))


def _mean_section(df, x: str, y: str, hue: str | None) -> Section:
    """plot's mean figure, and per (x, hue) the values it averages."""
    from .metrics import aggregate
    from .plot import _mean_figure, group_values

    fig = _mean_figure(df, y, x, hue)
    rows = []
    for h in _hues(df, hue):
        part = df if h is None else df[df[hue].astype(str) == h]
        for v, values in group_values(part, y, x).items():
            st = aggregate(values)
            rows.append([v, *([] if h is None else [h]), st["n"], st["mean"],
                         st["mean"] - st["ci"], st["mean"] + st["ci"]])
    head = [x, *([] if hue is None else [hue]), "n", f"mean {y}", "95% CI low", "95% CI high"]
    caption = (f"Mean of {y} at each {x} with its 95% Student-t confidence interval over "
               "the repetitions' values (one per flow, or one per run for a run's value).")
    return Section(fig, f"mean {y}", caption, head, rows)


def _box_section(df, x: str, y: str, hue: str | None) -> Section:
    """plot's box plot, one box per (x, hue) pair, with its five numbers."""
    import numpy as np

    from .plot import _summary_figure, group_values

    if hue is not None and hue != x:
        xv, hv = df[x].astype(str), df[hue].astype(str)
        # Boxes grouped by x, hues in the store's order within each.
        rank = {h: i for i, h in enumerate(dict.fromkeys(hv))}
        order = xv.map({v: i for i, v in enumerate(dict.fromkeys(xv))}) * len(rank) + hv.map(rank)
        df = df.assign(**{BOX_GROUP: xv + " / " + hv}).iloc[order.argsort(kind="stable")]
        by = BOX_GROUP
    else:
        by = x
    fig = _summary_figure(df, "box", y, by)
    ax = fig.axes[0]
    ax.set_xlabel(x if by == x else f"{x} / {hue}")
    if len(ax.get_xticklabels()) > 8:
        ax.tick_params(axis="x", labelrotation=45)
    rows = []
    for g, v in group_values(df, y, by).items():
        q = np.percentile(v, [0, 25, 50, 75, 100]) if len(v) else [float("nan")] * 5
        rows.append([g, len(v), *map(float, q)])
    caption = (f"{y} per {ax.get_xlabel()}: box from the first to the third quartile, line at "
               "the median, whiskers to the furthest value within 1.5 IQR.")
    return Section(fig, f"box {y}", caption,
                   [ax.get_xlabel(), "n", "min", "q1", "median", "q3", "max"], rows)


# A box plot's grouping column when it combines two axes (the dot makes it one
# of the groupings plot accepts: a store's axes are dotted keys).
BOX_GROUP = "x.hue"


def _scatter_section(df, group: str) -> Section:
    """Pantheon's throughput-against-delay plot (Yan et al., USENIX ATC 2018,
    figure 3): one point per run (its flows' total throughput against their mean
    smoothed RTT), per group the mean and the 1-sigma ellipse of its runs."""
    runs = _per_run(df, group)
    fig, ax = figure()
    rows = []
    for n, (g, part) in enumerate(runs.groupby(group, sort=False)):
        color = f"C{n % 10}"
        dx, dy = part["delay_ms"].to_numpy(float), part["throughput_mbps"].to_numpy(float)
        ax.scatter(dx, dy, s=18, alpha=0.6, color=color)
        ax.scatter([dx.mean()], [dy.mean()], s=90, marker="D", color=color, label=g,
                   edgecolor="black", zorder=3)
        if len(dx) > 2:
            _ellipse(ax, dx, dy, color)
        sd = (float(dx.std(ddof=1)), float(dy.std(ddof=1))) if len(dx) > 1 else (
            float("nan"),) * 2
        rows.append([g, len(dx), float(dx.mean()), sd[0], float(dy.mean()), sd[1]])
    ax.invert_xaxis()  # lower delay (better) to the right, as plot's scatter
    ax.set_xlabel("mean smoothed RTT (ms, reversed: better to the right)")
    ax.set_ylabel("throughput (Mbit/s, all flows of the run)")
    legend(ax)
    caption = (f"One small point per run; per {group}: the mean (diamond) and the 1-sigma "
               "ellipse of its runs (the covariance's eigenvectors, axes one standard "
               "deviation long).")
    head = [group, "runs", "mean delay (ms)", "sd delay", "mean throughput (Mbit/s)",
            "sd throughput"]
    return Section(fig, "throughput against delay", caption, head, rows)


def _per_run(df, group: str):
    """One row per run: its flows' total throughput and mean smoothed RTT; a
    run whose flows differ in `group` (cc, with mixed algorithms) is in its
    first flow's group."""
    df = df.assign(**{group: df[group].astype(str)})
    per = df.groupby("run_id", sort=False).agg(
        throughput_mbps=("throughput_mbps", "sum"), delay_ms=("mean_srtt_ms", "mean"),
        **{group: (group, "first")})
    return per.reset_index()


def _ellipse(ax, x, y, color) -> None:
    """The 1-sigma ellipse of (x, y): centred on the mean, axes along the
    covariance matrix's eigenvectors, half-lengths the square roots of its
    eigenvalues."""
    import numpy as np
    from matplotlib.patches import Ellipse

    vals, vecs = np.linalg.eigh(np.cov(x, y))
    angle = float(np.degrees(np.arctan2(vecs[1, -1], vecs[0, -1])))
    w, h = 2 * np.sqrt(np.maximum(vals[::-1], 0))
    ax.add_patch(Ellipse((x.mean(), y.mean()), w, h, angle=angle, fill=False, color=color,
                         lw=1.5, gid="ellipse"))
