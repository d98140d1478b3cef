"""The unit types of scenario fields: pydantic Annotated types whose validators
parse what was written ("100Mbps", "20%bdp") once, into numbers in base units."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

from ..units import Buffer, UnitError, parse_buffer_spec, parse_rate, parse_size, parse_time
from .limits import MAX_SHARE_PERCENT, MAX_WINDOW_BYTES


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


def nanoseconds(seconds: float) -> int:
    """The engine counts time in integer nanoseconds."""
    return int(round(seconds * 1e9))


@dataclasses.dataclass(frozen=True)
class EngineUnit:
    """How a field of this unit reaches the engine: the engine's field carries the
    unit as a suffix (`rtt` -> `rtt_ns`) and its value is converted."""

    suffix: str
    convert: Callable[[float], int] | None = None

    def to_engine(self, value):
        return value if value is None or self.convert is None else self.convert(value)


# The unit types of scenario fields: numbers in base units (bit/s, seconds,
# bytes), parsed once from what was written; dumped back as numbers (a buffer
# or a share as written).
Rate = Annotated[float, BeforeValidator(_parsed(parse_rate))]


Time = Annotated[float, BeforeValidator(_parsed(parse_time)), EngineUnit("_ns", nanoseconds)]


PositiveTime = Annotated[float, BeforeValidator(_parsed(_positive_time))]


Size = Annotated[int, BeforeValidator(_parsed(parse_size))]


Window = Annotated[int, BeforeValidator(_parsed(_window_size)), EngineUnit("_bytes")]


BufferSize = Annotated[Buffer, BeforeValidator(_parsed(parse_buffer_spec)),
                       PlainSerializer(lambda b: b.text)]


RateOrShare = Annotated[float | Share, BeforeValidator(_parsed(_rate_or_share)),
                        PlainSerializer(lambda v: v.text if isinstance(v, Share) else v)]
