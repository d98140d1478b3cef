"""Scenario files: TOML in, validated models, and the resolved engine config out.

A scenario names everything in researcher's units ("100Mbps", "20%bdp"); this
module checks every field (unknown keys, malformed units, impossible values are
errors that name the field and say what is allowed) and resolves units, defaults,
flow counts, parallel streams and background traffic into the JSON document the
engine takes (docs/engine-interface.md).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from . import traffic
from .cc_names import available_algorithms
from .units import UnitError, parse_buffer, parse_rate, parse_size, parse_time

QUEUES = ("droptail", "red")
DIRECTIONS = ("forward", "reverse")
HEADER_BYTES = 52  # IP 20 + TCP 20 + timestamp option 12
DEFAULT_TRACE_INTERVAL_S = 0.1
# Random streams of a run, derived from its seed: each use has its own, so adding
# one never shifts another's draws.
BACKGROUND_STREAM = 0xB6
START_JITTER_STREAM = 0x5A


class ScenarioError(ValueError):
    """A scenario that cannot run; the message names the field(s) at fault."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _unit(parser):
    def check(value):
        if value is None:
            return value
        try:
            parser(value)
        except UnitError as e:
            raise ValueError(str(e)) from None
        return value

    return check


class Red(_Model):
    min_th: float | None = None
    max_th: float | None = None
    w_q: float | None = None
    max_p: float | None = None
    gentle: bool | None = None


class Hop(_Model):
    rate: str | float
    delay: str | float = "0ms"
    buffer: str | int = "1bdp"
    reverse_buffer: str | int | None = None
    queue: str = "droptail"
    loss: float = Field(0.0, ge=0.0, lt=1.0)
    red: Red = Red()

    _rate = field_validator("rate")(_unit(parse_rate))
    _delay = field_validator("delay")(_unit(parse_time))

    @field_validator("queue")
    @classmethod
    def _queue(cls, v: str) -> str:
        if v not in QUEUES:
            raise ValueError(f"unknown queue {v!r}; allowed: {', '.join(QUEUES)}")
        return v


class Network(_Model):
    bottleneck: str | float = "100Mbps"
    rtt: str | float = "100ms"
    buffer: str | int = "1bdp"
    reverse_buffer: str | int | None = None
    queue: str = "droptail"
    loss: float = Field(0.0, ge=0.0, lt=1.0)
    bottleneck_delay: str | float = "0ms"
    access_rate: str | float | None = None
    red: Red = Red()
    hops: list[Hop] | None = None

    _rates = field_validator("bottleneck", "access_rate")(_unit(parse_rate))
    _times = field_validator("rtt", "bottleneck_delay")(_unit(parse_time))
    _queue = field_validator("queue")(Hop._queue.__func__)


class Flow(_Model):
    cc: str = "reno"
    count: int = Field(1, ge=1)
    streams: int = Field(1, ge=1, le=1024)
    start: str | float | list[str | float] = "0s"
    start_jitter: str | float = "0s"
    send_overhead: str | float = "0s"
    stop: str | float | None = None
    rtt: str | float | None = None
    max_window: str | int | None = None
    bytes: str | int | None = None
    sack: bool = True
    delayed_ack: bool = True
    delack_timeout: str | float = "40ms"
    initial_cwnd: int = Field(10, ge=1)
    mtu: int = Field(1500, ge=576, le=65535)
    mss: int | None = None
    params: dict[str, Any] = {}
    direction: str = "forward"
    path: list[int] | None = None
    txqueuelen: int | None = Field(None, ge=1)
    label: str | None = None

    _times = field_validator("stop", "rtt", "delack_timeout", "start_jitter",
                             "send_overhead")(_unit(parse_time))
    _sizes = field_validator("max_window", "bytes")(_unit(parse_size))

    @field_validator("start")
    @classmethod
    def _start(cls, v):
        for item in v if isinstance(v, list) else [v]:
            _unit(parse_time)(item)
        return v

    @field_validator("cc")
    @classmethod
    def _cc(cls, v: str) -> str:
        known = available_algorithms()
        if v not in known:
            raise ValueError(f"unknown algorithm {v!r}; allowed: {', '.join(known)}")
        return v

    @field_validator("direction")
    @classmethod
    def _direction(cls, v: str) -> str:
        if v not in DIRECTIONS:
            raise ValueError(f"unknown direction {v!r}; allowed: {', '.join(DIRECTIONS)}")
        return v


