import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcpeval.units import UnitError, parse_buffer, parse_rate, parse_size, parse_time


@pytest.mark.parametrize("text,bps", [
    ("100Mbps", 1e8), ("622Mbps", 622e6), ("10Gbps", 1e10), ("1.5Gbit/s", 1.5e9),
    ("500kbps", 5e5), (1000, 1000.0), ("9.5 Gbps", 9.5e9),
])
def test_rates(text, bps):
    assert parse_rate(text) == pytest.approx(bps)


@pytest.mark.parametrize("bad", ["100Mbs", "fast", "-5Mbps", "0Mbps", "", True])
def test_bad_rates_say_what_is_allowed(bad):
    with pytest.raises(UnitError, match="Mbps"):
        parse_rate(bad)


@pytest.mark.parametrize("text,s", [("100ms", 0.1), ("1s", 1.0), ("250us", 250e-6),
                                    ("2min", 120.0), (5, 5.0), (0.5, 0.5), ("10ns", 1e-8)])
def test_times(text, s):
    assert parse_time(text) == pytest.approx(s)


def test_negative_time_rejected():
    with pytest.raises(UnitError, match="non-negative"):
        parse_time("-1s")


@pytest.mark.parametrize("text,b", [("2MB", 2_000_000), ("64KB", 64_000), ("1500B", 1500),
                                    ("8MiB", 8 * 2**20), ("1GB", 10**9)])
def test_sizes(text, b):
    assert parse_size(text) == b


def test_buffers():
    bdp = 100e6 * 0.1 / 8  # 1.25 MB
    assert parse_buffer("1bdp", bdp) == {"pkts": 834}
    assert parse_buffer("20%bdp", bdp) == {"pkts": 167}
    assert parse_buffer("0.5bdp", bdp) == {"pkts": 417}
    assert parse_buffer("500pkt", bdp) == {"pkts": 500}
    assert parse_buffer("2MB", bdp) == {"bytes": 2_000_000}
    with pytest.raises(UnitError, match="bdp"):
        parse_buffer("lots", bdp)
    with pytest.raises(UnitError):
        parse_buffer("0bdp", bdp)


@given(st.floats(1e3, 1e12, allow_nan=False))
def test_rate_round_trip(bps):
    assert parse_rate(f"{bps / 1e6!r}Mbps") == pytest.approx(bps, rel=1e-9)


@given(st.floats(1e-6, 1e4, allow_nan=False))
def test_time_round_trip(s):
    assert parse_time(f"{s * 1e3!r}ms") == pytest.approx(s, rel=1e-9)


@given(st.floats(0.01, 10), st.floats(1e4, 1.5e8))
def test_bdp_buffers_round_up_to_whole_packets(fraction, bdp):
    n = parse_buffer(f"{fraction!r}bdp", bdp)["pkts"]
    assert n >= 1
    assert n == max(1, math.ceil(fraction * bdp / 1500))


@pytest.mark.parametrize("parse,text,needle", [
    (parse_rate, "100", "has no unit"),
    (parse_time, "50", "has no unit"),
    (parse_size, "1500", "has no unit"),
    (parse_rate, True, "expected a rate, got True"),
    (parse_time, False, "expected a time, got False"),
    (parse_size, [1], "expected a size"),
    (parse_rate, 1e15, "out of range; allowed: 1kbps to 1000Gbps"),
    (parse_rate, "1001Gbps", "out of range"),
    (parse_rate, "999bps", "out of range"),
    (parse_time, "1e300s", "too long; at most 1e+06 s"),
    (parse_time, 1e300, "too long"),
    (parse_time, "nan s", "bad time"),
    (parse_size, "1e400KB", "too large; at most 1000000GB"),
    (parse_size, 0.5, "must be at least 1 byte"),  # rounded to 0 bytes
    (parse_size, "2PB", "unknown unit 'PB'"),
    (parse_size, 1e16, "too large; at most 1000000GB"),
])
def test_units_need_a_unit_and_stay_in_bounds(parse, text, needle):
    with pytest.raises(UnitError, match=re.escape(needle)):
        parse(text)


def test_the_bounds_themselves_are_accepted():
    assert parse_rate("1000Gbps") == 1e12 and parse_rate("1kbps") == 1e3
    assert parse_time("1e6s") == 1e6 and parse_time("1ns", allow_zero=False) == 1e-9
    assert parse_size("1000000GB") == 10**15
    assert parse_buffer("1000000pkt", 1e6) == {"pkts": 1_000_000}
    assert parse_buffer("1500MB", 1e6) == {"bytes": 1_500_000_000}


@pytest.mark.parametrize("text,needle", [
    ("1e400bdp", "too large; at most 1000000 packets"),  # was an OverflowError
    ("1e20pkt", "too large; at most 1000000 packets"),  # was an engine u64 error
    ("1000001pkt", "too large"),
    ("1.6GB", "too large"),
    ("2bdp", "too large (2e+06 packets of 1500 B); at most 1000000"),
    (True, "bad buffer True"),
    ("500", "bad buffer '500'"),
])
def test_buffers_are_bounded(text, needle):
    with pytest.raises(UnitError, match=re.escape(needle)):
        parse_buffer(text, 1.5e9)


def test_positive_times_below_a_nanosecond_are_refused():
    """They would round to 0 ns in the engine."""
    with pytest.raises(UnitError, match="rounds to 0"):
        parse_time("0.4ns", allow_zero=False)
