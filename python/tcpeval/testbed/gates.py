"""Validity gates of a testbed run (shared/reference/linux-testbed.md section 5).

The machine is shared, so a run can be spoiled by its neighbours: the delay
line falls behind, packets are lost or reordered outside the bottleneck, or the
bottleneck does not deliver its rate. Each gate compares a measurement with a
limit; a run that fails one is invalid and is never reported as a result.

Limits, and why:
- delay line: mean lateness below 1% of the flow's RTT (the reference's gate);
  worst lateness below max(10 ms, RTT/4): single late packets of a few ms
  happen on a busy box when a vCPU is starved (reference: 4-21 ms; measured
  here up to 8.5 ms on a 12 ms path); they shift a few RTT samples but cannot
  fire a spurious timeout (Linux's RTO is at least 200 ms) nor reorder (the
  relay is FIFO); longer ones would distort the RTT the flow sees. No packet
  lost inside the relay (ENOBUFS, dropped by it or by the kernel's queue) or
  bypassing it (TUN: matching no route), its ring never full, kernel
  timestamps on (at most 1% of packets without one). For an algorithm that
  reacts to one delay sample (SAMPLE_REACTING: TCP-LP, HSTCP-LP) no packet
  released STALL_US late or more: such a stall passes the limits above and
  fires their early congestion indications (docs/testbed.md, "HSTCP-LP's
  early indications and the delay line's stalls").
- base RTT: each flow's idle-path RTT (the kernel's RTT sample of handshakes
  with the sink before the run) within max(2 ms, 2%) of the configured RTT,
  and its min_rtt not below it (the delay line never releases early).
- drops only at the bottleneck: no drops on any veth or in the CPU backlogs,
  and sender retransmissions explained by bottleneck drops: retransmissions
  not later shown spurious by D-SACK at most 1.5 x drops + slack (tail loss
  probes and RTOs retransmit a few segments that were not lost).
- reordering near zero: reordering events (tcpi_reord_seen and the TcpExt
  reorder counters) at most max(3 per flow, 1 per 10,000 data segments).
- rate: the bottleneck never carries more than its rate (+2%); for a saturating
  run (bulk flows, no window cap, no random loss, buffer >= 1 BDP of the longest
  RTT) the aggregate goodput after the flows' start-up is >= 90% of the goodput
  ceiling R * MSS / (MTU + 14). Algorithms that do not promise to fill the link
  (NOT_FILLING: TCP-LP and HSTCP-LP yield by design, Westwood+ recovers slowly
  from its slow-start overshoot, on both backends) get the busy-period gate in
  its place: over the sampling intervals whose starting queue alone keeps the
  link busy to their end (backlog >= rate x interval, so no idle stretch can
  hide inside one; at least MIN_BUSY_S of them after the start-up, sampled
  every 5 ms: runner.sample_step) the shaper carries >= 90% of its rate. That
  judges the emulated link, not the algorithm: 2 LP flows at 100 Mbit/s, 50 ms reached 60.8
  Mbit/s on the kernel and 73.7 in the simulator (issue 32), a valid result
  the goodput gate refused.
- sink window pinned: each sink's rcv_ssthresh at its last sample equals the
  window it pinned after the first segment (endpoint._pin_window), so its
  kernel ACKed every second segment as it arrived, not every segment while its
  window grew (a flow that never delivered a byte is left to the other gates).
- goodput within the shaper's: on a saturating run, by each report boundary
  the sinks have received in order at most the payload the shaper had carried
  since the start (+0.5% + 20 ms of the rate, for the sampling); a run that
  breaks it measured something wrong. Goodput over a span that does not start
  at 0 may well exceed the shaper's rate (bytes received out of order before
  the span count when the hole is filled), so spans are not compared.
- endpoint samples timed: every TCP_INFO read of the senders and sinks lies
  within SAMPLE_SPAN_LIMIT_S of the time it is stamped with (endpoint.timed
  brackets each read by two clock readings): a flow's goodput per interval is
  read from these samples, so a read made long after its stamp would count
  bytes into the wrong interval. 5 ms is 1% of a 0.5 s report interval.
"""

from __future__ import annotations

import itertools

import numpy as np

from . import kernel_cc, topology
from .topology import ETH_HEADER, Plan