def _rate_or_share(value: str | float, capacity_bps: float) -> float:
    """A rate, or a share of the bottleneck written "20%"."""
    if isinstance(value, str) and value.strip().endswith("%"):
        return float(value.strip()[:-1]) / 100.0 * capacity_bps
    if value == 0 or value == "0":
        return 0.0
    return parse_rate(value)


def _share_check(value):
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            share = float(value.strip()[:-1])
        except ValueError:
            raise ValueError(f"bad share {value!r}; use e.g. '20%'") from None
        if share < 0:
            raise ValueError("a share must be non-negative")
        return value
    if value == 0 or value == "0":
        return value
    return _unit(parse_rate)(value)


class Udp(_Model):
    rate: str | float
    amplitude: str | float = 0
    period: str | float = "60s"
    phase: float = 0.0
    start: str | float = "0s"
    stop: str | float | None = None
    packet: int = Field(1500, ge=29, le=65535)
    direction: str = "forward"
    path: list[int] | None = None
    rtt: str | float | None = None

    _shares = field_validator("rate", "amplitude")(_share_check)
    _times = field_validator("period", "start", "stop", "rtt")(_unit(parse_time))
    _direction = field_validator("direction")(Flow._direction.__func__)


class RttDist(_Model):
    """Per-flow RTTs of background traffic."""

    kind: str = "fixed"
    value: str | float = "100ms"
    low: str | float = "10ms"
    high: str | float = "300ms"
    median: str | float = "80ms"
    sigma: float = Field(0.8, gt=0)
    file: str | None = None

    _times = field_validator("value", "low", "high", "median")(_unit(parse_time))

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        kinds = ("fixed", "uniform", "lognormal", "empirical")
        if v not in kinds:
            raise ValueError(f"unknown RTT distribution {v!r}; allowed: {', '.join(kinds)}")
        return v

    def model(self, base_dir: Path | None) -> traffic.RttModel:
        if self.kind == "empirical":
            if not self.file:
                raise ValueError("an empirical RTT distribution needs `file` "
                                 "(a CSV of rtt_ms[,weight])")
            path = Path(self.file)
            if base_dir and not path.is_absolute():
                path = base_dir / path
            return traffic.RttModel.from_csv(path)
        ms = lambda v: parse_time(v) * 1e3  # noqa: E731
        return traffic.RttModel(kind=self.kind, value_ms=ms(self.value), low_ms=ms(self.low),
                                high_ms=ms(self.high), median_ms=ms(self.median), sigma=self.sigma)


class LongLived(_Model):
    count: int = Field(0, ge=0)
    cc: str = "reno"
    window: str | int = "64KB"
    direction: str = "forward"
    jitter: str | float = "5s"
    rtt: RttDist = RttDist()

    _cc = field_validator("cc")(Flow._cc.__func__)
    _direction = field_validator("direction")(Flow._direction.__func__)
    _window = field_validator("window")(_unit(parse_size))
    _jitter = field_validator("jitter")(_unit(parse_time))


