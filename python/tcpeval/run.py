"""Run a scenario: resolve it, call the engine (or the testbed), and turn the
engine's columns into the run's tables and the summary.

A run imports neither pandas nor pyarrow (issue 29: a short run's wall time
should be its simulation's): the tables are `Table`s (numpy columns, typed as
pandas types them) and the summary is computed from them; `Result.flows` and
the other tables become DataFrames on first use."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import metrics
from .engine_output import EngineOutput, Flow, Link, Stream, logical_flows
from .scenario import Scenario, ScenarioError, engine_config, load_scenario, resolve
from .table import Table

if TYPE_CHECKING:
    import pandas as pd

NS = 1e9
TABLES = ("flows", "trace", "queue", "links", "udp", "completions")


class Result:
    """A finished run: the resolved scenario, the summary, and the tables (each a
    `Table`, or a DataFrame for a run read back from disk)."""

    def __init__(self, scenario: dict, summary: dict, flows, trace, queue, links, udp,
                 completions, raw: dict | None = None):
        self.scenario = scenario
        self.summary = summary
        self.raw = {} if raw is None else raw
        # The engine's packet capture (`[run] pcap`), written as pcap files
        # beside the run's (tcpeval.pcap); not kept in engine.json.
        self.capture: dict | None = self.raw.pop("capture", None)
        self._stored = dict(zip(TABLES, (flows, trace, queue, links, udp, completions),
                                strict=True))
        self._frames: dict[str, pd.DataFrame] = {}

    def __repr__(self) -> str:
        return f"Result(scenario={self.scenario!r}, summary={self.summary!r})"

    def _frame(self, name: str) -> pd.DataFrame:
        """The table as a DataFrame, converted once."""
        if name not in self._frames:
            t = self._stored[name]
            self._frames[name] = t.to_pandas() if isinstance(t, Table) else t
        return self._frames[name]

    flows = property(lambda self: self._frame("flows"))
    trace = property(lambda self: self._frame("trace"))
    queue = property(lambda self: self._frame("queue"))
    links = property(lambda self: self._frame("links"))
    udp = property(lambda self: self._frame("udp"))
    completions = property(lambda self: self._frame("completions"))

    def engine_summary(self) -> dict:
        """The engine's per-flow and per-link counters (everything but the tables)."""
        keep = ("flows", "links", "sim", "validity", "backend")
        return {k: self.raw[k] for k in keep if k in self.raw}

    def tables(self) -> dict[str, pd.DataFrame]:
        return {name: self._frame(name) for name in TABLES}

    def stored_tables(self) -> dict:
        """The tables as held (Table or DataFrame): what the store writes, without
        converting them to DataFrames."""
        return dict(self._stored)


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
    return run_resolved(resolve(sc, seed=seed, base_dir=base_dir))


def run_resolved(resolved: dict) -> Result:
    """Run an already resolved scenario on its backend and return its Result."""
    raw, wall = run_backend(resolved)
    return build_result(resolved, raw, wall)


def build_result(resolved: dict, raw: dict, wall_s: float) -> Result:
    out = EngineOutput.from_json(raw)
    flows_of_run = logical_flows(resolved)
    flows = _flow_table(out, resolved, flows_of_run)
    trace = _trace_table(out, flows_of_run)
    queue = _frame(out.queue)
    links = _link_table(out, resolved)
    udp = _frame(out.udp_intervals)
    completions = _completions(out, resolved)
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
    import pandas as pd

    tables = {name: pd.read_parquet(d / f"{name}.parquet") for name in TABLES}
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
    t = result.stored_tables()
    s = summarize(resolved, EngineOutput.from_json(result.raw), t["flows"], t["trace"],
                  t["links"], result.summary["sim"]["wall_s"], t["queue"])
    s["sim"] = result.summary["sim"]
    return s


def _flow_of_stream(flows_of_run: list[Flow]) -> dict[int, int]:
    return {s: f.id for f in flows_of_run for s in f.streams}


def _frame(columns: dict) -> Table:
    """The engine's columns as a table, its time t_ns first as t_s."""
    t = Table.from_lists(columns)
    if "t_ns" not in t:
        return t
    rest = {name: col for name, col in t.columns.items() if name != "t_ns"}
    return Table({"t_s": t["t_ns"] / NS, **rest})


# Per-interval event counts of a flow; runs stored before the engine recorded
# them (and testbed runs, for timeouts) lack some of these columns.
INTERVAL_COUNTS = ("retransmits", "timeouts")


def _flow_table(out: EngineOutput, resolved: dict, flows_of_run: list[Flow]) -> Table:
    """Per report interval and logical flow: goodput, retransmits and timeouts
    (streams summed), in order of time, then flow."""
    stream_of = _flow_of_stream(flows_of_run)
    iv = _frame(out.intervals)
    if not len(iv):
        return Table.empty(["t_s", "flow", "cc", "delivered_bytes", "throughput_mbps",
                            *INTERVAL_COUNTS])
    counts = [c for c in INTERVAL_COUNTS if c in iv]
    iv = iv[np.isin(iv["flow"], list(stream_of))]
    keys = [iv["t_s"], metrics.lookup(stream_of, iv["flow"])]
    sums = {c: metrics.group_sum(keys, iv[c]) for c in ("delivered_bytes", *counts)}
    (t_s, flow), delivered = sums["delivered_bytes"]
    interval_s = resolved["interval_ns"] / NS
    return Table({"t_s": t_s, "flow": flow,
                  "cc": metrics.lookup({f.id: f.cc for f in flows_of_run}, flow),
                  "delivered_bytes": delivered,
                  "throughput_mbps": delivered * 8 / interval_s / 1e6,
                  **{c: sums[c][1] for c in counts}})


TRACE_COLUMNS = ["t_s", "flow", "stream", "cwnd_pkts", "ssthresh_pkts", "srtt_ms",
                 "inflight_pkts"]


def _trace_table(out: EngineOutput, flows_of_run: list[Flow]) -> Table:
    stream_of = _flow_of_stream(flows_of_run)
    tr = _frame(out.trace)
    if not len(tr):
        return Table.empty(TRACE_COLUMNS)
    tr = tr[np.isin(tr["flow"], list(stream_of))]
    return Table({"t_s": tr["t_s"], "flow": metrics.lookup(stream_of, tr["flow"]),
                  "stream": tr["flow"], "cwnd_pkts": tr["cwnd_pkts"],
                  "ssthresh_pkts": tr["ssthresh_pkts"], "srtt_ms": tr["srtt_ns"] / 1e6,
                  "inflight_pkts": tr["inflight_pkts"]})


def _link_table(out: EngineOutput, resolved: dict) -> Table:
    li = _frame(out.link_intervals)
    if not len(li):
        return li
    capacity = metrics.lookup({link.name: link.capacity_bps for link in out.links}, li["link"])
    interval_s = resolved["interval_ns"] / NS
    return Table({**li.columns, "utilization": li["tx_bytes"] * 8 / (capacity * interval_s)})


COMPLETION_COLUMNS = ["id", "group", "cc", "start_s", "size_bytes", "delivered_bytes",
                      "completed", "end_s", "fct_s"]
# The columns' types whatever the rows (pandas' astype of the table as it was).
COMPLETION_TYPES = {"size_bytes": np.int64, "delivered_bytes": np.int64, "completed": bool,
                    "end_s": np.float64, "fct_s": np.float64}


def _completions(out: EngineOutput, resolved: dict) -> Table:
    """Every fixed-size transfer (the scenario's, then the web transfers the
    engine drew, by id): its size, the bytes it delivered, and whether and when
    it completed. An unfinished transfer has no end and no FCT (null, never 0)."""
    rows = [_completion(s) for s in out.streams if s.size_bytes is not None]
    columns = {c: [r[c] for r in rows] for c in COMPLETION_COLUMNS}
    if out.web.get("id"):
        for c, values in _web_completions(out.web, resolved).items():
            columns[c] += values
    t = Table.from_lists(columns) if columns["id"] else Table.empty(COMPLETION_COLUMNS)
    return Table({c: _typed(col, COMPLETION_TYPES.get(c)) for c, col in t.columns.items()})


def _web_completions(web: dict, resolved: dict) -> dict[str, list]:
    """The completions columns of the engine's web transfers (its columns, as
    `_completion` makes a stream's row)."""
    from .scenario.background import engine_web

    ccs = [w["cc"] for w in engine_web(resolved["meta"]["background"])]
    start = [t / NS for t in web["start_ns"]]
    end = [None if t is None else t / NS for t in web["completed_ns"]]
    return {"id": web["id"], "group": ["web"] * len(start), "cc": [ccs[k] for k in web["source"]],
            "start_s": start, "size_bytes": web["size_bytes"],
            "delivered_bytes": web["bytes_delivered"],
            "completed": [t is not None for t in end], "end_s": end,
            "fct_s": [None if e is None else e - s for e, s in zip(end, start, strict=True)]}


def _typed(col: np.ndarray, dtype) -> np.ndarray:
    if dtype is None:
        return col
    if dtype is np.float64 and col.dtype == object:  # None only: NaN
        return np.full(len(col), np.nan)
    return col.astype(dtype)


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
    scan of the whole table per flow: 2,000 flows would cost seconds. The tables
    are Tables or DataFrames (a run read back)."""
    first = {f.id: max(start, resolved["flows"][f.streams[0]]["start_ns"] / NS)
             for f in flows_of_run}
    interval = resolved["interval_ns"] / NS
    tput = metrics.per_flow(metrics.whole_intervals(flows, first, end, interval),
                            "throughput_mbps")
    t = np.asarray(trace["t_s"])
    tr = trace[(t >= metrics.lookup(first, np.asarray(trace["flow"]))) & (t <= end)]
    (flow, _), cwnd_sums = metrics.group_sum(
        [np.asarray(tr["flow"]), np.asarray(tr["t_s"])], np.asarray(tr["cwnd_pkts"]))
    cwnd = metrics.per_flow(Table({"flow": flow, "cwnd_pkts": cwnd_sums}), "cwnd_pkts")
    srtt = metrics.per_flow(tr[np.asarray(tr["srtt_ms"]) > 0], "srtt_ms")
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
        "id": f.id, "label": f.label, "cc": f.cc,
        # The TCP stack it ran (docs/stacks.md); None in runs from before stacks.
        "stack": cfg.get("stack"), "streams": len(f.streams),
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
    # ECN marks of the whole run, where the queue marked at all (so runs
    # without ECN summarise as before).
    marks = {"marks_total": link.marks} if link.marks else {}
    return {
        **marks,
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
