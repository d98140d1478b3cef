"""Run a scenario: resolve it, call the engine (or the testbed), and turn the
engine's columns into DataFrames and the summary."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import metrics
from .scenario import Scenario, ScenarioError, engine_config, load_scenario, resolve

NS = 1e9


@dataclass
class Result:
    """A finished run: the resolved scenario, the summary, and the tables."""

    scenario: dict
    summary: dict
    flows: pd.DataFrame
    trace: pd.DataFrame
    queue: pd.DataFrame
    links: pd.DataFrame
    udp: pd.DataFrame
    completions: pd.DataFrame
    raw: dict = field(repr=False, default_factory=dict)

    def engine_summary(self) -> dict:
        """The engine's per-flow and per-link counters (everything but the tables)."""
        keep = ("flows", "links", "sim", "validity", "backend")
        return {k: self.raw[k] for k in keep if k in self.raw}

    def tables(self) -> dict[str, pd.DataFrame]:
        return {"flows": self.flows, "trace": self.trace, "queue": self.queue,
                "links": self.links, "udp": self.udp, "completions": self.completions}


def simulate(config: dict) -> dict:
    """Call the simulator on an engine config; engine errors become ScenarioErrors."""
    from . import _sim

    try:
        return json.loads(_sim.simulate(json.dumps(config)))
    except ValueError as e:
        raise ScenarioError(f"engine: {e}") from None


def run_backend(resolved: dict) -> tuple[dict, float]:
    """Run the resolved scenario on its backend; returns the engine-shaped result
    and the wall time of the run."""
    t0 = time.perf_counter()
    if resolved["meta"]["backend"] == "testbed":
        from . import testbed

        try:
            raw = testbed.run_engine_config(engine_config(resolved))
        except (testbed.TestbedUnavailable, testbed.TestbedError) as e:
            raise ScenarioError(f"backend testbed: {e}") from None
    else:
        raw = simulate(engine_config(resolved))
    return raw, time.perf_counter() - t0


def run(scenario: str | Path | dict | Scenario, *, overrides=(), seed: int | None = None,
        backend: str | None = None) -> Result:
    """Run a scenario (a TOML path, a dict or a Scenario) and return its Result."""
    if backend is not None:
        overrides = [*overrides, f"run.backend={json.dumps(backend)}"]
    sc = load_scenario(scenario, overrides)
    base_dir = Path(scenario).parent if isinstance(scenario, str | Path) else None
    resolved = resolve(sc, seed=seed, base_dir=base_dir)
    raw, wall = run_backend(resolved)
    return build_result(resolved, raw, wall)


def build_result(resolved: dict, raw: dict, wall_s: float) -> Result:
    meta = resolved["meta"]
    stream_of = _stream_to_flow(meta["logical_flows"])
    flows = _flow_table(raw, resolved, stream_of)
    trace = _trace_table(raw, stream_of)
    queue = _frame(raw["queue"], ("t_ns",))
    links = _link_table(raw, resolved)
    udp = _frame(raw.get("udp_intervals", {}), ("t_ns",))
    completions = _completions(raw)
    summary = summarize(resolved, raw, flows, trace, links, wall_s, queue)
    return Result(resolved, summary, flows, trace, queue, links, udp, completions, raw)


def load_run(directory: str | Path) -> Result:
    """Read a run written by `store.write_run` back into a Result."""
    d = Path(directory)
    if not (d / "summary.json").exists():
        raise ScenarioError(f"{d}: not a run directory (no summary.json)")
    resolved = json.loads((d / "scenario.json").read_text())
    raw = json.loads((d / "engine.json").read_text())
    summary = json.loads((d / "summary.json").read_text())
    tables = {name: pd.read_parquet(d / f"{name}.parquet")
              for name in ("flows", "trace", "queue", "links", "udp", "completions")}
    return Result(resolved, summary, raw=raw, **tables)


def resummarize(result: Result, start_s: float | None = None,
                end_s: float | None = None) -> dict:
    """The summary of a finished run over another measurement window."""
    resolved = json.loads(json.dumps(result.scenario))
    duration = resolved["duration_ns"] / NS
    start = resolved["meta"]["measure_from_s"] if start_s is None else start_s
    end = duration if end_s is None else end_s
    if not 0 <= start < end <= duration + 1e-9:
        raise ScenarioError(f"window {start:g}-{end:g} s: need 0 <= from < to <= {duration:g}")
    resolved["meta"]["measure_from_s"] = start
    resolved["duration_ns"] = int(round(end * NS))
    s = summarize(resolved, result.raw, result.flows, result.trace, result.links,
                  result.summary["sim"]["wall_s"], result.queue)
    s["sim"] = result.summary["sim"]
    return s


