"""Parsing of the units used in scenario files: rates, times, sizes, buffers.

Every parser raises `UnitError` (a ValueError) whose message says what was
wrong and what is allowed; the scenario layer prefixes the field name.

Rules: a string needs a unit ("100ms", not "100"); a TOML number is taken in
the base unit (bit/s, seconds, bytes); booleans are not numbers. Every value is
bounded to what the engine can represent and a machine can hold (the limits
below, one constant each; the message of a value out of range gives the limit).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .constants import MTU_BYTES

_NUMBER = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"

# Rates. The fastest links in use run at 800 Gbit/s; at 1 Tbit/s a 1500-byte
# packet already serialises in 12 ns, near the engine's 1 ns clock, so faster
# links cannot be timed. Below 1 kbit/s a packet takes over 12 s, and the
# engine's integer nanosecond times of such links overflow long before 0 bit/s.
MIN_RATE_BPS = 1e3
MAX_RATE_BPS = 1e12
# Times resolve to whole nanoseconds in a u64 (1.8e19 ns); 1e6 s (11.6 days)
# keeps every sum of times (start + duration + delays) far inside it.
MAX_TIME_S = 1e6
MIN_NONZERO_TIME_S = 1e-9
# Sizes (transfers, windows, size caps): 1 PB is far beyond any simulated run
# and exact in the engine's u64 and in a float.
MAX_SIZE_BYTES = 10**15
# Buffers: every queued packet is held in memory (about 112 bytes each in the
# engine, plus its events); 10^6 packets (1.5 GB of 1500-byte packets, a BDP of
# 1 Gbit/s x 12 s) keeps a full buffer within a few hundred MB.
MAX_BUFFER_PKTS = 1_000_000
MAX_BUFFER_BYTES = MAX_BUFFER_PKTS * MTU_BYTES


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


def _split(text, what: str, allowed: str, units: dict) -> tuple[float, float]:
    """(number, unit factor) of a value; a string must carry one of `units`."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise UnitError(f"expected a {what}, got {_show(text)}; {allowed}")
    if isinstance(text, int | float):
        if math.isnan(text):
            raise UnitError(f"expected a {what}, got nan; {allowed}")
        return float(text), 1.0
    m = re.fullmatch(rf"\s*{_NUMBER}\s*([A-Za-z/%]*)\s*", text)
    if not m:
        raise UnitError(f"bad {what} {_show(text)}; {allowed}")
    unit = m.group(2).lower()
    if not unit:
        raise UnitError(f"{what} {_show(text)} has no unit; {allowed}")
    if unit not in units:
        raise UnitError(f"bad {what} {_show(text)}: unknown unit {m.group(2)!r}; {allowed}")
    return float(m.group(1)), units[unit]


def _show(value) -> str:
    """A value for a message, cut short (a message stays one line)."""
    text = f"{value:g}" if isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_rate(text: str | int | float) -> float:
    """A rate in bits per second: "100Mbps", "1.5Gbit/s", "500kbps" or a number."""
    allowed = "use a number with bps, kbps, Mbps or Gbps (e.g. '100Mbps')"
    value, factor = _split(text, "rate", allowed, _RATE_UNITS)
    bps = value * factor
    if bps <= 0:
        raise UnitError(f"rate {_show(text)} must be positive; {allowed}")
    if not MIN_RATE_BPS <= bps <= MAX_RATE_BPS:
        raise UnitError(f"rate {_show(text)} is out of range; allowed: 1kbps to 1000Gbps")
    return bps


def parse_time(text: str | int | float, *, allow_zero: bool = True) -> float:
    """A duration in seconds: "100ms", "1s", "250us", "2min"; a plain number is
    seconds."""
    allowed = "use a number with ns, us, ms, s or min (e.g. '100ms')"
    value, factor = _split(text, "time", allowed, _TIME_UNITS)
    seconds = value * factor
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise UnitError(f"time {_show(text)} must be "
                        f"{'non-negative' if allow_zero else 'positive'}; {allowed}")
    if seconds > MAX_TIME_S:  # also inf: "1e400s"
        raise UnitError(f"time {_show(text)} is too long; at most {MAX_TIME_S:g} s")
    if not allow_zero and seconds < MIN_NONZERO_TIME_S:
        raise UnitError(f"time {_show(text)} rounds to 0 at the engine's 1 ns resolution; "
                        "it must be positive")
    return seconds