LATE_MAX_FLOOR_US = 10_000.0
REORDER_KEYS = ("TCPSACKReorder", "TCPTSReorder", "TCPRenoReorder")
# Algorithms not expected to fill the link, by kernel name (kernel_cc.kernel_name).
NOT_FILLING = frozenset({"lp", "hstcplp", "westwood"})
MIN_BUSY_S = 1.0
SAMPLE_SPAN_LIMIT_S = 0.005
SHAPER_SLACK = 0.005
SHAPER_SLACK_S = 0.02
# A release this late or later is counted in the delay line's gate detail: half
# a millisecond is enough to move a delay-based algorithm's millisecond
# timestamp sample (docs/testbed.md, "HSTCP-LP's 20 ms spread traced").
LATE_COUNTED_US = 500
# Algorithms whose congestion signal is a single delay sample, by kernel name,
# and the lateness that spoils a run of theirs: traced 2026-11-28, HSTCP-LP at
# 20 ms, 2 BDP, every early indication out of turn but one followed a stall of
# 1.8-7.6 ms within a path delay to an RTT; stalls of 0.27-0.69 ms fired none.
SAMPLE_REACTING = frozenset({"lp", "hstcplp"})
STALL_US = 1000


def _gate(name: str, ok: bool, detail: str, **values) -> dict:
    return {"gate": name, "ok": bool(ok), "detail": detail, **values}


def delay_line(plan: Plan, stats: dict | None) -> list[dict]:
    if plan.delay not in ("nfqueue", "tun"):
        return []
    # NFQUEUE entries name their queue, TUN entries their route.
    rtt_of = {q: f.rtt_s for f in plan.flows
              for q in (f.data_queue, f.ack_queue, *topology.tun_routes(f))}
    reacting = any(kernel_cc.kernel_name(f.cc) in SAMPLE_REACTING for f in plan.flows)
    out = []
    for q in (stats or {}).get("queues", []):
        name = q.get("queue", q.get("route"))
        rtt_us = rtt_of.get(name, min(f.rtt_s for f in plan.flows)) * 1e6
        mean_lim, max_lim = 0.01 * rtt_us, max(LATE_MAX_FLOOR_US, rtt_us / 4)
        pkts = max(q.get("pkts", 0), 1)
        lost = (q.get("enobufs", 0) + q.get("dropped", 0) + q.get("kernel_dropped", 0)
                + q.get("unmatched", 0))
        full = q.get("capacity") is not None and q.get("maxdepth", 0) >= q["capacity"]
        ok = (q["late_mean_us"] < mean_lim and q["late_max_us"] <= max_lim and not lost
              and not full and q.get("no_kernel_ts", 0) <= 0.01 * pkts)
        late = late_at_least(stats, q, LATE_COUNTED_US)
        stalled = late_at_least(stats, q, STALL_US) if reacting else None
        ok = ok and not stalled
        out.append(_gate(
            f"delay line queue {name}", ok,
            f"late mean {q['late_mean_us']:.0f} us (limit {mean_lim:.0f}), max "
            f"{q['late_max_us']:.0f} us (limit {max_lim:.0f}), "
            + ("" if late is None else f"{late} released {LATE_COUNTED_US} us late or more, ")
            + ("" if stalled is None else f"{stalled} released {STALL_US} us late or more "
               "(limit 0 for an algorithm reacting to one delay sample), ")
            + f"{lost} lost in the relay "
            f"(depth {q.get('maxdepth')} of {q.get('capacity')}), "
            f"{q.get('no_kernel_ts', 0)} of {q.get('pkts', 0)} without kernel timestamp",
            late_mean_us=q["late_mean_us"], late_max_us=q["late_max_us"],
            **({} if late is None else {f"late_{LATE_COUNTED_US}us_pkts": late})))
    return out


def late_at_least(stats: dict, queue: dict, edge_us: float) -> int | None:
    """Packets of `queue` released `edge_us` late or more, from the delay
    line's histogram (None from a delay line without one, or when `edge_us`
    is not one of its bucket edges)."""
    edges, hist = stats.get("late_edges_us"), queue.get("late_hist")
    if not edges or not hist or edge_us not in edges:
        return None
    first = edges.index(edge_us) + 1  # bucket k counts [edges[k-1], edges[k])
    return int(sum(hist[first:]))


def base_rtt(plan: Plan, flows: list[dict]) -> list[dict]:
    """The idle path's RTT (probed before the run) is the configured one, and
    no packet ever came back sooner (min_rtt may be higher: a flow that starts
    into a standing queue never sees the bare path)."""
    out = []
    for f, r in zip(plan.flows, flows, strict=True):
        want = f.rtt_s * 1e3
        probe = None if r["probe_rtt_ns"] is None else r["probe_rtt_ns"] / 1e6
        seen = r["min_rtt_ns"] / 1e6
        lim = max(2.0, 0.02 * want)
        ok = probe is not None and abs(probe - want) <= lim and seen >= want - 0.5
        shown = "none" if probe is None else f"{probe:.2f} ms"
        out.append(_gate(f"base RTT flow {f.index}", ok,
                         f"idle-path RTT {shown}, min_rtt {seen:.2f} ms, configured "
                         f"{want:.2f} ms (limit +-{lim:.1f} ms; min_rtt not below)",
                         probe_rtt_ms=probe, min_rtt_ms=seen))
    return out