def _stream_to_flow(logical: list[dict]) -> dict[int, int]:
    return {s: f["id"] for f in logical for s in f["streams"]}


def _frame(columns: dict, time_cols=()) -> pd.DataFrame:
    df = pd.DataFrame(columns)
    for c in time_cols:
        if c in df:
            df.insert(0, "t_s", df.pop(c) / NS)
    return df


def _flow_table(raw: dict, resolved: dict, stream_of: dict[int, int]) -> pd.DataFrame:
    """Per report interval and logical flow: goodput (streams summed)."""
    iv = _frame(raw["intervals"], ("t_ns",))
    cols = ["t_s", "flow", "cc", "delivered_bytes", "throughput_mbps"]
    if iv.empty:
        return pd.DataFrame(columns=cols)
    iv = iv[iv["flow"].isin(stream_of)]
    iv = iv.assign(flow=iv["flow"].map(stream_of))
    df = iv.groupby(["t_s", "flow"], as_index=False)["delivered_bytes"].sum()
    interval_s = resolved["interval_ns"] / NS
    df["throughput_mbps"] = df["delivered_bytes"] * 8 / interval_s / 1e6
    cc = {f["id"]: f["cc"] for f in resolved["meta"]["logical_flows"]}
    df.insert(2, "cc", df["flow"].map(cc))
    return df[cols]


def _trace_table(raw: dict, stream_of: dict[int, int]) -> pd.DataFrame:
    tr = _frame(raw["trace"], ("t_ns",))
    if tr.empty:
        return pd.DataFrame(columns=["t_s", "flow", "stream", "cwnd_pkts", "ssthresh_pkts",
                                     "srtt_ms", "inflight_pkts"])
    tr = tr[tr["flow"].isin(stream_of)].rename(columns={"flow": "stream"})
    tr.insert(1, "flow", tr["stream"].map(stream_of))
    tr["srtt_ms"] = tr.pop("srtt_ns") / 1e6
    return tr[["t_s", "flow", "stream", "cwnd_pkts", "ssthresh_pkts", "srtt_ms",
               "inflight_pkts"]].reset_index(drop=True)


def _link_table(raw: dict, resolved: dict) -> pd.DataFrame:
    li = _frame(raw["link_intervals"], ("t_ns",))
    if li.empty:
        return li
    capacity = {link["name"]: link["capacity_bps"] for link in raw["links"]}
    interval_s = resolved["interval_ns"] / NS
    li["utilization"] = li["tx_bytes"] * 8 / (li["link"].map(capacity) * interval_s)
    return li


def _completions(raw: dict) -> pd.DataFrame:
    """Fixed-size and background transfers: size, start, completion (FCT)."""
    rows = [
        {"id": f["id"], "group": f.get("group"), "cc": f["cc"], "start_s": f["start_ns"] / NS,
         "bytes": f["bytes_delivered"],
         "end_s": None if f["completed_ns"] is None else f["completed_ns"] / NS}
        for f in raw["flows"] if f.get("completed_ns") is not None or f.get("group") == "web"
    ]
    df = pd.DataFrame(rows, columns=["id", "group", "cc", "start_s", "bytes", "end_s"])
    df["fct_s"] = df["end_s"] - df["start_s"]
    return df


def _window(df: pd.DataFrame, start: float, end: float) -> pd.DataFrame:
    """Rows of interval tables whose interval ends in (start, end]."""
    return df[(df["t_s"] > start + 1e-12) & (df["t_s"] <= end + 1e-12)]


def summarize(resolved, raw, flows, trace, links, wall_s, queue=None) -> dict:
    meta = resolved["meta"]
    start = meta["measure_from_s"]
    end = resolved["duration_ns"] / NS
    interval = resolved["interval_ns"] / NS
    per_flow = [_flow_summary(f, raw, resolved, flows, trace, start, end, interval)
                for f in meta["logical_flows"]]
    x = [f["throughput_mbps"] for f in per_flow]
    summary = {
        "backend": meta["backend"],
        "seed": resolved["seed"],
        "window_s": [start, end],
        "flows": per_flow,
        "bottleneck": _bottleneck_summary(raw, links, queue, start, end),
        "jain_index": metrics.jain_index(x) if per_flow else None,
        "asymmetry": metrics.asymmetry(*x) if len(x) == 2 else None,
        "aggregate_cov": metrics.aggregate_cov(flows, start, end) if per_flow else None,
        "sim": {"events": raw["sim"]["events"], "packets": raw["sim"]["packets"],
                "sim_time_s": raw["sim"]["end_ns"] / NS, "wall_s": wall_s,
                "engine_version": _engine_version()},
    }
    if any(len(f["streams"]) > 1 for f in meta["logical_flows"]):
        summary["streams"] = [_stream_summary(raw["flows"][s], f["id"])
                              for f in meta["logical_flows"] for s in f["streams"]]
    if raw.get("validity"):
        summary["validity"] = raw["validity"]
    return _clean(summary)


