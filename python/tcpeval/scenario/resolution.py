"""Resolution: a validated scenario (numbers already) to the engine's config,
validated by the engine once."""

from __future__ import annotations

import json
import math
from pathlib import Path

from .. import _sim
from ..constants import DELACK_TIMEOUT_S, HEADER_BYTES, INITIAL_CWND, MTU_BYTES
from ..errors import ScenarioError
from ..units import Buffer, UnitError
from .background import _background, engine_web, expand_background
from .fields import Share
from .fields import nanoseconds as _ns
from .limits import (
    DEFAULT_TRACE_INTERVAL_S,
    MAX_BDP_PKTS,
    MAX_FLOWS,
    _check_rows,
    _check_times,
)
from .messages import user_field
from .models import Flow, Hop, Network, Red, Scenario, passed_to_engine

# The random stream of start jitter, derived from the run's seed (one per use:
# see background.BACKGROUND_STREAM).
START_JITTER_STREAM = 0x5A


def _buffer(spec: Buffer, bdp_bytes: float, packet_bytes: int, field: str) -> dict:
    try:
        return spec.limit(bdp_bytes, packet_bytes)
    except UnitError as e:
        raise ScenarioError(f"{field}: {e}") from None


def _packet_bytes(sc: Scenario, j: int, n_hops: int) -> int:
    """The packet size of hop j's queues: the largest MTU of the TCP flows whose
    path crosses it (background flows have the default MTU), else of the UDP
    streams crossing it, else the default. A buffer of a BDP share holds that
    share of the BDP in these packets (issue 27: it was always 1500 B)."""
    def crosses(direction: str, path: list[int] | None) -> bool:
        if path is None:
            path = [n_hops, 0] if direction == "reverse" else [0, n_hops]
        return len(path) == 2 and min(path) <= j < max(path)  # else the engine refuses it

    tcp = [f.mtu for f in sc.flows if crosses(f.direction, f.path)]
    bg = sc.background
    if any(ll.count for ll in bg.long_lived) or any(w.load > 0 for w in bg.web):
        tcp.append(MTU_BYTES)
    udp = [u.packet for u in sc.udp if crosses(u.direction, u.path)]
    return max(tcp or udp or [MTU_BYTES])


def _limits(prefix: str, buf: dict) -> dict:
    return {f"{prefix}_pkts": buf.get("pkts"), f"{prefix}_bytes": buf.get("bytes")}


def _red(red: Red) -> dict:
    return {k: v for k, v in red.model_dump().items() if v is not None}


def _hop_entries(net: Network) -> list[tuple[str, Hop]]:
    """The chain's hops with the field each is written under: [[network.hops]],
    or the dumbbell's one hop from the [network] table itself."""
    if net.hops:
        return [(f"network.hops[{j}]", h) for j, h in enumerate(net.hops)]
    one = Hop(rate=net.bottleneck, delay=net.bottleneck_delay, buffer=net.buffer,
              reverse_buffer=net.reverse_buffer, queue=net.queue, loss=net.loss, red=net.red,
              codel=net.codel, fq_codel=net.fq_codel, pie=net.pie, step=net.step)
    return [("network", one)]


def _hops(sc: Scenario) -> list[dict]:
    """The engine's hops (docs/engine-interface.md: `network.hops`)."""
    out = []
    entries = _hop_entries(sc.network)
    for j, (field, h) in enumerate(entries):
        bdp = h.rate * sc.network.rtt / 8.0
        size = _packet_bytes(sc, j, len(entries))
        fwd = _buffer(h.buffer, bdp, size, f"{field}.buffer")
        rev = _buffer(h.reverse_buffer or h.buffer, bdp, size, f"{field}.reverse_buffer")
        out.append({
            "rate_bps": h.rate, "delay_ns": _ns(h.delay),
            **_limits("buffer", fwd), **_limits("reverse_buffer", rev),
            "queue": h.queue, "loss": h.loss, "red": _red(h.red),
            **_aqm(h, bdp, size, field),
        })
    return out


# The AQM tables' fields that reach the engine with a unit suffix.
_AQM_TIMES = ("target", "interval", "tupdate", "max_burst")
_AQM_BYTES = ("quantum", "memory_limit")


def _aqm_table(model) -> dict:
    out = {}
    for k, v in model.model_dump().items():
        if v is not None:
            key = f"{k}_ns" if k in _AQM_TIMES else f"{k}_bytes" if k in _AQM_BYTES else k
            out[key] = _ns(v) if k in _AQM_TIMES else v
    return out


def _aqm(h: Hop, bdp: float, size: int, field: str) -> dict:
    """The engine's AQM tables of a hop (only those given, so a scenario
    without them resolves as before); the step threshold is a buffer size."""
    tables = {name: _aqm_table(getattr(h, name)) for name in ("codel", "fq_codel", "pie")}
    if h.step.threshold is not None:
        k = _buffer(h.step.threshold, bdp, size, f"{field}.step.threshold")
        tables["step"] = {f"threshold_{unit}": v for unit, v in k.items() if v is not None}
    return {name: t for name, t in tables.items() if t}


def _given_starts(f: Flow, k: int) -> list[float]:
    """The start of each of the entry's flows as written (before any jitter)."""
    if not isinstance(f.start, list):
        return [f.start] * f.count
    if len(f.start) != f.count:
        raise ScenarioError(f"flows[{k}].start: {len(f.start)} start times for count = "
                            f"{f.count}; give one per flow or a single value")
    return list(f.start)


def _starts(f: Flow, k: int, seed: int) -> list[float]:
    """Start time of each of the entry's flows: its start plus a uniform offset
    in [0, start_jitter), drawn from the run's seed and the entry's index. A
    simulation without random inputs is otherwise the same run whatever the
    seed; the jitter makes repetitions differ the way testbed runs do."""
    starts = _given_starts(f, k)
    jitter = f.start_jitter
    if jitter == 0:
        return starts
    import numpy as np

    offsets = np.random.default_rng([seed, START_JITTER_STREAM, k]).uniform(0, jitter, f.count)
    return [s + float(o) for s, o in zip(starts, offsets, strict=True)]


def _narrowest(net: Network) -> float:
    return min(h.rate for h in net.hops) if net.hops else net.bottleneck


def _check_flow(sc: Scenario, f: Flow, k: int, rtt_s: float, duration: float) -> None:
    """What neither the models nor the engine check: times against the run, the
    packets the path holds in flight (a bound of this machine)."""
    own = _given_starts(f, k)
    _check_times(f"flows[{k}]", own, f.stop, duration)
    rtt = f.rtt if f.rtt is not None else rtt_s
    rtt_field = f"flows[{k}].rtt" if f.rtt is not None else "network.rtt"
    bdp_pkts = _narrowest(sc.network) * rtt / 8 / MTU_BYTES
    if bdp_pkts > MAX_BDP_PKTS:
        raise ScenarioError(f"{rtt_field}: the path holds {bdp_pkts:.3g} packets in flight "
                            f"(rate x RTT); at most {MAX_BDP_PKTS:.0e}")


def _engine_flows(sc: Scenario, rtt_s: float,
                  duration: float) -> tuple[list[dict], list[dict]]:
    """Expand flow entries (count x streams) into engine flows; returns them and
    one record per logical flow (id, label, engine flow ids)."""
    engine, logical = [], []
    total = sum(f.count * f.streams for f in sc.flows) + sum(
        ll.count for ll in sc.background.long_lived)
    if total > MAX_FLOWS:
        raise ScenarioError(f"flows: {total} flows (count x streams, plus "
                            f"background.long_lived); at most {MAX_FLOWS}")
    for k, f in enumerate(sc.flows):
        _check_flow(sc, f, k, rtt_s, duration)
        mss = f.mss if f.mss is not None else f.mtu - HEADER_BYTES
        total = f.bytes
        if total is not None and total < f.streams:
            raise ScenarioError(f"flows[{k}].bytes: fewer bytes than streams")
        stack = f.stack or sc.run.stack
        passed = {**passed_to_engine(f), "stack": stack,
                  **_stack_defaults(f, stack)}
        for start in _starts(f, k, sc.run.seed):
            fid = len(logical)
            label = f.label or f"{f.cc}-{fid}"
            ids = []
            for s in range(f.streams):
                share = None if total is None else total // f.streams + (s < total % f.streams)
                ids.append(len(engine))
                engine.append({
                    **passed, "rtt_ns": _ns(f.rtt if f.rtt is not None else rtt_s),
                    "start_ns": _ns(start), "bytes": share, "mss": mss, "group": label,
                })
            logical.append({"id": fid, "label": label, "cc": f.cc, "streams": ids,
                            "entry": k})
    return engine, logical


def _stack_defaults(f: Flow, stack: str) -> dict:
    """The flow's initial window and delayed-ACK timer: its own, else its stack's
    out of the box (the engine's stack profile: a first connection at 2.6.22
    starts with 2 segments, ns-2's sink delays by 100 ms). An unknown stack keeps today's values
    here; the engine's validation then names the field."""
    try:
        iw, delack_ns = _sim.stack_defaults(stack)
    except ValueError:
        iw, delack_ns = INITIAL_CWND, None
    delack = f.delack_timeout if f.delack_timeout is not None else (
        DELACK_TIMEOUT_S if delack_ns is None else delack_ns / 1e9)
    return {"initial_cwnd": f.initial_cwnd if f.initial_cwnd is not None else iw,
            "delack_timeout_ns": _ns(delack)}