def drops(plan: Plan, raw: dict, m: dict) -> list[dict]:
    elsewhere = sum(m["device_drops"].values()) + max(m["softnet_drops"], 0)
    out = [_gate("drops only at the bottleneck", elsewhere == 0,
                 f"{elsewhere} packets dropped outside the bottleneck "
                 f"(devices: {m['device_drops'] or 'none'}, CPU backlogs: {m['softnet_drops']})",
                 drops_elsewhere=elsewhere)]
    link = raw["links"][0]
    dropped = link["drops_overflow"] + link["drops_random"]
    retx = sum(f["retransmits"] for f in raw["flows"])
    spurious = sum(f["netstat"].get("TCPDSACKRecv", 0) for f in raw["flows"])
    slack = 10 + 10 * len(plan.flows)
    explained = retx - spurious <= 1.5 * dropped + slack
    out.append(_gate("retransmissions match bottleneck drops", explained,
                     f"{retx} retransmissions ({spurious} shown spurious by D-SACK) for "
                     f"{dropped} bottleneck drops (limit 1.5 x drops + {slack})",
                     retransmits=retx, bottleneck_drops=dropped))
    return out


def reordering(plan: Plan, raw: dict) -> list[dict]:
    events = sum(f["reordering_events"] + sum(f["netstat"].get(k, 0) for k in REORDER_KEYS)
                 for f in raw["flows"])
    segs = sum(f["segments_sent"] for f in raw["flows"])
    lim = max(3 * len(plan.flows), segs / 10_000)
    return [_gate("reordering near zero", events <= lim,
                  f"{events} reordering events in {segs} data segments (limit {lim:.0f})",
                  reordering_events=events)]


def sink_window(raw: dict) -> list[dict]:
    grown = [(i, w) for i, w in enumerate(f.get("sink_window") for f in raw["flows"])
             if w and w.get("rcv_ssthresh_last", w["pinned"]) != w["pinned"]]
    detail = ("every sink's window stayed where it was pinned" if not grown else
              "; ".join(f"flow {i}: pinned {w['pinned']} B, grew to {w['rcv_ssthresh_last']} B"
                        for i, w in grown))
    return [_gate("sink window pinned", not grown, detail)]


def sample_timing(raw: dict) -> list[dict]:
    worst = max((f.get("sample_span_max_s", 0.0) for f in raw["flows"]), default=0.0)
    return [_gate("endpoint samples timed", worst <= SAMPLE_SPAN_LIMIT_S,
                  f"widest clock bracket around a TCP_INFO read {worst * 1e3:.2f} ms "
                  f"(limit {SAMPLE_SPAN_LIMIT_S * 1e3:.0f} ms)", sample_span_max_s=worst)]


def saturating(plan: Plan) -> bool:
    longest = max(f.rtt_s for f in plan.flows)
    bdp = plan.rate_bps * longest / 8
    buf = plan.buffer.get("bytes", plan.buffer.get("pkts", 0) * (plan.mtu + ETH_HEADER))
    return (plan.loss == 0 and buf >= 0.99 * bdp
            and all(f.bytes is None and f.stop_s is None and f.window is None for f in plan.flows))


def busy_rate(plan: Plan, samples: list[dict], settle: float) -> dict:
    """The shaper's rate while its queue alone keeps it busy (see the module doc)."""
    spans = [(a, b) for a, b in itertools.pairwise(samples)
             if a["t"] >= settle and a["fwd"]["backlog"] * 8 >= plan.rate_bps * (b["t"] - a["t"])]
    busy = sum(b["t"] - a["t"] for a, b in spans)
    if busy < MIN_BUSY_S:
        return _gate("rate while busy", True, f"not judged: the bottleneck queue held a "
                     f"sampling step's worth of the link for {busy:.2f} s after {settle:.1f} s "
                     f"(need {MIN_BUSY_S:g} s)", busy_s=busy)
    carried = sum(b["fwd"]["bytes"] - a["fwd"]["bytes"] for a, b in spans) * 8 / busy
    return _gate("rate while busy", carried >= 0.9 * plan.rate_bps,
                 f"carried {carried / 1e6:.2f} Mbit/s over {busy:.1f} s in which the queue "
                 f"alone kept it busy, rate {plan.rate_bps / 1e6:g} Mbit/s (need >= 90%)",
                 busy_s=busy, busy_mbps=carried / 1e6)