def _engine_version() -> str:
    from . import _sim

    return _sim.version()


def _flow_summary(f, raw, resolved, flows, trace, start, end, interval) -> dict:
    engine = [raw["flows"][s] for s in f["streams"]]
    cfg = resolved["flows"][f["streams"][0]]
    first = max(start, cfg["start_ns"] / NS)
    rows = _window(flows[flows["flow"] == f["id"]], first, end)
    # Only whole intervals inside the window count.
    rows = rows[rows["t_s"] - interval >= first - 1e-9]
    tput = float(rows["throughput_mbps"].mean()) if len(rows) else 0.0
    tr = trace[(trace["flow"] == f["id"]) & (trace["t_s"] >= first) & (trace["t_s"] <= end)]
    cwnd = tr.groupby("t_s")["cwnd_pkts"].sum().mean() if len(tr) else float("nan")
    sent = sum(e["segments_sent"] for e in engine)
    retx = sum(e["retransmits"] for e in engine)
    return {
        "id": f["id"], "label": f["label"], "cc": f["cc"], "streams": len(f["streams"]),
        "rtt_ms": cfg["rtt_ns"] / 1e6, "start_s": cfg["start_ns"] / NS,
        "throughput_mbps": tput,
        "throughput_std_mbps": float(rows["throughput_mbps"].std(ddof=0)) if len(rows) else 0.0,
        "throughput_q25_mbps": _quantile(rows, 0.25),
        "throughput_q50_mbps": _quantile(rows, 0.5),
        "throughput_q75_mbps": _quantile(rows, 0.75),
        "stability_index": metrics.stability_index(rows["throughput_mbps"].to_numpy()),
        "retransmits": retx, "timeouts": sum(e["timeouts"] for e in engine),
        "mean_cwnd_pkts": float(cwnd),
        "mean_srtt_ms": float(tr["srtt_ms"][tr["srtt_ms"] > 0].mean()) if len(tr) else float("nan"),
        "bytes_delivered": sum(e["bytes_delivered"] for e in engine),
        "segments_sent": sent,
        "retransmit_rate": retx / sent if sent else 0.0,
        "completed_s": _completed(engine),
    }


def _quantile(rows: pd.DataFrame, q: float) -> float:
    return float(rows["throughput_mbps"].quantile(q)) if len(rows) else float("nan")


def _completed(engine: list[dict]) -> float | None:
    done = [e["completed_ns"] for e in engine]
    return None if any(d is None for d in done) else max(done) / NS


def _stream_summary(e: dict, flow_id: int) -> dict:
    return {"flow": flow_id, "stream": e["id"], "bytes_delivered": e["bytes_delivered"],
            "retransmits": e["retransmits"], "timeouts": e["timeouts"],
            "segments_sent": e["segments_sent"]}


def _bottleneck_summary(raw, links, queue, start, end) -> dict:
    link = raw["links"][0]
    delay = (metrics.queueing_delay(queue, link["capacity_bps"], link["name"], start, end)
             if queue is not None and len(queue) else {})
    rows = _window(links[links["link"] == link["name"]], start, end) if len(links) else links
    drops = link["drops_overflow"] + link["drops_random"] + link.get("drops_early", 0)
    return {
        "name": link["name"],
        "capacity_mbps": link["capacity_bps"] / 1e6,
        "utilization": float(rows["utilization"].mean()) if len(rows) else 0.0,
        "drops": drops,
        "loss_rate": drops / link["arrivals"] if link["arrivals"] else 0.0,
        "mean_queue_pkts": float(rows["queue_pkts_mean"].mean()) if len(rows) else 0.0,
        "max_queue_pkts": link["max_queue_pkts"],
        "window_loss_rate": (metrics.loss_rate(links, start, end, link["name"])
                             if len(links) else 0.0),
        "queueing_delay_mean_ms": delay.get("mean_ms"),
        "queueing_delay_p99_ms": delay.get("p99_ms"),
    }


def _clean(obj):
    """JSON-safe: NaN becomes None, numpy scalars become Python numbers."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj
