"""A testbed run's measurements in the engine's result shape
(docs/engine-interface.md), so summaries, metrics, reports and studies treat it
like a simulator run.

Interval counters are interpolated at the exact report boundaries from the
timestamped cumulative samples the endpoints and the bottleneck sampler took.
"""

from __future__ import annotations

import numpy as np

from .topology import Plan

NS = 1e9


def _boundaries(plan: Plan) -> np.ndarray:
    k = int(plan.duration_s / plan.interval_s + 1e-9)
    return np.arange(1, k + 1) * plan.interval_s


def _at(times, values, points) -> np.ndarray:
    """Cumulative counter values at the given times (linear between samples)."""
    return np.interp(points, np.asarray(times, float), np.asarray(values, float))


def _kind(records: list[dict], kind: str) -> list[dict]:
    return [r for r in records if r.get("kind") == kind]


def _end(records: list[dict]) -> dict:
    ends = _kind(records, "end")
    return ends[-1] if ends else {}


def intervals(plan: Plan, m: dict) -> dict:
    """Goodput per report interval (bytes the sink's application read) and
    retransmits (the sender's tcpi_total_retrans). Timeouts are only counted per
    run (TcpExt at the end), so there is no timeouts column."""
    b = _boundaries(plan)
    out = {"t_ns": [], "flow": [], "delivered_bytes": [], "retransmits": []}
    for f, recs, sent in zip(plan.flows, m["sinks"], m["senders"], strict=True):
        points = [(0.0, 0)] + [(r["t"], r["bytes"]) for r in _kind(recs, "sample")]
        first = _end(recs).get("first_byte")
        if first is not None:
            # Nothing arrived before the first byte: keeps the interpolation
            # from spreading a late starter's first bytes back in time.
            points.append((first, 0))
        points.sort()
        cum = _at([t for t, _ in points], [v for _, v in points], b)
        delivered = np.diff(np.concatenate([[0.0], np.round(cum)]))
        for t, d, r in zip(b, delivered, _retransmits(sent, b), strict=True):
            out["t_ns"].append(int(round(t * NS)))
            out["flow"].append(f.index)
            out["delivered_bytes"].append(int(max(d, 0)))
            out["retransmits"].append(int(r))
    return out


def _retransmits(records: list[dict], boundaries: np.ndarray) -> np.ndarray:
    """Segments retransmitted per report interval, from the cumulative count."""
    points = [(0.0, 0)] + [(r["t"], r["total_retrans"]) for r in _kind(records, "sample")]
    cum = _at([t for t, _ in points], [v for _, v in points], boundaries)
    return np.maximum(np.diff(np.concatenate([[0.0], np.round(cum)])), 0)


def trace(plan: Plan, m: dict) -> dict:
    """TCP_INFO samples at the trace interval (times put on the nominal grid)."""
    out = {k: [] for k in ("t_ns", "flow", "cwnd_pkts", "ssthresh_pkts", "srtt_ns",
                           "inflight_pkts")}
    for f, recs in zip(plan.flows, m["senders"], strict=True):
        for r in _kind(recs, "sample"):
            out["t_ns"].append(int(round(round(r["t"] / plan.trace_s) * plan.trace_s * NS)))
            out["flow"].append(f.index)
            out["cwnd_pkts"].append(r["snd_cwnd"])
            out["ssthresh_pkts"].append(r["snd_ssthresh"])
            out["srtt_ns"].append(r["rtt"] * 1000)
            # tcp_packets_in_flight() in include/net/tcp.h
            out["inflight_pkts"].append(max(0, r["unacked"] - r["sacked"] - r["lost"]
                                            + r["retrans"]))
    return out


LINKS = (("bottleneck", "fwd"), ("reverse", "rev"))


def _random_drops(samples: list[dict]) -> list[int]:
    return [s["loss_rules"][1] if len(s.get("loss_rules", [])) > 1 else 0 for s in samples]


def link_intervals(plan: Plan, m: dict) -> dict:
    out = {k: [] for k in ("t_ns", "link", "tx_bytes", "tx_packets", "arrivals", "drops",
                           "queue_pkts_mean")}
    samples = m["samples"]
    t = [s["t"] for s in samples]
    b = np.concatenate([[0.0], _boundaries(plan)])
    for name, key in LINKS:
        q = {k: np.array([s[key][k] for s in samples], float) for k in
             ("bytes", "packets", "drops", "qlen")}
        rnd = np.array(_random_drops(samples) if key == "fwd" else [0] * len(samples), float)
        cum = {k: np.diff(_at(t, v, b)) for k, v in q.items() if k != "qlen"}
        qlen = _at(t, q["qlen"], b)
        d_rnd = np.diff(_at(t, rnd, b))
        for k in range(len(b) - 1):
            inside = [s[key]["qlen"] for s in samples if b[k] < s["t"] <= b[k + 1]]
            out["t_ns"].append(int(round(b[k + 1] * NS)))
            out["link"].append(name)
            out["tx_bytes"].append(int(round(cum["bytes"][k])))
            out["tx_packets"].append(int(round(cum["packets"][k])))
            out["arrivals"].append(int(round(cum["packets"][k] + cum["drops"][k]
                                             + qlen[k + 1] - qlen[k])))
            out["drops"].append(int(round(cum["drops"][k] + d_rnd[k])))
            out["queue_pkts_mean"].append(float(np.mean(inside)) if inside else 0.0)
    return out


