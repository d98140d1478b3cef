"""Two or more finished runs side by side (issue 31 item 1): per-flow and
aggregate values of each run and their differences from the first run (the
baseline), computed from the runs' summary.json."""

from __future__ import annotations

import json
import math
from pathlib import Path

# Per-flow values (summary.json's flows) and aggregate ones (its top level and
# bottleneck) that are compared.
FLOW_VALUES = ("throughput_mbps", "retransmits", "timeouts", "mean_cwnd_pkts", "mean_srtt_ms")
AGGREGATE_VALUES = ("total_throughput_mbps", "jain_index", "utilization", "loss_rate",
                    "mean_queue_pkts", "queueing_delay_mean_ms")


class CompareError(ValueError):
    """A path that is not a finished run; the message names it."""


def load_summary(path: str | Path) -> dict:
    path = Path(path)
    try:
        return json.loads((path / "summary.json").read_text())
    except FileNotFoundError:
        raise CompareError(f"{path}: not a run directory (no summary.json)") from None
    except (OSError, ValueError) as e:
        raise CompareError(f"{path}/summary.json: unreadable ({e})") from None


def aggregate(summary: dict) -> dict:
    b = summary["bottleneck"]
    return {"total_throughput_mbps": sum(f["throughput_mbps"] for f in summary["flows"]),
            "jain_index": summary.get("jain_index"), "utilization": b["utilization"],
            "loss_rate": b["loss_rate"], "mean_queue_pkts": b["mean_queue_pkts"],
            "queueing_delay_mean_ms": b.get("queueing_delay_mean_ms")}


def compare(runs) -> dict:
    """{"runs": names, "aggregate": rows, "flows": rows}. A row holds its metric
    (and flow id and label), `values` (one per run, None where a run lacks it)
    and `diffs` (value minus the first run's, one per later run)."""
    paths = [Path(p) for p in runs]
    if len(paths) < 2:
        raise CompareError("compare needs at least two runs")
    summaries = [load_summary(p) for p in paths]
    aggregates = [aggregate(s) for s in summaries]
    agg_rows = [_row({"metric": m}, [a[m] for a in aggregates]) for m in AGGREGATE_VALUES]
    by_id = [{f["id"]: f for f in s["flows"]} for s in summaries]
    flow_rows = []
    for fid in sorted(set().union(*by_id)):
        flows = [f.get(fid) for f in by_id]
        label = "/".join(dict.fromkeys(f["label"] for f in flows if f is not None))
        ccs = "/".join(dict.fromkeys(f["cc"] for f in flows if f is not None))
        for m in FLOW_VALUES:
            flow_rows.append(_row({"flow": fid, "label": label, "cc": ccs, "metric": m},
                                  [None if f is None else f.get(m) for f in flows]))
    return {"runs": [str(p) for p in paths], "aggregate": agg_rows, "flows": flow_rows}


def _row(head: dict, values: list) -> dict:
    base = values[0]
    return {**head, "values": values, "diffs": [_diff(v, base) for v in values[1:]],
            "rel": [_rel(v, base) for v in values[1:]]}


def _diff(value, base):
    return None if value is None or base is None else value - base


def _rel(value, base):
    """The difference as a fraction of the baseline; None when it has none."""
    if value is None or base is None or base == 0 or math.isnan(base):
        return None
    return (value - base) / abs(base)
