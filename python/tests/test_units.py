import math

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
