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
from .engine_output import EngineOutput, Flow, Link, Stream, logical_flows
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


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run, naming the backend that was running (the testbed has
    torn its network down by then), so the message can fit it."""

    def __init__(self, backend: str):
        super().__init__(backend)
        self.backend = backend


def run_backend(resolved: dict) -> tuple[dict, float]:
    """Run the resolved scenario on its backend; returns the engine-shaped result
    and the wall time of the run."""
    t0 = time.perf_counter()
    backend = resolved["meta"]["backend"]
    try:
        raw = _testbed(resolved) if backend == "testbed" else simulate(engine_config(resolved))
    except KeyboardInterrupt:
        raise RunInterrupted(backend) from None
    return raw, time.perf_counter() - t0


def _testbed(resolved: dict) -> dict:
    from . import testbed

    try:
        return testbed.run_engine_config(engine_config(resolved))
    except (testbed.TestbedUnavailable, testbed.TestbedError) as e:
        raise ScenarioError(f"backend testbed: {e}") from None


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
    out = EngineOutput.from_json(raw)
    flows_of_run = logical_flows(resolved)
    flows = _flow_table(out, resolved, flows_of_run)
    trace = _trace_table(out, flows_of_run)
    queue = _frame(out.queue, ("t_ns",))
    links = _link_table(out, resolved)
    udp = _frame(out.udp_intervals, ("t_ns",))
    completions = _completions(out.streams)
    summary = summarize(resolved, out, flows, trace, links, wall_s, queue)
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
    s = summarize(resolved, EngineOutput.from_json(result.raw), result.flows, result.trace,
                  result.links, result.summary["sim"]["wall_s"], result.queue)
    s["sim"] = result.summary["sim"]
    return s


def _flow_of_stream(flows_of_run: list[Flow]) -> dict[int, int]:
    return {s: f.id for f in flows_of_run for s in f.streams}


def _frame(columns: dict, time_cols=()) -> pd.DataFrame:
    df = pd.DataFrame(columns)
    for c in time_cols:
        if c in df:
            df.insert(0, "t_s", df.pop(c) / NS)
    return df


# Per-interval event counts of a flow; runs stored before the engine recorded
# them (and testbed runs, for timeouts) lack some of these columns.
INTERVAL_COUNTS = ("retransmits", "timeouts")


def _flow_table(out: EngineOutput, resolved: dict, flows_of_run: list[Flow]) -> pd.DataFrame:
    """Per report interval and logical flow: goodput, retransmits and timeouts
    (streams summed)."""
    stream_of = _flow_of_stream(flows_of_run)
    iv = _frame(out.intervals, ("t_ns",))
    counts = [c for c in INTERVAL_COUNTS if c in iv or iv.empty]
    cols = ["t_s", "flow", "cc", "delivered_bytes", "throughput_mbps", *counts]
    if iv.empty:
        return pd.DataFrame(columns=cols)
    iv = iv[iv["flow"].isin(stream_of)]
    iv = iv.assign(flow=iv["flow"].map(stream_of))
    df = iv.groupby(["t_s", "flow"], as_index=False)[["delivered_bytes", *counts]].sum()
    interval_s = resolved["interval_ns"] / NS
    df["throughput_mbps"] = df["delivered_bytes"] * 8 / interval_s / 1e6
    cc = {f.id: f.cc for f in flows_of_run}
    df.insert(2, "cc", df["flow"].map(cc))
    return df[cols]


def _trace_table(out: EngineOutput, flows_of_run: list[Flow]) -> pd.DataFrame:
    stream_of = _flow_of_stream(flows_of_run)
    tr = _frame(out.trace, ("t_ns",))
    if tr.empty:
        return pd.DataFrame(columns=["t_s", "flow", "stream", "cwnd_pkts", "ssthresh_pkts",
                                     "srtt_ms", "inflight_pkts"])
    tr = tr[tr["flow"].isin(stream_of)].rename(columns={"flow": "stream"})
    tr.insert(1, "flow", tr["stream"].map(stream_of))
    tr["srtt_ms"] = tr.pop("srtt_ns") / 1e6
    return tr[["t_s", "flow", "stream", "cwnd_pkts", "ssthresh_pkts", "srtt_ms",
               "inflight_pkts"]].reset_index(drop=True)


def _link_table(out: EngineOutput, resolved: dict) -> pd.DataFrame:
    li = _frame(out.link_intervals, ("t_ns",))
    if li.empty:
        return li
    capacity = {link.name: link.capacity_bps for link in out.links}
    interval_s = resolved["interval_ns"] / NS
    li["utilization"] = li["tx_bytes"] * 8 / (li["link"].map(capacity) * interval_s)
    return li


COMPLETION_COLUMNS = ["id", "group", "cc", "start_s", "size_bytes", "delivered_bytes",
                      "completed", "end_s", "fct_s"]


def _completions(streams: tuple[Stream, ...]) -> pd.DataFrame:
    """Every fixed-size transfer (background web ones included): its size, the
    bytes it delivered, and whether and when it completed. An unfinished
    transfer has no end and no FCT (null, never 0)."""
    rows = [_completion(s) for s in streams if s.size_bytes is not None]
    df = pd.DataFrame(rows, columns=COMPLETION_COLUMNS)
    return df.astype({"size_bytes": "int64", "delivered_bytes": "int64", "completed": "bool",
                      "end_s": "float64", "fct_s": "float64"})


def _completion(s: Stream) -> dict:
    done = s.completed_ns
    start = s.start_ns / NS
    return {"id": s.id, "group": s.group, "cc": s.cc, "start_s": start,
            "size_bytes": s.size_bytes, "delivered_bytes": s.bytes_delivered,
            "completed": done is not None,
            "end_s": None if done is None else done / NS,
            "fct_s": None if done is None else done / NS - start}


def summarize(resolved, out: EngineOutput, flows, trace, links, wall_s, queue=None) -> dict:
    """The run's summary over its measurement window [measure_from, end]. Every
    count a flow or link reports under its plain name (retransmits, timeouts,
    drops, loss_rate) is the window's; the whole run's carry a `_total` suffix.
    Every formula is metrics.py's."""
    meta = resolved["meta"]
    start = meta["measure_from_s"]
    end = resolved["duration_ns"] / NS
    flows_of_run = logical_flows(resolved)
    per_flow = _flow_summaries(resolved, out, flows_of_run, flows, trace, start, end)
    x = [f["throughput_mbps"] for f in per_flow]
    forward = out.forward_links()
    narrowest = min(forward, key=lambda link: link.capacity_bps)  # ties: the first
    summary = {
        "backend": meta["backend"],
        "seed": resolved["seed"],
        "window_s": [start, end],
        "flows": per_flow,
        "bottleneck": _link_summary(narrowest, links, queue, start, end),
        "jain_index": metrics.jain_index(x) if per_flow else None,
        "asymmetry": metrics.asymmetry(*x) if len(x) == 2 else None,
        "aggregate_cov": metrics.aggregate_cov(flows, start, end) if per_flow else None,
        "sim": {"events": out.sim.events, "packets": narrowest.tx_data_packets,
                "sim_time_s": out.sim.end_ns / NS, "wall_s": wall_s,
                "engine_version": _engine_version()},
    }
    if len(forward) > 1:
        summary["hops"] = [_link_summary(link, links, queue, start, end) for link in forward]
    if any(len(f.streams) > 1 for f in flows_of_run):
        summary["streams"] = [_stream_summary(out.streams[s], f.id)
                              for f in flows_of_run for s in f.streams]
    if out.validity:
        summary["validity"] = out.validity
    return _clean(summary)


