"""Plots of finished runs and result stores, after the fact (issue 31 item 1).

`plot(sources, kind, metric, by)` returns a matplotlib Figure, made without
pyplot so no global figure is left open (a notebook with `%matplotlib inline`
shows it; `tcpeval plot ... --out f.png` saves it). A source is a run directory (with
summary.json) or a result store (with runs/); a store stands for all its runs,
each labelled by its axis values.

- timeseries, cdf: a run's per-interval series (one line per flow, or per run
  for the queue), e.g. throughput_mbps, cwnd_pkts, srtt_ms, queue_pkts.
- box, scatter: per-flow summary values (summary.json, or the store's index),
  grouped by --by (cc by default). scatter is Pantheon's throughput-vs-delay
  plot: mean smoothed RTT on x (reversed: lower delay is better, to the right),
  the metric on y.
- mean: a sweep's summary: the metric's mean against an axis (--x) with its
  95% Student-t confidence interval over the values at each point (the
  repetitions' flows, or runs for a run's value), one line per --by group.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

KINDS = ("timeseries", "cdf", "box", "scatter", "mean")
# Per-interval series: metric -> (table, column, y-axis label).
SERIES = {
    "throughput_mbps": ("flows", "throughput_mbps", "throughput (Mbit/s)"),
    "retransmits": ("flows", "retransmits", "retransmits per interval"),
    "cwnd_pkts": ("trace", "cwnd_pkts", "cwnd (packets)"),
    "inflight_pkts": ("trace", "inflight_pkts", "in flight (packets)"),
    "srtt_ms": ("trace", "srtt_ms", "smoothed RTT (ms)"),
    "queue_pkts": ("queue", "queue_pkts", "bottleneck queue (packets)"),
}
# Per-flow summary values (summary.json's flows, the index's flow<i>.* columns)
# and per-run ones (repeated on each of the run's flows).
FLOW_VALUES = ("throughput_mbps", "retransmits", "timeouts", "mean_cwnd_pkts", "mean_srtt_ms")
RUN_VALUES = ("jain_index", "utilization", "loss_rate")
SUMMARY = {**dict.fromkeys(FLOW_VALUES), **dict.fromkeys(RUN_VALUES)}
LABELS = {"throughput_mbps": "throughput (Mbit/s)", "mean_srtt_ms": "mean smoothed RTT (ms)",
          "mean_cwnd_pkts": "mean cwnd (packets)", "jain_index": "Jain index",
          "loss_rate": "loss rate", "utilization": "bottleneck utilization"}
# Groupings every source offers; a store adds its axes.
BY = ("cc", "flow", "run")
FORMATS = (".png", ".svg", ".pdf")


class PlotError(ValueError):
    """A bad source, kind, metric or grouping; the message names the field and
    what is allowed."""


@dataclass
class RunSource:
    """One run directory and how its lines are named."""

    path: Path
    label: str
    axes: dict


def plot(sources, kind: str = "timeseries", metric: str = "throughput_mbps",
         by: str | None = None, title: str | None = None, x: str | None = None):
    """A matplotlib Figure of `metric` over `sources` (paths of runs or stores);
    `x` is the axis of kind "mean"."""
    if kind not in KINDS:
        raise PlotError(f"--kind: {kind!r} is not one of {', '.join(KINDS)}")
    if (x is None) != (kind != "mean"):
        raise PlotError("--x: the axis of --kind mean (e.g. --x network.rtt), and only of it")
    allowed = SERIES if kind in ("timeseries", "cdf") else SUMMARY
    if metric not in allowed:
        raise PlotError(f"--metric: {metric!r} cannot be drawn as {kind}; allowed: "
                        f"{', '.join(allowed)}")
    paths = [Path(p) for p in ([sources] if isinstance(sources, str | Path) else sources)]
    if not paths:
        raise PlotError("no run or result store given")
    if kind in ("timeseries", "cdf"):
        runs = expand(paths)
        if not runs:
            raise PlotError("no finished run to plot (the store holds none)")
        fig = _series_figure(runs, kind, metric, by)
    elif kind == "mean":
        fig = _mean_figure(flow_values(paths), metric, x, by)
    else:
        fig = _summary_figure(flow_values(paths), kind, metric, by or "cc")
    if title:
        fig.axes[0].set_title(title)
    return fig


def check_out(out: str | Path, option: str = "--out") -> Path:
    out = Path(out)
    if out.suffix.lower() not in FORMATS:
        raise PlotError(f"{option}: {out.name!r} must end in one of {', '.join(FORMATS)}")
    return out


def save(fig, out: str | Path, option: str = "--out") -> Path:
    out = check_out(out, option)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    return out


# ----- sources ----------------------------------------------------------------------------


def expand(paths: list[Path]) -> list[RunSource]:
    """Every run the paths name: a run directory itself, a store's stored runs
    (labelled by their axis values, sorted by them)."""
    runs = []
    for path in paths:
        if (path / "summary.json").is_file():
            runs.append(RunSource(path, path.name, {}))
        elif (path / "runs").is_dir():
            runs += _store_runs(path)
        else:
            raise PlotError(f"{path}: neither a run directory (summary.json) nor a result "
                            "store (runs/)")
    if len({r.label for r in runs}) < len(runs):  # e.g. two runs both called "demo"
        runs = [RunSource(r.path, f"{r.label} ({r.path})", r.axes) for r in runs]
    return runs


def _store_runs(root: Path) -> list[RunSource]:
    from .store import Store, axis_columns, sort_by_axes

    store = Store(root)
    index = sort_by_axes(store.index(), store.axis_values())
    ok = index[index["status"] == "ok"]
    axes = [c for c in axis_columns(index) if ok[c].nunique(dropna=True) > 1]
    runs = []
    for row in ok.to_dict("records"):
        values = {a: row[a] for a in axes}
        label = ", ".join(f"{a}={v}" for a, v in values.items()) or row["key"][:8]
        if ok["repetition"].nunique() > 1:
            label += f" #{row['repetition']}"
        runs.append(RunSource(root / "runs" / row["key"], label, values))
    return runs


def flow_values(paths: list[Path]):
    """One row per flow of every run: its run's label and axes, flow, cc, label,
    the per-flow values and its run's values (a DataFrame)."""
    import pandas as pd

    rows = []
    for path in paths:
        if (path / "summary.json").is_file():
            rows += _run_flow_rows(path)
        elif (path / "runs").is_dir():
            rows += _store_flow_rows(path)
        else:
            raise PlotError(f"{path}: neither a run directory (summary.json) nor a result "
                            "store (runs/)")
    return pd.DataFrame(rows)


