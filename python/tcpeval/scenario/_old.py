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
import difflib
import functools
import json
import math
import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    field_validator,
)

from . import traffic
from .cc_names import available_algorithms
from .constants import DELACK_TIMEOUT_S, HEADER_BYTES, INITIAL_CWND, MTU_BYTES
from .errors import ScenarioError
from .units import (
    MAX_BUFFER_PKTS,
    MIN_NONZERO_TIME_S,
    Buffer,
    UnitError,
    parse_buffer_spec,
    parse_rate,
    parse_size,
    parse_time,
)

DEFAULT_TRACE_INTERVAL_S = 0.1
# Random streams of a run, derived from its seed: each use has its own, so adding
# one never shifts another's draws.
BACKGROUND_STREAM = 0xB6
START_JITTER_STREAM = 0x5A

# Bounds of what a run may ask for, each in one place (units.py holds those of
# single values). Engine flows ([[flows]] count x streams plus long-lived
# background flows): each holds a sender and a receiver with their scoreboards.
MAX_FLOWS = 100_000
# Expected web transfers of a run (load x capacity x time / mean size): each is
# a dict while the run is built.
MAX_WEB_FLOWS = 1_000_000
# Segments a flow may send at once: every one is a packet in memory at once.
# Linux caps cwnd at 2^31 - 1, far beyond what a simulation can hold.
MAX_INITIAL_CWND = 100_000
# The largest TCP window (RFC 7323: 2^30 bytes with window scaling).
MAX_WINDOW_BYTES = 2**30
# Packets in flight on one flow's path (rate x RTT / 1500 B): each is held in
# memory with its event.
MAX_BDP_PKTS = 10_000_000
# Rows of the per-interval and trace tables (duration / interval x series): a
# row costs a few hundred bytes on its way through JSON and pandas.
MAX_TRACE_ROWS = 10_000_000
# A scenario file larger than this is not a scenario (and TOML nesting of a few
# thousand levels exhausts the parser's recursion).
MAX_FILE_BYTES = 10_000_000
MAX_NESTING = 100
# A UDP share of the bottleneck above 10 times its rate only fills the access queue.
MAX_SHARE_PERCENT = 1000


class _Model(BaseModel):
    # strict: booleans are not numbers and floats not whole numbers. Defaults are
    # written as in a scenario file ("100Mbps") and parsed like a value.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True,
                              allow_inf_nan=False, validate_default=True)


def _parsed(parser):
    """A unit field's parser, run once when the model is validated, on the value
    as written (before pydantic's own checks: a boolean is not a number)."""
    def parse(value):
        if value is None:
            return value
        try:
            return parser(value)
        except UnitError as e:
            raise ValueError(str(e)) from None

    return parse


def _positive_time(value) -> float:
    return parse_time(value, allow_zero=False)


def _window_size(value) -> int:
    size = parse_size(value)
    if size > MAX_WINDOW_BYTES:
        raise UnitError(f"window {value!r} is too large; at most {MAX_WINDOW_BYTES} B "
                        "(1GiB, the largest TCP window)")
    return size


@dataclasses.dataclass(frozen=True)
class Share:
    """A rate written as a share of the bottleneck ("20%")."""

    fraction: float
    text: str


def _rate_or_share(value) -> float | Share:
    """A rate, 0, or a share of the bottleneck written "20%"."""
    if isinstance(value, Share):
        return value
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            share = float(value.strip()[:-1])
        except ValueError:
            raise UnitError(f"bad share {value!r}; use e.g. '20%'") from None
        if not 0 <= share <= MAX_SHARE_PERCENT:
            raise UnitError(f"share {value!r} out of range; allowed: 0% to "
                            f"{MAX_SHARE_PERCENT}% of the bottleneck")
        return Share(share / 100.0, value)
    if not isinstance(value, bool) and (value == 0 or value == "0"):
        return 0.0
    return parse_rate(value)


# The unit types of scenario fields: numbers in base units (bit/s, seconds,
# bytes), parsed once from what was written; dumped back as numbers (a buffer
# or a share as written).
Rate = Annotated[float, BeforeValidator(_parsed(parse_rate))]
Time = Annotated[float, BeforeValidator(_parsed(parse_time))]
PositiveTime = Annotated[float, BeforeValidator(_parsed(_positive_time))]
Size = Annotated[int, BeforeValidator(_parsed(parse_size))]
Window = Annotated[int, BeforeValidator(_parsed(_window_size))]
BufferSize = Annotated[Buffer, BeforeValidator(_parsed(parse_buffer_spec)),
                       PlainSerializer(lambda b: b.text)]