def _bps(rate: float | Share, capacity_bps: float) -> float:
    return rate.fraction * capacity_bps if isinstance(rate, Share) else rate


def _udp(sc: Scenario, rate_bps: float, rtt_s: float, duration_s: float) -> list[dict]:
    out = []
    for i, u in enumerate(sc.udp):
        _check_times(f"udp[{i}]", [u.start], u.stop, duration_s)
        out.append({
            "rate_bps": _bps(u.rate, rate_bps),
            "amplitude_bps": _bps(u.amplitude, rate_bps),
            "period_ns": _ns(u.period), "phase": u.phase,
            "start_ns": _ns(u.start),
            "stop_ns": _ns(u.stop) if u.stop is not None else None,
            "packet_bytes": u.packet, "direction": u.direction, "path": u.path,
            "rtt_ns": _ns(u.rtt if u.rtt is not None else rtt_s),
        })
    return out


def resolve(sc: Scenario, *, seed: int | None = None, base_dir: Path | None = None) -> dict:
    """The engine config for a validated scenario, plus a `meta` block the front
    end keeps (logical flows, measurement window, backend)."""
    if seed is not None:
        sc = sc.model_copy(update={"run": sc.run.model_copy(update={"seed": seed})})
    net, run = sc.network, sc.run
    rate, rtt_s = net.bottleneck, net.rtt
    duration, interval = run.duration, run.interval
    if interval > duration:
        raise ScenarioError("run.interval: longer than run.duration")
    measure_from = run.measure_from
    if measure_from >= duration:
        raise ScenarioError("run.measure_from: must be before the end of the run")
    trace = (run.trace_interval if run.trace_interval is not None
             else min(interval, DEFAULT_TRACE_INTERVAL_S))
    hops = _hops(sc)
    flows, logical = _engine_flows(sc, rtt_s, duration)
    background = _background(sc, rate, duration, base_dir)
    udp = _udp(sc, rate, rtt_s, duration)
    _check_rows(duration, interval, trace, len(flows) + len(udp) + 2 * len(hops))
    network = {
        "access_rate_bps": net.access_rate if net.access_rate else 10 * rate,
        "hops": hops,
    }
    out = {
        "seed": run.seed,
        "duration_ns": _ns(duration),
        "interval_ns": _ns(interval),
        "trace_interval_ns": _ns(trace),
        "network": network,
        "flows": flows,
        "udp": udp,
        "meta": {
            "logical_flows": logical,
            "measure_from_s": measure_from,
            "backend": run.backend,
            "bdp_bytes": rate * rtt_s / 8,
            "background": background,
        },
    }
    if run.pcap is not None:
        if run.backend == "testbed":
            raise ScenarioError("run.pcap: the testbed backend does not capture packets "
                                "(tcpdump on its interfaces does); allowed with backend sim")
        out["capture"] = _capture(run.pcap, logical)
    _check_in_engine(sc, out)
    return out


def _capture(pcap, logical: list[dict]) -> dict:
    """The engine's `capture`: by default every stream of the scenario's flows."""
    flows = pcap.flows
    if flows is None:
        flows = [s for f in logical for s in f["streams"]]
    return {"flows": flows, "max_packets": pcap.max_packets, "points": pcap.points()}


def _check_in_engine(sc: Scenario, resolved: dict) -> None:
    """The engine validates the config (the one place its rules live); an error
    names the scenario's field the engine's path comes from. Background flows
    are made when the run starts, from checked inputs: the engine sees the
    scenario's own flows, and a run of background flows only meets its rule
    that a run has traffic."""
    from .. import _sim

    cfg = {k: v for k, v in resolved.items() if k != "meta"}
    try:
        _sim.validate(json.dumps(cfg))
    except ValueError as e:
        path, message = e.args
        if path == "flows" and resolved["meta"]["background"]:
            return
        raise ScenarioError(f"{user_field(sc, resolved, path)}: {message}") from None


def engine_config(resolved: dict) -> dict:
    """The engine's part of a resolved scenario: without the front end's meta, with
    the background's long-lived flows after the scenario's own and its web
    sources as the engine's `web` section."""
    cfg = {k: v for k, v in resolved.items() if k != "meta"}
    recipe = resolved["meta"].get("background")
    if recipe:
        cfg["flows"] = cfg["flows"] + expand_background(recipe)
        web = engine_web(recipe)
        if web:
            cfg["web"] = web
    return cfg


def describe_bdp(resolved: dict) -> str:
    bdp = resolved["meta"]["bdp_bytes"]
    return f"{bdp / 1e6:.2f} MB ({math.ceil(bdp / MTU_BYTES)} packets of {MTU_BYTES} B)"
