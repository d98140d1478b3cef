"""The scenario's schema: one pydantic model per table of a scenario file."""

from __future__ import annotations

import functools
import json
import typing
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import traffic
from ..cc_names import available_algorithms
from ..constants import MTU_BYTES
from ..units import MAX_BUFFER_PKTS, parse_time
from .fields import (
    BufferSize,
    EngineUnit,
    PositiveTime,
    Rate,
    RateOrShare,
    Size,
    Time,
    Window,
    _parsed,
)
from .limits import MAX_FLOWS, MAX_INITIAL_CWND


class _Model(BaseModel):
    # strict: booleans are not numbers and floats not whole numbers. Defaults are
    # written as in a scenario file ("100Mbps") and parsed like a value.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True,
                              allow_inf_nan=False, validate_default=True)


class Red(_Model):
    """RED thresholds (packets, so bounded like a buffer), EWMA weight, maximum
    drop probability; the engine checks the values (`resolve`)."""

    min_th: float | None = Field(None, le=MAX_BUFFER_PKTS)
    max_th: float | None = Field(None, le=MAX_BUFFER_PKTS)
    w_q: float | None = None
    max_p: float | None = None
    gentle: bool | None = None
    ecn: bool | None = None  # mark ECN-capable packets instead of early drops (tc red ecn)
    harddrop: bool | None = None  # with ecn, still drop past the ramp (tc red harddrop)
    # whose arrival rules: Floyd and Jacobson's, or ns-2's queue/red.cc
    variant: Literal["floyd", "ns2"] | None = None


class Codel(_Model):
    """CoDel's parameters (`queue = "codel"`); None: Linux's (docs/traffic.md).
    The engine checks the values."""

    target: Time | None = None
    interval: Time | None = None
    ecn: bool | None = None


class FqCodel(Codel):
    """FQ-CoDel's parameters (`queue = "fq_codel"`); None: Linux's."""

    flows: int | None = None
    quantum: Size | None = None
    memory_limit: Size | None = None
    drop_batch: int | None = None


class Pie(_Model):
    """PIE's parameters (`queue = "pie"`); None: Linux's."""

    target: Time | None = None
    tupdate: Time | None = None
    alpha: float | None = None
    beta: float | None = None
    max_burst: Time | None = None
    ecn: bool | None = None


class Step(_Model):
    """Step marking (`queue = "step"`): mark above `threshold`, a buffer size."""

    threshold: BufferSize | None = None


class Hop(_Model):
    rate: Rate
    delay: Time = 0.0
    buffer: BufferSize = "1bdp"
    reverse_buffer: BufferSize | None = None
    queue: str = "droptail"
    loss: float = 0.0  # in [0, 1): the engine's rule
    red: Red = Red()
    codel: Codel = Codel()
    fq_codel: FqCodel = FqCodel()
    pie: Pie = Pie()
    step: Step = Step()


class Network(_Model):
    bottleneck: Rate = "100Mbps"
    rtt: Time = "100ms"
    buffer: BufferSize = "1bdp"
    reverse_buffer: BufferSize | None = None
    queue: str = "droptail"
    loss: float = 0.0  # in [0, 1): the engine's rule
    bottleneck_delay: Time = 0.0
    access_rate: Rate | None = None
    red: Red = Red()
    codel: Codel = Codel()
    fq_codel: FqCodel = FqCodel()
    pie: Pie = Pie()
    step: Step = Step()
    hops: list[Hop] | None = None