RateOrShare = Annotated[float | Share, BeforeValidator(_parsed(_rate_or_share)),
                        PlainSerializer(lambda v: v.text if isinstance(v, Share) else v)]


class Red(_Model):
    """RED thresholds (packets, so bounded like a buffer), EWMA weight, maximum
    drop probability; the engine checks the values (`resolve`)."""

    min_th: float | None = Field(None, le=MAX_BUFFER_PKTS)
    max_th: float | None = Field(None, le=MAX_BUFFER_PKTS)
    w_q: float | None = None
    max_p: float | None = None
    gentle: bool | None = None


class Hop(_Model):
    rate: Rate
    delay: Time = 0.0
    buffer: BufferSize = "1bdp"
    reverse_buffer: BufferSize | None = None
    queue: str = "droptail"
    loss: float = Field(0.0, ge=0.0, lt=1.0)
    red: Red = Red()


class Network(_Model):
    bottleneck: Rate = "100Mbps"
    rtt: Time = "100ms"
    buffer: BufferSize = "1bdp"
    reverse_buffer: BufferSize | None = None
    queue: str = "droptail"
    loss: float = Field(0.0, ge=0.0, lt=1.0)
    bottleneck_delay: Time = 0.0
    access_rate: Rate | None = None
    red: Red = Red()
    hops: list[Hop] | None = None


class Flow(_Model):
    cc: str = "reno"
    count: int = Field(1, ge=1, le=MAX_FLOWS)
    streams: int = Field(1, ge=1, le=1024)
    start: float | list[float] = 0.0
    start_jitter: Time = 0.0
    send_overhead: Time = 0.0
    stop: Time | None = None
    rtt: Time | None = None
    max_window: Window | None = None
    bytes: Size | None = None
    sack: bool = True
    delayed_ack: bool = True
    delack_timeout: Time = DELACK_TIMEOUT_S
    initial_cwnd: int = Field(INITIAL_CWND, ge=1, le=MAX_INITIAL_CWND)
    mtu: int = Field(MTU_BYTES, ge=576, le=65535)
    mss: int | None = Field(None, ge=1, le=65535)
    params: dict[str, Any] = {}
    direction: str = "forward"
    path: list[Annotated[int, Field(ge=0)]] | None = None
    txqueuelen: int | None = Field(None, ge=1, le=MAX_BUFFER_PKTS)
    label: str | None = None

    @field_validator("start", mode="before")
    @classmethod
    def _start(cls, v):
        parse = _parsed(parse_time)
        return [parse(item) for item in v] if isinstance(v, list) else parse(v)



class Udp(_Model):
    rate: RateOrShare
    amplitude: RateOrShare = 0.0
    period: PositiveTime = "60s"
    phase: float = Field(0.0, ge=-1e6, le=1e6)
    start: Time = 0.0
    stop: Time | None = None
    packet: int = Field(MTU_BYTES, ge=29, le=65535)
    direction: str = "forward"
    path: list[Annotated[int, Field(ge=0)]] | None = None
    rtt: Time | None = None


class RttDist(_Model):
    """Per-flow RTTs of background traffic."""

    kind: str = "fixed"
    value: PositiveTime = "100ms"
    low: PositiveTime = "10ms"
    high: PositiveTime = "300ms"
    median: PositiveTime = "80ms"
    # A lognormal sigma above 3 spreads RTTs over 10^15 (past any time bound).
    sigma: float = Field(0.8, gt=0, le=3)
    file: str | None = None

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
        return traffic.RttModel(kind=self.kind, value_ms=self.value * 1e3,
                                low_ms=self.low * 1e3, high_ms=self.high * 1e3,
                                median_ms=self.median * 1e3, sigma=self.sigma)


def _known_cc(v: str) -> str:
    """Background flows are made when the run starts, so their algorithm is
    checked against the engine's names here."""
    known = available_algorithms()
    if v not in known:
        raise ValueError(f"unknown algorithm {v!r}; allowed: {', '.join(known)}")
    return v


@functools.cache
def _directions() -> list[str]:
    """The directions of a stream, from the engine's schema."""
    from . import _sim

    flow = json.loads(_sim.config_schema())["definitions"]["FlowConfig"]
    return flow["properties"]["direction"]["enum"]


def _known_direction(v: str) -> str:
    if v not in _directions():
        raise ValueError(f"unknown direction {v!r}; allowed: {', '.join(_directions())}")
    return v