def _run_flow_rows(path: Path) -> list[dict]:
    summary = json.loads((path / "summary.json").read_text())
    b = summary["bottleneck"]
    run = {"jain_index": summary.get("jain_index"), "utilization": b["utilization"],
           "loss_rate": b["loss_rate"]}
    run_id = str(path.resolve())
    return [{"run": path.name, "run_id": run_id, "flow": f["id"], "cc": f["cc"],
             "label": f["label"], **run, **{m: f.get(m) for m in FLOW_VALUES}}
            for f in summary["flows"]]


def _store_flow_rows(root: Path) -> list[dict]:
    from .store import Store, axis_columns, sort_by_axes

    store = Store(root)
    index = sort_by_axes(store.index(), store.axis_values())
    index = index[index["status"] == "ok"]
    axes = axis_columns(index)
    flows = sorted(int(m[1]) for c in index.columns if (m := re.fullmatch(r"flow(\d+)\.cc", c)))
    rows = []
    for rec in index.to_dict("records"):
        base = {"run": rec["key"][:8], "run_id": str(root.resolve() / rec["key"]),
                **{a: rec[a] for a in axes},
                **{m: rec.get(m) for m in RUN_VALUES}}
        for i in flows:
            if isinstance(rec.get(f"flow{i}.cc"), str):  # the run has this flow
                rows.append({**base, "flow": i, "cc": rec[f"flow{i}.cc"], "label": f"flow {i}",
                             **{m: rec[f"flow{i}.{m}"] for m in FLOW_VALUES}})
    return rows