def _on_trace_grid(plan: Plan, samples: list[dict]) -> list[tuple[int, dict]]:
    """The sample nearest each point of the trace grid, with that point in ns:
    the sampler may take several per trace interval (runner.sample_step)."""
    step = max(plan.trace_s, 1e-9)
    best: dict[int, tuple[float, dict]] = {}
    for s in samples:
        g = round(s["t"] / step)
        if g not in best or abs(s["t"] - g * step) < best[g][0]:
            best[g] = (abs(s["t"] - g * step), s)
    return [(int(round(g * step * NS)), best[g][1]) for g in sorted(best)]


def queue(plan: Plan, m: dict) -> dict:
    out = {k: [] for k in ("t_ns", "link", "queue_pkts", "queue_bytes", "red_avg_pkts")}
    for t_ns, s in _on_trace_grid(plan, m["samples"]):
        for name, key in LINKS:
            out["t_ns"].append(t_ns)
            out["link"].append(name)
            out["queue_pkts"].append(s[key]["qlen"])
            out["queue_bytes"].append(s[key]["backlog"])
            out["red_avg_pkts"].append(0.0)
    return out


def links(plan: Plan, m: dict) -> list[dict]:
    samples = m["samples"]
    first, last = samples[0], samples[-1]
    out = []
    for name, key in LINKS:
        d = {k: last[key][k] - first[key][k] for k in ("bytes", "packets", "drops")}
        rnd = (_random_drops(samples)[-1] - _random_drops(samples)[0]) if key == "fwd" else 0
        qlens = [s[key]["qlen"] for s in samples]
        out.append({
            "name": name, "capacity_bps": plan.rate_bps,
            "tx_bytes": d["bytes"], "tx_packets": d["packets"], "tx_data_packets": d["packets"],
            "arrivals": d["packets"] + d["drops"] + last[key]["qlen"] - first[key]["qlen"],
            "drops_overflow": d["drops"], "drops_random": rnd, "drops_early": 0,
            "mean_queue_pkts": float(np.mean(qlens)),
            "mean_queue_bytes": float(np.mean([s[key]["backlog"] for s in samples])),
            "max_queue_pkts": int(max(qlens)),
        })
    return out


def flows(plan: Plan, config: dict, m: dict) -> list[dict]:
    out = []
    for f, cfg, snd, snk in zip(plan.flows, config["flows"], m["senders"], m["sinks"],
                                strict=True):
        end, got = _end(snd), _end(snk)
        ns = end.get("netstat", {})
        completed = got.get("completed")
        out.append({
            "id": f.index, "cc": cfg["cc"], "kernel_cc": end.get("cc"),
            "rtt_ns": cfg["rtt_ns"], "start_ns": cfg["start_ns"], "size_bytes": cfg.get("bytes"),
            "bytes_delivered": got.get("bytes", 0), "bytes_sent": end.get("bytes_sent", 0),
            "segments_sent": end.get("data_segs_out", 0),
            "retransmits": end.get("total_retrans", 0),
            "timeouts": ns.get("TCPTimeouts", 0),
            "recoveries": ns.get("TCPSackRecovery", 0) + ns.get("TCPRenoRecovery", 0),
            "local_congestion": 0, "acks": end.get("segs_in", 0), "ack_gap_cov": None,
            "group": cfg.get("group"),
            "completed_ns": None if completed is None or not cfg.get("bytes")
            else int(round(completed * NS)),
            "min_rtt_ns": end.get("min_rtt", 0) * 1000,
            "probe_rtt_ns": _probe_ns(snd),
            "connect_ns": _ns(end.get("connect_s")),
            "established_ns": _ns(end.get("established_s")),
            "reordering_events": end.get("reord_seen", 0),
            "dsack_dups": end.get("dsack_dups", 0),
            "netstat": ns,
            # The receiving namespace's TcpExt counters (shared by the flows
            # that end there): how its ACKs went out (DelayedACKs, ...).
            "sink_netstat": got.get("netstat", {}),
            # The sink's pinned receive window and its rcv_ssthresh at the last
            # sample (endpoint._pin_window): equal if the window never grew.
            "sink_window": got.get("window"),
            # The widest clock bracket around any of this flow's TCP_INFO reads
            # (endpoint.timed): how far a sample's time may be off.
            "sample_span_max_s": max((r.get("span", 0.0) for r in _kind(snd + snk, "sample")),
                                     default=0.0),
        })
    return out


def _ns(seconds: float | None) -> int | None:
    return None if seconds is None else int(round(seconds * NS))


def _probe_ns(records: list[dict]) -> int | None:
    ready = _kind(records, "ready")
    rtt = ready[0].get("probe_rtt") if ready else None
    return None if rtt is None else int(round(rtt * NS))


def engine_result(plan: Plan, config: dict, m: dict) -> dict:
    fwd = [s["fwd"]["packets"] for s in m["samples"]]
    return {
        "backend": "testbed",
        "flows": flows(plan, config, m),
        "intervals": intervals(plan, m),
        "trace": trace(plan, m),
        "link_intervals": link_intervals(plan, m),
        "queue": queue(plan, m),
        "udp_intervals": {"t_ns": [], "stream": [], "sent_bytes": [], "delivered_bytes": []},
        "links": links(plan, m),
        "sim": {"events": 0, "packets": fwd[-1] - fwd[0],
                "end_ns": int(round(plan.duration_s * NS))},
    }