class LongLived(_Model):
    count: int = Field(0, ge=0, le=MAX_FLOWS)
    cc: str = "reno"
    window: Window = "64KB"
    direction: str = "forward"
    jitter: Time = "5s"
    rtt: RttDist = RttDist()

    _cc = field_validator("cc")(_known_cc)
    _direction = field_validator("direction")(_known_direction)


class Sizes(_Model):
    # ln(bytes) of the lognormal body: e^40 is past any size bound, and a larger
    # mu or sigma overflows the mean.
    mu: float = Field(traffic.SURGE_BODY_MU, ge=-40, le=40)
    sigma: float = Field(traffic.SURGE_BODY_SIGMA, gt=0, le=10)
    alpha: float = Field(traffic.SURGE_TAIL_ALPHA, gt=1)
    k: Size = "133KB"
    tail_fraction: float = Field(traffic.SURGE_TAIL_FRACTION, ge=0, le=1)
    cap: Size = "100MB"

    def model(self) -> traffic.SizeModel:
        return traffic.SizeModel(mu=self.mu, sigma=self.sigma, alpha=self.alpha,
                                 k=float(self.k), tail_fraction=self.tail_fraction,
                                 cap=float(self.cap))


class Web(_Model):
    load: float = Field(0.0, ge=0.0, lt=1.0)
    cc: str = "reno"
    window: Window = "64KB"
    direction: str = "forward"
    start: Time = 0.0
    stop: Time | None = None
    sizes: Sizes = Sizes()
    rtt: RttDist = RttDist()

    _cc = field_validator("cc")(_known_cc)
    _direction = field_validator("direction")(_known_direction)


class Background(_Model):
    long_lived: list[LongLived] = []
    web: list[Web] = []


class Run(_Model):
    duration: PositiveTime = "60s"
    interval: PositiveTime = "1s"
    trace_interval: PositiveTime | None = None
    measure_from: Time = 0.0
    seed: int = Field(1, ge=0, lt=2**63)
    backend: str = "sim"

    @field_validator("backend")
    @classmethod
    def _backend(cls, v: str) -> str:
        if v not in ("sim", "testbed"):
            raise ValueError(f"unknown backend {v!r}; allowed: sim, testbed")
        return v


class Scenario(_Model):
    network: Network = Network()
    flows: list[Flow] = []
    udp: list[Udp] = []
    background: Background = Background()
    run: Run = Run()


# ----- loading, overrides, error messages -------------------------------------------


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _inner_model(annotation) -> type[BaseModel] | None:
    """The model a field holds (itself, in a list or optional), else None."""
    for arg in getattr(annotation, "__args__", ()) + (annotation,):
        inner = getattr(arg, "__args__", (arg,))
        found = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)),
                     None)
        if found:
            return found
    return None


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The model class a location's last key belongs to (for 'allowed' lists)."""
    model: Any = Scenario
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        model = _inner_model(field.annotation) if field else None
        if model is None:
            return None
    return model


def check_key(key: str, extra: tuple[str, ...] = ()) -> None:
    """A dotted key (`network.rtt`, `flows.0.cc`) must name a scenario field;
    else a ScenarioError names the first unknown part with a near match.
    `extra`: further keys allowed at the top level (a sweep's `repetitions`)."""
    model: Any = Scenario
    for i, part in enumerate(key.split(".")):
        if part.isdigit() or model is None:  # a list index, or inside a free table
            continue
        known = list(model.model_fields) + (list(extra) if i == 0 else [])
        if part not in known:
            raise ScenarioError(f"{key}: unknown key {_short(part)}{_suggest(part, known)}; "
                                f"allowed here: {', '.join(known)}")
        model = _inner_model(model.model_fields[part].annotation) if part in \
            model.model_fields else None


# Pydantic's type errors in the words of the scenario reference.
_TYPE_WORDS = {
    "int_type": "must be a whole number", "float_type": "must be a number",
    "string_type": "must be a string", "bool_type": "must be true or false",
    "finite_number": "must be a finite number", "list_type": "must be a list",
    "dict_type": "must be a table", "model_type": "must be a table",
    "model_attributes_type": "must be a table", "missing": "is required",
}
_BOUND_WORDS = {"greater_than_equal": (">=", "ge"), "greater_than": (">", "gt"),
                "less_than_equal": ("<=", "le"), "less_than": ("<", "lt")}


def _message(err: dict) -> str:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))
    where = _loc(loc) or "scenario"
    kind = err["type"]
    if kind == "extra_forbidden":
        keys = list(_model_at(loc).model_fields) if _model_at(loc) else []
        allowed = ", ".join(keys) or "see docs/user-guide.md"
        return f"{where}: unknown key{_suggest(str(loc[-1]), keys)}; allowed: {allowed}"
    got = "" if kind == "missing" else f", got {_short(err.get('input'))}"
    if kind in _TYPE_WORDS:
        return f"{where}: {_TYPE_WORDS[kind]}{got}"
    if kind in _BOUND_WORDS:
        op, key = _BOUND_WORDS[kind]
        bound = err["ctx"][key]
        return f"{where}: must be {op} {f'{bound:g}' if isinstance(bound, float) else bound}{got}"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{where}: {msg}"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _suggest(word: str, choices: list[str]) -> str:
    """' (did you mean 'x'?)' for a near miss of a known key, else ''."""
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def validate(data: dict) -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError("scenario: must be a table of [network], [[flows]], [run]...")
    try:
        sc = Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError("\n".join(_message(err) for err in e.errors())) from None
    bg = sc.background
    if not sc.flows and not sc.udp and not any(ll.count for ll in bg.long_lived) \
            and not any(w.load > 0 for w in bg.web):
        # No flow is invented: a run without traffic measures nothing.
        raise ScenarioError("flows: at least one [[flows]] entry (or [[udp]] / [background]) "
                            "is needed")
    _check_rtts(sc)
    return sc


def _check_rtts(sc: Scenario) -> None:
    """An RTT of 0 means "no emulated delay" on the testbed; the simulator needs
    a positive one (a path without delay has no BDP, so '1bdp' would be 1 packet)."""
    if sc.run.backend != "sim":
        return
    rtts = [("network.rtt", sc.network.rtt)]
    rtts += [(f"flows[{k}].rtt", f.rtt) for k, f in enumerate(sc.flows)]
    rtts += [(f"udp[{i}].rtt", u.rtt) for i, u in enumerate(sc.udp)]
    for field, rtt in rtts:
        if rtt is not None and rtt < MIN_NONZERO_TIME_S:
            raise ScenarioError(f"{field}: must be positive on the simulator, got "
                                f"{rtt:g} s (0 means no emulated delay: testbed only)")


def read_toml(path: str | Path, what: str) -> dict:
    """A TOML file as a dict; a missing, unreadable or malformed file is a
    ScenarioError (one line)."""
    path = Path(path)
    try:
        if path.is_dir():
            raise ScenarioError(f"{path}: is a directory, not a {what} file")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ScenarioError(f"{path}: larger than {MAX_FILE_BYTES // 10**6} MB; "
                                f"not a {what} file")
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such {what} file") from None
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {e.start}); a {what} file "
                            "is TOML text") from None
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read the {what} file: {e.strerror}") from None
    return _parse_toml(text, str(path))


def _parse_toml(text: str, where: str) -> dict:
    if _nesting(text) > MAX_NESTING:
        raise ScenarioError(f"{where}: arrays or tables nested deeper than {MAX_NESTING} "
                            "levels; not a scenario")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{where}: not valid TOML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise ScenarioError(f"{where}: nested too deeply; not a scenario") from None