class Sizes(_Model):
    mu: float = traffic.SURGE_BODY_MU
    sigma: float = Field(traffic.SURGE_BODY_SIGMA, gt=0)
    alpha: float = Field(traffic.SURGE_TAIL_ALPHA, gt=1)
    k: str | int = "133KB"
    tail_fraction: float = Field(traffic.SURGE_TAIL_FRACTION, ge=0, le=1)
    cap: str | int = "100MB"

    _sizes = field_validator("k", "cap")(_unit(parse_size))

    def model(self) -> traffic.SizeModel:
        return traffic.SizeModel(mu=self.mu, sigma=self.sigma, alpha=self.alpha,
                                 k=float(parse_size(self.k)), tail_fraction=self.tail_fraction,
                                 cap=float(parse_size(self.cap)))


class Web(_Model):
    load: float = Field(0.0, ge=0.0, lt=1.0)
    cc: str = "reno"
    window: str | int = "64KB"
    direction: str = "forward"
    start: str | float = "0s"
    stop: str | float | None = None
    sizes: Sizes = Sizes()
    rtt: RttDist = RttDist()

    _cc = field_validator("cc")(Flow._cc.__func__)
    _direction = field_validator("direction")(Flow._direction.__func__)
    _window = field_validator("window")(_unit(parse_size))
    _times = field_validator("start", "stop")(_unit(parse_time))


class Background(_Model):
    long_lived: list[LongLived] = []
    web: list[Web] = []


class Run(_Model):
    duration: str | float = "60s"
    interval: str | float = "1s"
    trace_interval: str | float | None = None
    measure_from: str | float = "0s"
    seed: int = Field(1, ge=0, lt=2**63)
    backend: str = "sim"

    _times = field_validator("measure_from")(_unit(parse_time))
    _positive = field_validator("duration", "interval", "trace_interval")(
        _unit(lambda v: parse_time(v, allow_zero=False)))

    @field_validator("backend")
    @classmethod
    def _backend(cls, v: str) -> str:
        if v not in ("sim", "testbed"):
            raise ValueError(f"unknown backend {v!r}; allowed: sim, testbed")
        return v


class Scenario(_Model):
    network: Network = Network()
    flows: list[Flow] = Field(default_factory=lambda: [Flow()])
    udp: list[Udp] = []
    background: Background = Background()
    run: Run = Run()


# ----- loading, overrides, error messages -------------------------------------------


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The model class a location's last key belongs to (for 'allowed' lists)."""
    model: Any = Scenario
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        ann = field.annotation
        for arg in getattr(ann, "__args__", ()) + (ann,):
            inner = getattr(arg, "__args__", (arg,))
            found = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)),
                         None)
            if found:
                model = found
                break
        else:
            return None
    return model


def _message(err: dict) -> str:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))
    where = _loc(loc) or "scenario"
    if err["type"] == "extra_forbidden":
        model = _model_at(loc)
        allowed = ", ".join(model.model_fields) if model else "see docs/user-guide.md"
        return f"{where}: unknown key; allowed: {allowed}"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{where}: {msg}"


def validate(data: dict) -> Scenario:
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError("\n".join(_message(err) for err in e.errors())) from None


