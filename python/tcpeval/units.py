"""Parsing of the units used in scenario files: rates, times, sizes, buffers.

Every parser raises `UnitError` (a ValueError) whose message says what was
wrong and what is allowed; the scenario layer prefixes the field name.
"""

from __future__ import annotations

import math
import re

_NUMBER = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"


class UnitError(ValueError):
    """A value with a missing or unknown unit, or out of range."""


_RATE_UNITS = {
    "bps": 1.0, "bit/s": 1.0,
    "kbps": 1e3, "kbit/s": 1e3,
    "mbps": 1e6, "mbit/s": 1e6,
    "gbps": 1e9, "gbit/s": 1e9,
}
_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
_SIZE_UNITS = {
    "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9,
    "kib": 2**10, "mib": 2**20, "gib": 2**30,
}


def _split(text: str | int | float, what: str, allowed: str) -> tuple[float, str]:
    if isinstance(text, bool):
        raise UnitError(f"expected a {what}, got {text!r}; {allowed}")
    if isinstance(text, int | float):
        return float(text), ""
    m = re.fullmatch(rf"\s*{_NUMBER}\s*([A-Za-z/%]*)\s*", str(text))
    if not m:
        raise UnitError(f"bad {what} {text!r}; {allowed}")
    return float(m.group(1)), m.group(2).lower()


def parse_rate(text: str | int | float) -> float:
    """A rate in bits per second: "100Mbps", "1.5Gbit/s", "500kbps" or a number."""
    allowed = "use a positive number with bps, kbps, Mbps or Gbps (e.g. '100Mbps')"
    value, unit = _split(text, "rate", allowed)
    if unit and unit not in _RATE_UNITS:
        raise UnitError(f"bad rate {text!r}; {allowed}")
    bps = value * _RATE_UNITS.get(unit, 1.0)
    if not math.isfinite(bps) or bps <= 0:
        raise UnitError(f"rate {text!r} must be positive; {allowed}")
    return bps


def parse_time(text: str | int | float, *, allow_zero: bool = True) -> float:
    """A duration in seconds: "100ms", "1s", "250us", "2min"; a plain number is
    seconds."""
    allowed = "use a number with ns, us, ms, s or min (e.g. '100ms')"
    value, unit = _split(text, "time", allowed)
    if unit and unit not in _TIME_UNITS:
        raise UnitError(f"bad time {text!r}; {allowed}")
    seconds = value * _TIME_UNITS.get(unit, 1.0)
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        raise UnitError(f"time {text!r} must be {'non-negative' if allow_zero else 'positive'}")
    return seconds


def parse_size(text: str | int | float) -> int:
    """A size in bytes: "2MB" (decimal), "8MiB" (binary), "64KB", "1500B"."""
    allowed = "use a number with B, KB, MB, GB (decimal) or KiB, MiB, GiB (e.g. '2MB')"
    value, unit = _split(text, "size", allowed)
    if unit and unit not in _SIZE_UNITS:
        raise UnitError(f"bad size {text!r}; {allowed}")
    size = value * _SIZE_UNITS.get(unit, 1)
    if not math.isfinite(size) or size <= 0:
        raise UnitError(f"size {text!r} must be positive")
    return int(round(size))


def parse_buffer(text: str | int | float, bdp_bytes: float, packet_bytes: int = 1500) -> dict:
    """A buffer: "1bdp", "0.5bdp", "20%bdp" (packets of `packet_bytes`, rounded
    up), "500pkt", or a byte size ("2MB"). Returns {"pkts": n} or {"bytes": n}."""
    allowed = "use e.g. '1bdp', '20%bdp', '500pkt' or a byte size like '2MB'"
    s = str(text).strip().lower()
    m = re.fullmatch(rf"{_NUMBER}\s*(%?)\s*bdp", s)
    if m:
        fraction = float(m.group(1)) / (100.0 if m.group(2) else 1.0)
        if fraction <= 0:
            raise UnitError(f"buffer {text!r} must be positive; {allowed}")
        return {"pkts": max(1, math.ceil(fraction * bdp_bytes / packet_bytes))}
    m = re.fullmatch(rf"{_NUMBER}\s*(pkt|pkts|packets?)", s)
    if m:
        n = float(m.group(1))
        if n < 1 or n != int(n):
            raise UnitError(f"buffer {text!r} must be a whole number of packets >= 1")
        return {"pkts": int(n)}
    try:
        return {"bytes": parse_size(text)}
    except UnitError:
        raise UnitError(f"bad buffer {text!r}; {allowed}") from None