class Flow(_Model):
    # A field reaches the engine's flow (FlowConfig) under its own name plus its
    # unit's suffix (`rtt` -> `rtt_ns`, fields.EngineUnit) unless renamed here;
    # the fields in EXPANDED are expanded by the front end (counts, streams, start
    # times, an inherited RTT, a transfer's bytes per stream, the MSS from the
    # MTU, labels), every other one passes unchanged but for its unit. So a new
    # flow parameter is FlowConfig's field, this model's field and its docs.
    ENGINE_RENAMES: ClassVar[dict[str, str]] = {"txqueuelen": "nic_queue_pkts",
                                                "label": "group", "start": "start_ns"}
    EXPANDED: ClassVar[frozenset[str]] = frozenset(
        {"count", "streams", "start", "start_jitter", "rtt", "bytes", "mss", "label", "stack",
         "initial_cwnd", "delack_timeout"})

    cc: str = "reno"
    stack: str | None = None  # the TCP stack (docs/stacks.md); None: the run's
    count: int = Field(1, ge=1, le=MAX_FLOWS)
    streams: int = Field(1, ge=1, le=1024)
    start: float | list[float] = 0.0
    start_jitter: Time = 0.0
    send_overhead: Time = 0.0
    send_jitter: Time = 0.0
    stop: Time | None = None
    rtt: Time | None = None
    max_window: Window | None = None
    bytes: Size | None = None
    sack: bool = True
    # "dupthresh", "dupthresh-tlp", "rack", "fack" or "fack-tlp" (the engine
    # checks); None: the stack's.
    loss_detection: str | None = None
    delayed_ack: bool = True
    # RFC 3168 ECN negotiated (engine tcp::ecn); DCTCP uses it whatever this says.
    ecn: bool = False
    # None: the stack's own (docs/stacks.md; today's: 40 ms and 10 segments).
    delack_timeout: Time | None = None
    # Segments the receiver ACKs at once at the start; None: the stack's
    # (Linux 16, ns-2's sinks 1: docs/stacks.md).
    quickacks: int | None = Field(None, ge=0, le=MAX_INITIAL_CWND)
    initial_cwnd: int | None = Field(None, ge=1, le=MAX_INITIAL_CWND)
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
    from .. import _sim

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


class Pcap(_Model):
    """`[run] pcap`: capture flows' packets into pcap files (docs/user-guide.md,
    Packet capture); the engine checks flow ids and point names."""
    flows: list[Annotated[int, Field(ge=0)]] | None = None  # None: the scenario's own flows
    max_packets: int = Field(100_000, ge=1)
    where: str | list[str] = "bottleneck"

    def points(self) -> list[str]:
        return [self.where] if isinstance(self.where, str) else list(self.where)


class Run(_Model):
    duration: PositiveTime = "60s"
    interval: PositiveTime = "1s"
    trace_interval: PositiveTime | None = None
    measure_from: Time = 0.0
    seed: int = Field(1, ge=0, lt=2**63)
    backend: str = "sim"
    stack: str = "linux-6.6"  # every flow's TCP stack unless the flow gives one
    pcap: Pcap | None = None

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


def engine_unit(model: type[BaseModel], name: str) -> EngineUnit | None:
    """The engine unit of a model field's type (also inside `X | None`)."""
    info = model.model_fields[name]
    found = [m for m in info.metadata if isinstance(m, EngineUnit)]
    for arg in typing.get_args(info.annotation):
        found += [m for m in getattr(arg, "__metadata__", ()) if isinstance(m, EngineUnit)]
    return found[0] if found else None


@functools.cache
def engine_names(model: type[BaseModel]) -> dict[str, str]:
    """Model field -> the engine's field: renamed, or its name with its unit's suffix."""
    renames = getattr(model, "ENGINE_RENAMES", {})
    out = {}
    for name in model.model_fields:
        unit = engine_unit(model, name)
        out[name] = renames.get(name, name + (unit.suffix if unit else ""))
    return out


def passed_to_engine(f: Flow) -> dict:
    """The engine flow's fields that come straight from the flow entry."""
    names = engine_names(Flow)
    return {names[n]: _engine_value(Flow, n, getattr(f, n))
            for n in Flow.model_fields if n not in Flow.EXPANDED}


def _engine_value(model: type[BaseModel], name: str, value):
    unit = engine_unit(model, name)
    return unit.to_engine(value) if unit else value