# ----- per-interval series ----------------------------------------------------------------


@dataclass
class Line:
    name: str
    t: object  # numpy arrays
    v: object
    cc: str | None = None  # None: the queue (no flow)
    flow: int | None = None


def bottleneck_queue(result):
    """The queue samples of the summary's bottleneck (a parking lot's narrowest hop)."""
    return result.queue[result.queue["link"] == result.summary["bottleneck"]["name"]]


def series(run: RunSource, metric: str) -> list[Line]:
    """The lines of one stored run (see `result_lines`)."""
    from .run import load_run

    return result_lines(load_run(run.path), metric, run.label)


def result_lines(result, metric: str, label: str = "") -> list[Line]:
    """The lines of one run's Result: a flow's series (streams summed, RTT
    averaged; an RTT of 0 before the first sample is missing, not 0), or the
    bottleneck's queue (a parking lot's narrowest hop)."""
    import numpy as np

    table, column, _ = SERIES[metric]
    if table == "queue":
        q = bottleneck_queue(result)
        return [Line(label or "queue", q["t_s"].to_numpy(), q[column].to_numpy(float))]
    df = getattr(result, table)
    if column not in df:  # a run stored before the engine recorded the column
        return []
    if metric == "srtt_ms":
        df = df.assign(srtt_ms=df["srtt_ms"].where(df["srtt_ms"] > 0, np.nan))
    how = "mean" if metric == "srtt_ms" else "sum"
    grouped = df.groupby(["flow", "t_s"], sort=True)[column].agg(how).reset_index()
    flows = {f["id"]: f for f in result.summary["flows"]}
    lines = []
    for flow, rows in grouped.groupby("flow"):
        name = flows[flow]["label"] if flow in flows else f"flow {flow}"
        lines.append(Line(f"{label}: {name}" if label else name, rows["t_s"].to_numpy(),
                          rows[column].to_numpy(float), flows.get(flow, {}).get("cc"), flow))
    return lines


LINE_STYLES = ("-", "--", ":", "-.")