def _engine_version() -> str:
    from . import _sim

    return _sim.version()


def _flow_summaries(resolved, out: EngineOutput, flows_of_run: list[Flow], flows, trace,
                    start, end) -> list[dict]:
    """Per logical flow, from one pass over each table (grouped by flow), not one
    scan of the whole table per flow: 2,000 flows would cost seconds."""
    first = pd.Series({f.id: max(start, resolved["flows"][f.streams[0]]["start_ns"] / NS)
                       for f in flows_of_run}, dtype="float64")
    interval = resolved["interval_ns"] / NS
    tput = metrics.per_flow(metrics.whole_intervals(flows, first, end, interval),
                            "throughput_mbps")
    tr = trace[(trace["t_s"] >= trace["flow"].map(first)) & (trace["t_s"] <= end)]
    cwnd = metrics.per_flow(tr.groupby(["flow", "t_s"], as_index=False)["cwnd_pkts"].sum(),
                            "cwnd_pkts")
    srtt = metrics.per_flow(tr[tr["srtt_ms"] > 0], "srtt_ms")
    # A count the table lacks (an older run's) is missing from the result.
    counts = [c for c in INTERVAL_COUNTS if c in flows]
    window_counts = metrics.window_counts(flows, counts, start, end) if counts else {}
    return [_flow_summary(f, [out.streams[s] for s in f.streams], resolved,
                          tput.get(f.id, EMPTY), cwnd.get(f.id), srtt.get(f.id, EMPTY),
                          window_counts.get(f.id, {}))
            for f in flows_of_run]