def payload_share(plan: Plan) -> float:
    """The payload's share of the bytes tbf charges: MSS / (MTU + Ethernet header)."""
    f0 = plan.flows[0]
    return f0.mss / (f0.mtu + ETH_HEADER)


def within_shaper(plan: Plan, t: np.ndarray, d: np.ndarray, samples: list[dict]) -> dict:
    """By each report boundary the sinks cannot have received, in order, more
    payload than the shaper had carried since the start (it is the last hop
    before them). Only the cumulative counts are comparable: over a span that
    starts while a hole waits for its retransmission, in-order goodput takes
    in the bytes that crossed the shaper out of order before it (Reno alone,
    100 ms, 2 BDP: 99.9 Mbit/s over 1-3 s through a 95.4 Mbit/s payload
    ceiling). Judged on saturating runs, whose shaper counter is read at the
    boundaries' own times (its samples share their grid)."""
    edges = np.unique(t)
    got = np.cumsum([d[t == b].sum() for b in edges])
    sent = np.interp(edges, [s["t"] for s in samples], [s["fwd"]["bytes"] for s in samples])
    carried = sent * payload_share(plan)
    limit = carried * (1 + SHAPER_SLACK) + plan.rate_bps / 8 * SHAPER_SLACK_S
    k = int(np.argmax(got - limit))
    return _gate("goodput within the shaper's", bool(np.all(got <= limit)),
                 f"closest at {edges[k]:.1f} s: the sinks had received {got[k] / 1e6:.3f} MB in "
                 f"order, the shaper had carried {carried[k] / 1e6:.3f} MB of payload (limit "
                 f"+{SHAPER_SLACK:.1%} + {SHAPER_SLACK_S * 1e3:g} ms of the rate)",
                 delivered_bytes=float(got[k]), shaper_payload_bytes=float(carried[k]))


def fills(plan: Plan) -> bool:
    """Whether every flow's algorithm promises to fill an idle link."""
    return not any(kernel_cc.kernel_name(f.cc) in NOT_FILLING for f in plan.flows)


def judged_busy(plan: Plan) -> bool:
    """Whether the busy-period gate judges the run in place of achieved rate."""
    return saturating(plan) and not fills(plan)


def rate(plan: Plan, raw: dict, samples: list[dict] | None = None) -> list[dict]:
    ceiling = plan.rate_bps * payload_share(plan)
    iv = raw["intervals"]
    t = np.array(iv["t_ns"], float) / 1e9
    d = np.array(iv["delivered_bytes"], float)
    # After the last flow's start plus its start-up (at least 1 s, 20 RTTs).
    settle = max(f.start_s for f in plan.flows) + max(1.0, 20 * max(f.rtt_s for f in plan.flows))
    keep = t - plan.interval_s >= settle - 1e-9
    span = len(set(t[keep])) * plan.interval_s
    goodput = float(d[keep].sum() * 8 / span) if span else 0.0
    link = raw["links"][0]
    carried = link["tx_bytes"] * 8 / plan.duration_s
    out = [_gate("bottleneck rate", carried <= 1.02 * plan.rate_bps,
                 f"carried {carried / 1e6:.2f} Mbit/s on a {plan.rate_bps / 1e6:g} Mbit/s "
                 f"bottleneck", carried_mbps=carried / 1e6)]
    if saturating(plan) and samples and len(t):
        out.append(within_shaper(plan, t, d, samples))
    if judged_busy(plan) and span:
        out.append(busy_rate(plan, samples or [], settle))
    elif saturating(plan) and span:
        out.append(_gate("achieved rate", goodput >= 0.9 * ceiling,
                         f"aggregate goodput {goodput / 1e6:.2f} Mbit/s after {settle:.1f} s, "
                         f"ceiling {ceiling / 1e6:.2f} Mbit/s (need >= 90%)",
                         goodput_mbps=goodput / 1e6, ceiling_mbps=ceiling / 1e6))
    return out


def evaluate(plan: Plan, raw: dict, m: dict) -> dict:
    """Every gate's verdict; the run is valid when all pass."""
    gates = (delay_line(plan, m.get("delayline")) + base_rtt(plan, raw["flows"])
             + drops(plan, raw, m) + reordering(plan, raw) + sink_window(raw) + sample_timing(raw)
             + rate(plan, raw, m.get("samples")))
    failed = [g for g in gates if not g["ok"]]
    return {"valid": not failed, "reasons": [f"{g['gate']}: {g['detail']}" for g in failed],
            "gates": gates, "delay": plan.delay, "delay_line": m.get("delayline"),
            "setup": m.get("setup", {})}