def line_style(n: int) -> dict:
    """The n-th line's colour and dash: ten colours, then the next dash, so
    up to forty lines stay distinguishable."""
    return {"color": f"C{n % 10}", "ls": LINE_STYLES[n // 10 % len(LINE_STYLES)]}


def draw_line(ax, line: Line, kind: str, color=None, label=None, ls="-") -> None:
    """A line as a time series, or as the CDF of its values (missing ones left out)."""
    import numpy as np

    if kind == "timeseries":
        ax.plot(line.t, line.v, lw=1, color=color, ls=ls, label=label)
        return
    x = np.sort(line.v[~np.isnan(line.v)])
    ax.step(x, np.arange(1, len(x) + 1) / max(len(x), 1), where="post", lw=1, color=color,
            ls=ls, label=label)


def label_axes(ax, kind: str, metric: str) -> None:
    ylabel = SERIES[metric][2]
    if kind == "timeseries":
        ax.set_xlabel("time (s)")
        ax.set_ylabel(ylabel)
    else:
        ax.set_xlabel(ylabel)
        ax.set_ylabel("fraction of intervals")


def _series_figure(runs: list[RunSource], kind: str, metric: str, by: str | None):
    if by is not None and by not in BY:
        raise PlotError(f"--by: {by!r} cannot group {kind} lines; allowed: {', '.join(BY)}")
    fig, ax = figure()
    solo = len(runs) == 1
    colors: dict[str, str] = {}
    n = 0
    for run in runs:
        for line in series(RunSource(run.path, "" if solo else run.label, run.axes), metric):
            if by:  # one colour and one legend entry per group
                group = _group_of(by, run, line)
                label = None if group in colors else group
                draw_line(ax, line, kind, colors.setdefault(group, f"C{len(colors) % 10}"),
                          label)
            else:
                draw_line(ax, line, kind, label=line.name, **line_style(n))
                n += 1
    label_axes(ax, kind, metric)
    legend(ax)
    return fig


def figure(size=(10, 4.5), columns: int = 1):
    """A Figure (without pyplot) and its axes, one per column."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    axes = list(fig.subplots(1, columns, squeeze=False)[0])
    for ax in axes:
        ax.grid(alpha=0.3)
    return fig, (axes[0] if columns == 1 else axes)


def _group_of(by: str, run: RunSource, line: Line) -> str:
    """The group of a line; the queue (no flow) is grouped by its run."""
    if by == "cc" and line.cc is not None:
        return line.cc
    if by == "flow" and line.flow is not None:
        return f"flow {line.flow}"
    return run.label or run.path.name


def legend(ax) -> None:
    """Inside the axes for a few entries; beside them, right, for more (where
    it would hide the lines)."""
    _, labels = ax.get_legend_handles_labels()
    if len(labels) > 6:
        ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False,
                  ncol=1 + len(labels) // 16)
    elif labels:
        ax.legend(fontsize=9, loc="best")


# ----- per-flow summary values --------------------------------------------------------------


def _check_grouping(df, option: str, name: str) -> None:
    allowed = [*BY, *(c for c in df.columns if "." in c)]  # a store's axes are dotted keys
    if name not in allowed:
        raise PlotError(f"{option}: {name!r} is not a grouping of these results; allowed: "
                        f"{', '.join(allowed)}")
    if df.empty:
        raise PlotError("no finished run to plot")


def _summary_figure(df, kind: str, metric: str, by: str):
    _check_grouping(df, "--by", by)
    fig, ax = figure()
    if kind == "box":
        data = group_values(df, metric, by)
        parts = ax.boxplot(list(data.values()), tick_labels=list(data))
        for median in parts["medians"]:
            median.set_gid("median")  # found by callers (and tests) among the lines
        ax.set_xlabel(by)
        ax.set_ylabel(LABELS.get(metric, metric))
        return fig
    for n, g in enumerate(dict.fromkeys(df[by].astype(str))):
        rows = df[df[by].astype(str) == g]
        ax.scatter(rows["mean_srtt_ms"].astype(float), rows[metric].astype(float), label=g,
                   color=f"C{n % 10}", s=30, alpha=0.8)
    ax.invert_xaxis()  # Pantheon: lower delay (better) to the right
    ax.set_xlabel(LABELS["mean_srtt_ms"] + " (reversed: better to the right)")
    ax.set_ylabel(LABELS.get(metric, metric))
    legend(ax)
    return fig


def group_values(df, metric: str, by: str) -> dict:
    """{group: values} in first-seen order: one value per flow, or per run for a
    run's value (the Jain index is on each of its flows' rows once)."""
    if metric in RUN_VALUES:
        df = df.drop_duplicates(["run_id", by])
    groups = df[by].astype(str)
    return {g: df.loc[groups == g, metric].astype(float).dropna().to_numpy()
            for g in dict.fromkeys(groups)}


def _mean_figure(df, metric: str, x: str, by: str | None):
    """Means with 95% confidence intervals (metrics.aggregate) at each value of
    x, x's values evenly spaced in the store's order."""
    from .metrics import aggregate

    _check_grouping(df, "--x", x)
    if by is not None:
        _check_grouping(df, "--by", by)
    fig, ax = figure()
    xs = list(dict.fromkeys(df[x].astype(str)))
    hues = [None] if by is None else list(dict.fromkeys(df[by].astype(str)))
    for n, hue in enumerate(hues):
        rows = df if hue is None else df[df[by].astype(str) == hue]
        points = group_values(rows, metric, x)
        stats = [aggregate(points.get(v, [])) for v in xs]
        ax.errorbar(range(len(xs)), [st["mean"] for st in stats],
                    yerr=[0 if st["ci"] != st["ci"] else st["ci"] for st in stats],
                    marker="o", capsize=4, lw=1, color=f"C{n % 10}", label=hue)
    ax.set_xticks(range(len(xs)), xs)
    ax.set_xlabel(x)
    ax.set_ylabel(f"{LABELS.get(metric, metric)}: mean, 95% CI")
    legend(ax)
    return fig