def _nesting(text: str) -> int:
    """An upper bound on the bracket nesting of a TOML text (brackets inside
    strings count too: a bound, checked before tomllib recurses into it)."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


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


def _parse_value(text: str, key: str) -> Any:
    """A TOML value, or the text itself when it is not one (bare strings)."""
    if _nesting(text) > MAX_NESTING:
        raise ScenarioError(f"--set {key}: value nested deeper than {MAX_NESTING} levels")
    try:
        parsed = tomllib.loads(f"v = {text}")
    except (tomllib.TOMLDecodeError, RecursionError):
        return text
    return parsed["v"] if list(parsed) == ["v"] else text


def apply_override(data: dict, item: str) -> None:
    """Set one `dotted.key=value` in a scenario dict (creating tables as needed)."""
    if "=" not in item:
        raise ScenarioError(f"--set {_short(item)}: expected dotted.key=value")
    key, _, text = item.partition("=")
    parts = [p.strip() for p in key.strip().split(".")]
    if not all(parts):
        raise ScenarioError(f"--set {_short(item)}: expected dotted.key=value (a key part "
                            "is empty)")
    key = ".".join(parts)
    try:
        check_key(key)
    except ScenarioError as e:
        raise ScenarioError(f"--set {e}") from None
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ScenarioError(f"--set {key}: index {_short(part)} out of range "
                                    f"(the list has {len(node)} entries)")
            idx = int(part)
            if last:
                node[idx] = _parse_value(text, key)
            else:
                node = node[idx]
            continue
        if not isinstance(node, dict):
            raise ScenarioError(f"--set {key}: {'.'.join(parts[:i])} is not a table")
        if last:
            node[part] = _parse_value(text, key)
        else:
            if part not in node:
                node[part] = [{}] if part in ("flows", "udp") and parts[i + 1].isdigit() else {}
            node = node[part]


# ----- resolution to the engine config ------------------------------------------------


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


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
              reverse_buffer=net.reverse_buffer, queue=net.queue, loss=net.loss, red=net.red)
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
        })
    return out


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


def _check_times(field: str, starts: list[float], stop: float | None, duration: float) -> None:
    if max(starts) >= duration:
        raise ScenarioError(f"{field}.start: {max(starts):g} s is at or after the end of the "
                            f"run (run.duration = {duration:g} s)")
    if stop is not None and stop <= min(starts):
        raise ScenarioError(f"{field}.stop: {stop:g} s must be after the start "
                            f"({min(starts):g} s)")


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
        window = f.max_window
        for start in _starts(f, k, sc.run.seed):
            fid = len(logical)
            label = f.label or f"{f.cc}-{fid}"
            ids = []
            for s in range(f.streams):
                share = None if total is None else total // f.streams + (s < total % f.streams)
                ids.append(len(engine))
                engine.append({
                    "cc": f.cc, "params": f.params,
                    "rtt_ns": _ns(f.rtt if f.rtt is not None else rtt_s),
                    "start_ns": _ns(start),
                    "stop_ns": _ns(f.stop) if f.stop is not None else None,
                    "bytes": share, "max_window_bytes": window,
                    "mss": mss, "mtu": f.mtu, "sack": f.sack, "delayed_ack": f.delayed_ack,
                    "delack_timeout_ns": _ns(f.delack_timeout),
                    "initial_cwnd": f.initial_cwnd, "direction": f.direction,
                    "path": f.path, "nic_queue_pkts": f.txqueuelen, "group": label,
                    "send_overhead_ns": _ns(f.send_overhead),
                })
            logical.append({"id": fid, "label": label, "cc": f.cc, "streams": ids,
                            "entry": k})
    return engine, logical


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
        long_lived = [{"count": ll.count, "cc": ll.cc, "jitter_s": ll.jitter,
                       "direction": ll.direction, "max_window": ll.window,
                       "rtt": dataclasses.asdict(ll.rtt.model(base_dir))}
                      for ll in bg.long_lived]
        web = [{"load": w.load, "cc": w.cc, "direction": w.direction,
                "max_window": w.window, "start_s": w.start,
                "stop_s": w.stop if w.stop is not None else duration_s,
                "sizes": dataclasses.asdict(w.sizes.model()),
                "rtt": dataclasses.asdict(w.rtt.model(base_dir))}
               for w in bg.web]
    except (ValueError, OSError) as e:
        raise ScenarioError(f"background: {e}") from None
    for j, w in enumerate(web):
        _check_web(j, w, rate_bps, duration_s)
    return {"seed": sc.run.seed, "rate_bps": rate_bps, "long_lived": long_lived, "web": web}


def _check_web(j: int, w: dict, rate_bps: float, duration_s: float) -> None:
    field = f"background.web[{j}]"
    _check_times(field, [w["start_s"]], w["stop_s"], duration_s)
    mean = traffic.SizeModel(**w["sizes"]).mean()
    expected = w["load"] * rate_bps * (w["stop_s"] - w["start_s"]) / (8 * mean)
    if not expected <= MAX_WEB_FLOWS:
        raise ScenarioError(f"{field}.load: about {expected:.3g} transfers (load x rate x "
                            f"time / mean size {mean:.3g} B); at most {MAX_WEB_FLOWS:.0e}")


def _rtt_model(d: dict) -> traffic.RttModel:
    return traffic.RttModel(**{**d, "table": tuple(tuple(r) for r in d["table"])})


def expand_background(recipe: dict) -> list[dict]:
    """Engine flows of a background recipe (one seeded stream of its own, long-lived
    sources first, then web sources, in the scenario's order)."""
    import numpy as np

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


def _check_rows(duration: float, interval: float, trace: float, series: int) -> None:
    """The per-interval and trace tables must fit in memory."""
    step, field = (trace, "run.trace_interval") if trace <= interval else (
        interval, "run.interval")
    rows = duration / step * series
    if rows > MAX_TRACE_ROWS:
        raise ScenarioError(f"{field}: {duration:g} s / {step:g} s x {series} series = "
                            f"{rows:.3g} table rows; at most {MAX_TRACE_ROWS:.0e} (raise "
                            f"{field} or shorten run.duration)")


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
    _check_in_engine(sc, out)
    return out


def _check_in_engine(sc: Scenario, resolved: dict) -> None:
    """The engine validates the config (the one place its rules live); an error
    names the scenario's field the engine's path comes from. Background flows
    are made when the run starts, from checked inputs: the engine sees the
    scenario's own flows, and a run of background flows only meets its rule
    that a run has traffic."""
    from . import _sim

    cfg = {k: v for k, v in resolved.items() if k != "meta"}
    try:
        _sim.validate(json.dumps(cfg))
    except ValueError as e:
        path, message = e.args
        if path == "flows" and resolved["meta"]["background"]:
            return
        raise ScenarioError(f"{user_field(sc, resolved, path)}: {message}") from None


# Engine field -> scenario key, by table (docs/engine-interface.md, docs/user-guide.md).
_RUN_KEYS = {"seed": "run.seed", "duration_ns": "run.duration", "interval_ns": "run.interval",
             "trace_interval_ns": "run.trace_interval", "config": "scenario",
             "flows": "flows", "network": "network"}
_FLOW_KEYS = {"rtt_ns": "rtt", "start_ns": "start", "stop_ns": "stop",
              "max_window_bytes": "max_window", "nic_queue_pkts": "txqueuelen",
              "delack_timeout_ns": "delack_timeout", "send_overhead_ns": "send_overhead",
              "group": "label"}
_UDP_KEYS = {"rate_bps": "rate", "amplitude_bps": "amplitude", "period_ns": "period",
             "start_ns": "start", "stop_ns": "stop", "packet_bytes": "packet", "rtt_ns": "rtt"}
_HOP_KEYS = {"rate_bps": "rate", "delay_ns": "delay", "buffer_pkts": "buffer",
             "buffer_bytes": "buffer", "reverse_buffer_pkts": "reverse_buffer",
             "reverse_buffer_bytes": "reverse_buffer"}
# The dumbbell's hop is written in [network] itself.
_DUMBBELL_KEYS = {**_HOP_KEYS, "rate_bps": "bottleneck", "delay_ns": "bottleneck_delay"}


def user_field(sc: Scenario, resolved: dict, path: str) -> str:
    """The scenario field an engine config path comes from: `flows[3].params.beta`
    is `flows[1].params.beta` when engine flow 3 comes from the second [[flows]]
    entry (counts and streams expand entries), `network.hops[0].buffer_pkts` is
    `network.buffer` for a dumbbell, an inherited RTT is `network.rtt`."""
    head, _, rest = path.partition(".")
    name, _, index = head.partition("[")
    i = int(index.rstrip("]")) if index else None
    key, _, tail = rest.partition(".")
    key_base, bracket, key_index = key.partition("[")
    if name == "flows" and i is not None:
        entry = {s: f["entry"] for f in resolved["meta"]["logical_flows"] for s in f["streams"]}
        if i not in entry:
            return "background"
        k = entry[i]
        if key_base == "rtt_ns" and sc.flows[k].rtt is None:
            return "network.rtt"
        field = f"flows[{k}]"
        key_base = _FLOW_KEYS.get(key_base, key_base)
    elif name == "udp" and i is not None:
        if key_base == "rtt_ns" and sc.udp[i].rtt is None:
            return "network.rtt"
        field, key_base = f"udp[{i}]", _UDP_KEYS.get(key_base, key_base)
    elif name == "network" and key_base == "hops" and key_index:
        j = int(key_index.rstrip("]"))
        hop, _, tail = tail.partition(".")
        where, names = (f"network.hops[{j}]", _HOP_KEYS) if sc.network.hops else (
            "network", _DUMBBELL_KEYS)
        return ".".join(p for p in (where, names.get(hop, hop), tail) if p)
    elif name == "network":
        field, key_base = "network", {"access_rate_bps": "access_rate"}.get(key_base, key_base)
    else:
        return _RUN_KEYS.get(path, path)
    key = key_base + (bracket + key_index if bracket else "")
    return ".".join(p for p in (field, key, tail) if p)


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
    return f"{bdp / 1e6:.2f} MB ({math.ceil(bdp / MTU_BYTES)} packets of {MTU_BYTES} B)"
