"""Self-contained HTML reports (no server: figures are embedded as PNG data).

`run_report` draws what a researcher looks at first after a run: goodput and
cwnd per flow over time, RTT, the bottleneck queue, and the summary table.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .run import Result  # noqa: E402


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _labels(result: Result) -> dict[int, str]:
    return {f["id"]: f["label"] for f in result.summary["flows"]}


def _per_flow_plot(df, column: str, ylabel: str, title: str, labels: dict[int, str]) -> str:
    fig, ax = plt.subplots(figsize=(8, 3.2))
    for flow, rows in df.groupby("flow"):
        ax.plot(rows["t_s"], rows[column], label=labels.get(flow, str(flow)), lw=1)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if len(labels) <= 12:
        ax.legend(fontsize=7, loc="best")
    return _png(fig)


def bottleneck_queue(result: Result):
    """The queue samples of the summary's bottleneck (a parking lot's narrowest hop)."""
    return result.queue[result.queue["link"] == result.summary["bottleneck"]["name"]]


def _queue_plot(result: Result) -> str:
    name = result.summary["bottleneck"]["name"]
    q = bottleneck_queue(result)
    fig, ax = plt.subplots(figsize=(8, 2.6))
    ax.plot(q["t_s"], q["queue_pkts"], lw=0.8, label="queue")
    if "red_avg_pkts" in q and q["red_avg_pkts"].notna().any():
        ax.plot(q["t_s"], q["red_avg_pkts"], lw=1, label="RED average")
        ax.legend(fontsize=7)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("packets")
    ax.set_title("bottleneck queue" if name == "bottleneck" else f"bottleneck queue ({name})")
    ax.grid(alpha=0.3)
    return _png(fig)


def _summary_table(summary: dict) -> str:
    cols = ["label", "cc", "streams", "rtt_ms", "throughput_mbps", "throughput_std_mbps",
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


def _img(data: str, alt: str) -> str:
    return f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></figure>'


def run_report(result: Result, path: str | Path, title: str = "tcpeval run") -> Path:
    """Write a self-contained HTML report of one run."""
    s = result.summary
    b = s["bottleneck"]
    labels = _labels(result)
    figures = [
        _img(_per_flow_plot(result.flows, "throughput_mbps", "goodput (Mbit/s)",
                            "goodput per report interval", labels), "goodput"),
        _img(_per_flow_plot(result.trace.groupby(["t_s", "flow"], as_index=False)["cwnd_pkts"]
                            .sum(), "cwnd_pkts", "cwnd (packets)", "congestion window",
                            labels), "cwnd"),
        _img(_per_flow_plot(result.trace.groupby(["t_s", "flow"], as_index=False)["srtt_ms"]
                            .mean(), "srtt_ms", "smoothed RTT (ms)", "RTT", labels), "rtt"),
        _img(_queue_plot(result), "queue"),
    ]
    start, end = s["window_s"]
    jain = "-" if s["jain_index"] is None else f"{s['jain_index']:.3f}"
    hop = "" if b["name"] == "bottleneck" else f" ({html.escape(b['name'])})"
    body = f"""<h1>{html.escape(title)}</h1>
<p>backend {s['backend']}, seed {s['seed']}, measurement window {start:g}-{end:g} s.
Bottleneck{hop} {b['capacity_mbps']:g} Mbit/s: utilization {100 * b['utilization']:.1f}%,
drops {b['drops']}, loss rate {b['loss_rate']:.2e}, mean queue {b['mean_queue_pkts']:.1f}
packets. Jain index {jain}.</p>
{_summary_table(s)}
{''.join(figures)}"""
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:960px;margin:2em auto}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}
img{{max-width:100%}}</style></head><body>{body}</body></html>
"""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(page)
    tmp.replace(out)
    return out