def read_toml(path: str | Path, what: str) -> dict:
    """A TOML file as a dict; a missing or malformed file is a ScenarioError."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such {what} file") from None
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not valid TOML: {e}") from None


def load_scenario(source: str | Path | dict | Scenario,
                  overrides: list[str] | tuple[str, ...] = ()) -> Scenario:
    """Read a scenario from a TOML path, a dict or a model, apply `key=value`
    overrides (dotted keys, list indices as numbers: flows.0.cc=cubic), validate."""
    if isinstance(source, Scenario):
        data = source.model_dump(exclude_unset=True)
    elif isinstance(source, dict):
        data = copy.deepcopy(source)
    else:
        data = read_toml(source, "scenario")
    for item in overrides:
        apply_override(data, item)
    return validate(data)


def _parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(data: dict, item: str) -> None:
    """Set one `dotted.key=value` in a scenario dict (creating tables as needed)."""
    if "=" not in item:
        raise ScenarioError(f"--set {item!r}: expected dotted.key=value")
    key, _, text = item.partition("=")
    parts = key.strip().split(".")
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ScenarioError(f"--set {key}: index {part!r} out of range "
                                    f"(the list has {len(node)} entries)")
            idx = int(part)
            if last:
                node[idx] = _parse_value(text)
            else:
                node = node[idx]
            continue
        if not isinstance(node, dict):
            raise ScenarioError(f"--set {key}: {'.'.join(parts[:i])} is not a table")
        if last:
            node[part] = _parse_value(text)
        else:
            if part not in node:
                node[part] = [{}] if part in ("flows", "udp") and parts[i + 1].isdigit() else {}
            node = node[part]


# ----- resolution to the engine config ------------------------------------------------


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def _buffer(spec, rate_bps: float, rtt_s: float, field: str) -> dict:
    try:
        buf = parse_buffer(spec, rate_bps * rtt_s / 8.0)
    except UnitError as e:
        raise ScenarioError(f"{field}: {e}") from None
    return buf


def _limits(prefix: str, buf: dict) -> dict:
    return {f"{prefix}_pkts": buf.get("pkts"), f"{prefix}_bytes": buf.get("bytes")}


def _red(red: Red) -> dict:
    return {k: v for k, v in red.model_dump().items() if v is not None}


def _hops(net: Network, rtt_s: float) -> list[dict] | None:
    if not net.hops:
        return None
    out = []
    for j, h in enumerate(net.hops):
        rate = parse_rate(h.rate)
        fwd = _buffer(h.buffer, rate, rtt_s, f"network.hops[{j}].buffer")
        rev = _buffer(h.reverse_buffer or h.buffer, rate, rtt_s,
                      f"network.hops[{j}].reverse_buffer")
        out.append({
            "rate_bps": rate, "delay_ns": _ns(parse_time(h.delay)),
            "buffer_pkts": fwd.get("pkts"), "buffer_bytes": fwd.get("bytes"),
            "reverse_buffer_pkts": rev.get("pkts"), "reverse_buffer_bytes": rev.get("bytes"),
            "queue": h.queue, "loss": h.loss, "red": _red(h.red),
        })
    return out


def _starts(f: Flow, k: int, seed: int) -> list[float]:
    """Start time of each of the entry's flows: its start plus a uniform offset
    in [0, start_jitter), drawn from the run's seed and the entry's index. A
    simulation without random inputs is otherwise the same run whatever the
    seed; the jitter makes repetitions differ the way testbed runs do."""
    if isinstance(f.start, list):
        if len(f.start) != f.count:
            raise ScenarioError(f"flows[{k}].start: {len(f.start)} start times for count = "
                                f"{f.count}; give one per flow or a single value")
        starts = [parse_time(s) for s in f.start]
    else:
        starts = [parse_time(f.start)] * f.count
    jitter = parse_time(f.start_jitter)
    if jitter == 0:
        return starts
    offsets = np.random.default_rng([seed, START_JITTER_STREAM, k]).uniform(0, jitter, f.count)
    return [s + float(o) for s, o in zip(starts, offsets, strict=True)]


def _check_params(f: Flow, k: int) -> None:
    from . import _sim

    try:
        _sim.check_algorithm(f.cc, json.dumps(f.params))
    except ValueError as e:
        raise ScenarioError(f"flows[{k}].{e}" if str(e).startswith("params") else
                            f"flows[{k}].cc: {e}") from None


def _engine_flows(sc: Scenario, rtt_s: float) -> tuple[list[dict], list[dict]]:
    """Expand flow entries (count x streams) into engine flows; returns them and
    one record per logical flow (id, label, engine flow ids)."""
    engine, logical = [], []
    for k, f in enumerate(sc.flows):
        _check_params(f, k)
        mss = f.mss if f.mss is not None else f.mtu - HEADER_BYTES
        if not 0 < mss < f.mtu:
            raise ScenarioError(f"flows[{k}].mss: must be positive and below the MTU ({f.mtu})")
        total = parse_size(f.bytes) if f.bytes is not None else None
        if total is not None and total < f.streams:
            raise ScenarioError(f"flows[{k}].bytes: fewer bytes than streams")
        window = parse_size(f.max_window) if f.max_window is not None else None
        if window is not None and window < mss:
            raise ScenarioError(f"flows[{k}].max_window: must be at least one MSS ({mss} B)")
        for start in _starts(f, k, sc.run.seed):
            fid = len(logical)
            label = f.label or f"{f.cc}-{fid}"
            ids = []
            for s in range(f.streams):
                share = None if total is None else total // f.streams + (s < total % f.streams)
                ids.append(len(engine))
                engine.append({
                    "cc": f.cc, "params": f.params,
                    "rtt_ns": _ns(parse_time(f.rtt) if f.rtt is not None else rtt_s),
                    "start_ns": _ns(start),
                    "stop_ns": _ns(parse_time(f.stop)) if f.stop is not None else None,
                    "bytes": share, "max_window_bytes": window,
                    "mss": mss, "mtu": f.mtu, "sack": f.sack, "delayed_ack": f.delayed_ack,
                    "delack_timeout_ns": _ns(parse_time(f.delack_timeout)),
                    "initial_cwnd": f.initial_cwnd, "direction": f.direction,
                    "path": f.path, "nic_queue_pkts": f.txqueuelen, "group": label,
                    **_send_overhead(f),
                })
            logical.append({"id": fid, "label": label, "cc": f.cc, "streams": ids,
                            "entry": k})
    return engine, logical


def _send_overhead(f: Flow) -> dict:
    """The engine key only when set, so that scenarios without it keep their run
    keys (and stored runs stay found)."""
    ns = _ns(parse_time(f.send_overhead))
    return {"send_overhead_ns": ns} if ns else {}


def _udp(sc: Scenario, rate_bps: float, rtt_s: float, duration_s: float) -> list[dict]:
    out = []
    for u in sc.udp:
        out.append({
            "rate_bps": _rate_or_share(u.rate, rate_bps),
            "amplitude_bps": _rate_or_share(u.amplitude, rate_bps),
            "period_ns": _ns(parse_time(u.period)), "phase": u.phase,
            "start_ns": _ns(parse_time(u.start)),
            "stop_ns": _ns(parse_time(u.stop)) if u.stop is not None else None,
            "packet_bytes": u.packet, "direction": u.direction, "path": u.path,
            "rtt_ns": _ns(parse_time(u.rtt) if u.rtt is not None else rtt_s),
        })
    return out


def _background(sc: Scenario, rate_bps: float, duration_s: float,
                base_dir: Path | None) -> dict | None:
    """Background traffic as a recipe: every input of its expansion, resolved to
    numbers (an empirical RTT table is read in now), so the recipe alone fixes
    the flows and the run key changes with any input. The flows themselves are
    made only when the engine needs them (`engine_config`): a 600 s run with web
    traffic expands into ~10^5 flows, and a sweep of such runs would otherwise
    hold gigabytes while it plans."""
    bg = sc.background
    if not any(ll.count for ll in bg.long_lived) and not any(w.load > 0 for w in bg.web):
        return None
    try:
        long_lived = [{"count": ll.count, "cc": ll.cc, "jitter_s": parse_time(ll.jitter),
                       "direction": ll.direction, "max_window": parse_size(ll.window),
                       "rtt": dataclasses.asdict(ll.rtt.model(base_dir))}
                      for ll in bg.long_lived]
        web = [{"load": w.load, "cc": w.cc, "direction": w.direction,
                "max_window": parse_size(w.window), "start_s": parse_time(w.start),
                "stop_s": parse_time(w.stop) if w.stop is not None else duration_s,
                "sizes": dataclasses.asdict(w.sizes.model()),
                "rtt": dataclasses.asdict(w.rtt.model(base_dir))}
               for w in bg.web]
    except (ValueError, OSError) as e:
        raise ScenarioError(f"background: {e}") from None
    return {"seed": sc.run.seed, "rate_bps": rate_bps, "long_lived": long_lived, "web": web}


def _rtt_model(d: dict) -> traffic.RttModel:
    return traffic.RttModel(**{**d, "table": tuple(tuple(r) for r in d["table"])})


def expand_background(recipe: dict) -> list[dict]:
    """Engine flows of a background recipe (one seeded stream of its own, long-lived
    sources first, then web sources, in the scenario's order)."""
    rng = np.random.default_rng([recipe["seed"], BACKGROUND_STREAM])
    out: list[dict] = []
    for ll in recipe["long_lived"]:
        out += traffic.long_lived_flows(
            count=ll["count"], rng=rng, rtts=_rtt_model(ll["rtt"]), cc=ll["cc"],
            jitter_s=ll["jitter_s"], direction=ll["direction"], max_window=ll["max_window"])
    for w in recipe["web"]:
        out += traffic.web_flows(
            load=w["load"], capacity_bps=recipe["rate_bps"], start_s=w["start_s"],
            stop_s=w["stop_s"], rng=rng, sizes=traffic.SizeModel(**w["sizes"]),
            rtts=_rtt_model(w["rtt"]), cc=w["cc"], direction=w["direction"],
            max_window=w["max_window"])
    return out


def resolve(sc: Scenario, *, seed: int | None = None, base_dir: Path | None = None) -> dict:
    """The engine config for a validated scenario, plus a `meta` block the front
    end keeps (logical flows, measurement window, backend)."""
    if seed is not None:
        sc = sc.model_copy(update={"run": sc.run.model_copy(update={"seed": seed})})
    net, run = sc.network, sc.run
    rate = parse_rate(net.bottleneck)
    rtt_s = parse_time(net.rtt)
    duration = parse_time(run.duration, allow_zero=False)
    interval = parse_time(run.interval, allow_zero=False)
    if interval > duration:
        raise ScenarioError("run.interval: longer than run.duration")
    measure_from = parse_time(run.measure_from)
    if measure_from >= duration:
        raise ScenarioError("run.measure_from: must be before the end of the run")
    trace = (parse_time(run.trace_interval, allow_zero=False) if run.trace_interval is not None
             else min(interval, DEFAULT_TRACE_INTERVAL_S))
    fwd = _buffer(net.buffer, rate, rtt_s, "network.buffer")
    rev = _buffer(net.reverse_buffer or net.buffer, rate, rtt_s, "network.reverse_buffer")
    flows, logical = _engine_flows(sc, rtt_s)
    background = _background(sc, rate, duration, base_dir)
    udp = _udp(sc, rate, rtt_s, duration)
    if not flows and not udp and not background:
        raise ScenarioError("flows: at least one flow or UDP stream is needed")
    network = {
        "bottleneck_rate_bps": rate,
        "bottleneck_delay_ns": _ns(parse_time(net.bottleneck_delay)),
        "access_rate_bps": parse_rate(net.access_rate) if net.access_rate else 10 * rate,
        **_limits("buffer", fwd), **_limits("reverse_buffer", rev),
        "queue": net.queue, "loss": net.loss, "red": _red(net.red),
        "hops": _hops(net, rtt_s),
    }
    return {
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


def engine_config(resolved: dict) -> dict:
    """The engine's part of a resolved scenario: without the front end's meta, and
    with the background recipe expanded into flows after the scenario's own."""
    cfg = {k: v for k, v in resolved.items() if k != "meta"}
    recipe = resolved["meta"].get("background")
    if recipe:
        cfg["flows"] = cfg["flows"] + expand_background(recipe)
    return cfg


def describe_bdp(resolved: dict) -> str:
    bdp = resolved["meta"]["bdp_bytes"]
    return f"{bdp / 1e6:.2f} MB ({math.ceil(bdp / 1500)} packets of 1500 B)"