def parse_size(text: str | int | float) -> int:
    """A size in bytes: "2MB" (decimal), "8MiB" (binary), "64KB", "1500B"."""
    allowed = "use a number with B, KB, MB, GB (decimal) or KiB, MiB, GiB (e.g. '2MB')"
    value, factor = _split(text, "size", allowed, _SIZE_UNITS)
    size = value * factor
    if size > MAX_SIZE_BYTES:  # also inf: "1e400KB"
        raise UnitError(f"size {_show(text)} is too large; at most 1000000GB (1 PB)")
    if size < 0.5 or round(size) < 1:  # -inf cannot be rounded
        raise UnitError(f"size {_show(text)} must be at least 1 byte; {allowed}")
    return int(round(size))


@dataclass(frozen=True)
class Buffer:
    """A queue limit as written: `amount` packets ("pkts"), bytes ("bytes") or
    times the path's BDP ("bdp"); `text` is how it was written (for messages)."""

    amount: float
    unit: str
    text: str

    def limit(self, bdp_bytes: float, packet_bytes: int = MTU_BYTES) -> dict:
        """The engine's limit: {"pkts": n} or {"bytes": n}. A BDP share becomes
        packets of `packet_bytes` (those of the flows crossing the queue),
        rounded up: like Linux's pfifo, the queue counts packets."""
        if self.unit != "bdp":
            return {self.unit: int(self.amount)}
        pkts = self.amount * bdp_bytes / packet_bytes
        if not pkts <= MAX_BUFFER_PKTS:
            raise UnitError(f"buffer {_show(self.text)} is too large ({pkts:.3g} packets of "
                            f"{packet_bytes} B); {_BUFFER_LIMIT}")
        return {"pkts": max(1, math.ceil(pkts))}


_BUFFER_ALLOWED = "use e.g. '1bdp', '20%bdp', '500pkt' or a byte size like '2MB'"
_BUFFER_LIMIT = f"at most {MAX_BUFFER_PKTS} packets or {MAX_BUFFER_BYTES // 10**6}MB"


def parse_buffer_spec(text: str | int | float | Buffer) -> Buffer:
    """A buffer: "1bdp", "0.5bdp", "20%bdp", "500pkt", or a byte size ("2MB"),
    checked as far as it can be without the path (`Buffer.limit` does the rest)."""
    if isinstance(text, Buffer):
        return text
    s = str(text).strip().lower() if isinstance(text, str) else ""
    m = re.fullmatch(rf"{_NUMBER}\s*(%?)\s*bdp", s)
    if m:
        fraction = float(m.group(1)) / (100.0 if m.group(2) else 1.0)
        if fraction <= 0:
            raise UnitError(f"buffer {_show(text)} must be positive; {_BUFFER_ALLOWED}")
        if not math.isfinite(fraction):  # "1e400bdp"
            raise UnitError(f"buffer {_show(text)} is too large; {_BUFFER_LIMIT}")
        return Buffer(fraction, "bdp", text)
    m = re.fullmatch(rf"{_NUMBER}\s*(pkt|pkts|packets?)", s)
    if m:
        n = float(m.group(1))
        if n > MAX_BUFFER_PKTS:  # also inf: "1e400pkt"
            raise UnitError(f"buffer {_show(text)} is too large; {_BUFFER_LIMIT}")
        if n < 1 or n != int(n):
            raise UnitError(f"buffer {_show(text)} must be a whole number of packets >= 1")
        return Buffer(int(n), "pkts", text)
    try:
        size = parse_size(text)
    except UnitError:
        raise UnitError(f"bad buffer {_show(text)}; {_BUFFER_ALLOWED}") from None
    if size > MAX_BUFFER_BYTES:
        raise UnitError(f"buffer {_show(text)} is too large; {_BUFFER_LIMIT}")
    return Buffer(size, "bytes", str(text))


def parse_buffer(text: str | int | float, bdp_bytes: float,
                 packet_bytes: int = MTU_BYTES) -> dict:
    """A buffer's engine limit on a path of `bdp_bytes` (see `Buffer.limit`)."""
    return parse_buffer_spec(text).limit(bdp_bytes, packet_bytes)
