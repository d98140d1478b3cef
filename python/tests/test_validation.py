"""Reduced validation (issue 3 item 3): one loss rate per algorithm, mean cwnd
within +-20% of its analytic response function. `make validate` runs the full grid."""

import math

import pytest

from tcpeval import validation as v
from tcpeval.cc_names import available_algorithms

ALGOS = [a for a in v.RESPONSE if a in available_algorithms()]


@pytest.mark.parametrize("case", v.cases(ALGOS, reduced=True), ids=lambda c: f"{c.cc}-{c.p:g}")
def test_mean_window_matches_response_function(case):
    row = v.measure(case)
    assert row["overflow_drops"] == 0, "the path must not limit the window"
    assert 0.8 <= row["ratio"] <= 1.2, row


def test_scalable_response_derivation():
    # a/(p ln(1/(1-b))) with a = 0.01, b = 1/8: 0.01 / (1e-4 * 0.133531) = 748.9
    assert v.scalable_window(1e-4, 0.1) == pytest.approx(748.89, rel=1e-4)


def test_cubic_regions():
    # Cubic region at 100 ms, p = 1e-5: 1.0538 * (0.1/1e-5)^0.75 = 1053.8
    assert v.cubic_window(1e-5, 0.1) == pytest.approx(1053.8, rel=1e-3)
    # Reno-friendly region at 5 ms, p = 1e-4: sqrt(1.5e4) = 122.5
    assert v.cubic_window(1e-4, 0.005) == pytest.approx(math.sqrt(1.5e4))


def test_htcp_alpha_follows_linux():
    # beta 0.5, no RTT scaling: alpha = f(Delta); Delta = 2 s: 1 + 10 + 0.25
    assert v.htcp_alpha(2.0, 0.5, 0.1, rtt_scaling=False) == pytest.approx(11.25)
    assert v.htcp_alpha(0.5, 0.5, 0.1, rtt_scaling=False) == pytest.approx(1.0)
    # RTT scaling by minRTT/100 ms, clamped to [0.1, 2]
    assert v.htcp_alpha(2.0, 0.5, 0.05) == pytest.approx(11.25 * 0.5)
    assert v.htcp_alpha(2.0, 0.5, 1.0) == pytest.approx(11.25 * 2)


def test_highspeed_response_at_rfc_points():
    # RFC 3649 section 5: W = 38 at p = 1e-3 and 83000 at p = 1e-7 (to 2 digits)
    assert v.highspeed_window(1e-3, 0.1) == pytest.approx(38, rel=0.02)
    assert v.highspeed_window(1e-7, 0.1) == pytest.approx(83000, rel=0.02)