EMPTY = np.array([], dtype="float64")


def _flow_summary(f: Flow, streams: list[Stream], resolved, tput, cwnd, srtt,
                  window_counts) -> dict:
    cfg = resolved["flows"][f.streams[0]]
    sent = sum(s.segments_sent for s in streams)
    retx_total = sum(s.retransmits for s in streams)
    stats = metrics.interval_stats(tput)
    return {
        "id": f.id, "label": f.label, "cc": f.cc, "streams": len(f.streams),
        "rtt_ms": cfg["rtt_ns"] / 1e6, "start_s": cfg["start_ns"] / NS,
        # A flow with no whole interval in the window reports 0 Mbit/s, +- 0.
        "throughput_mbps": stats.mean if len(tput) else 0.0,
        "throughput_std_mbps": stats.std if len(tput) else 0.0,
        "throughput_q25_mbps": stats.q25,
        "throughput_q50_mbps": stats.q50,
        "throughput_q75_mbps": stats.q75,
        "stability_index": metrics.stability_index(tput),
        # None: the run was stored before these were recorded per interval.
        "retransmits": window_counts.get("retransmits"),
        "timeouts": window_counts.get("timeouts"),
        "mean_cwnd_pkts": float("nan") if cwnd is None else metrics.mean(cwnd),
        "mean_srtt_ms": metrics.mean(srtt),
        "retransmits_total": retx_total,
        "timeouts_total": sum(s.timeouts for s in streams),
        "bytes_delivered": sum(s.bytes_delivered for s in streams),
        "segments_sent": sent,
        "retransmit_rate": metrics.retransmission_rate(retx_total, sent),
        "completed_s": _completed(streams),
    }


def _completed(streams: list[Stream]) -> float | None:
    done = [s.completed_ns for s in streams]
    return None if any(d is None for d in done) else max(done) / NS


def _stream_summary(s: Stream, flow_id: int) -> dict:
    """A stream's whole-run engine counters."""
    return {"flow": flow_id, "stream": s.id, "bytes_delivered": s.bytes_delivered,
            "retransmits_total": s.retransmits, "timeouts_total": s.timeouts,
            "segments_sent": s.segments_sent}


def _link_summary(link: Link, links, queue, start, end) -> dict:
    delay = (metrics.queueing_delay(queue, link.capacity_bps, link.name, start, end)
             if queue is not None and len(queue) else {})
    window_loss = metrics.loss_rate(links, start, end, link.name) if len(links) else 0.0
    return {
        "name": link.name,
        "capacity_mbps": link.capacity_bps / 1e6,
        # No interval in the window (or no link table): 0, not null, as always.
        "utilization": _or_zero(metrics.link_utilization(links, start, end, link.name)
                                if len(links) else 0.0),
        "drops": metrics.drops(links, start, end, link.name) if len(links) else 0,
        "loss_rate": window_loss,
        "mean_queue_pkts": _or_zero(metrics.mean_queue(links, start, end, link.name)
                                    if len(links) else 0.0),
        "max_queue_pkts": link.max_queue_pkts,
        "window_loss_rate": window_loss,
        "drops_total": link.drops,
        "loss_rate_total": metrics.ratio(link.drops, link.arrivals),
        "queueing_delay_mean_ms": delay.get("mean_ms"),
        "queueing_delay_p99_ms": delay.get("p99_ms"),
    }


def _or_zero(x: float) -> float:
    return 0.0 if np.isnan(x) else x


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
