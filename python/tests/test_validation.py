"""Reduced validation (issue 3 item 3): one loss rate per algorithm, mean cwnd
within +-20% of its analytic response function. `make validate` runs the full grid."""

import math

import pytest

from tcpeval import validation as v
from tcpeval.cc_names import available_algorithms

ALGOS = [a for a in v.RESPONSE if a in available_algorithms()]


@pytest.mark.parametrize("case", v.cases(ALGOS, reduced=True), ids=lambda c: f"{c.label}-{c.p:g}")
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


def test_loss_cycle_gives_mathis_and_the_random_loss_bias():
    """Reno's rules in the loss cycle BIC's prediction runs on: periodic loss
    gives Mathis's sqrt(3/(2p)); random loss a few percent more (Ott, Kemperman
    & Mathis 1996: about 7%)."""
    for p in (1e-3, 1e-4):
        def reno(periodic: bool, p=p) -> float:
            return v.loss_cycle_window(p, 1.0, lambda w: 1.0, lambda w: w / 2, periodic)

        assert reno(True) == pytest.approx(math.sqrt(1.5 / p), rel=0.01)
        assert 1.03 <= reno(False) / math.sqrt(1.5 / p) <= 1.10
    assert v.bic_window(3e-4, 0.1) == v.bic_window(3e-4, 0.1), "seeded"


def test_htcp_alpha_follows_linux():
    # beta 0.5, no RTT scaling: alpha = f(Delta); Delta = 2 s: Linux's integer
    # 1 + floor(10 + 0.25) = 11 (the paper's real-valued 11.25)
    assert v.htcp_alpha(2.0, 0.5, 0.1, rtt_scaling=False) == 11
    assert v.htcp_alpha(0.5, 0.5, 0.1, rtt_scaling=False) == 1
    assert v.htcp_alpha(5.0, 0.5, 0.1, rtt_scaling=False) == 45   # 1 + 40 + 4
    # RTT scaling floor(8 f / scale), scale = floor(800 / minRTT ms) in [4, 80]
    assert v.htcp_alpha(2.0, 0.5, 0.05) == 5     # scale 16: 88 // 16
    assert v.htcp_alpha(2.0, 0.5, 1.0) == 22     # scale clamped to 4


def test_htcp_window_bandwidth_switch_lowers_the_mean():
    """Under random loss the cycle's maxB often moves by more than 20%, and
    each such event cuts to 0.5 of the window (then one more): without the
    switch the mean window is 12-16% higher."""
    with_switch = v.htcp_window(1e-4, 0.1)
    without = v.htcp_window(1e-4, 0.1, bandwidth_switch=False)
    assert 1.10 <= without / with_switch <= 1.20
    assert with_switch == v.htcp_window(1e-4, 0.1), "seeded"


def test_highspeed_response_at_rfc_points():
    # RFC 3649 section 5: W = 38 at p = 1e-3 and 83000 at p = 1e-7 (to 2 digits)
    assert v.highspeed_window(1e-3, 0.1) == pytest.approx(38, rel=0.02)
    assert v.highspeed_window(1e-7, 0.1) == pytest.approx(83000, rel=0.02)


def test_per_ack_reno_follows_mathis_with_b_2_not_1():
    """Issue 28: on linux-2.6.22 (growth per ACK) with delayed ACKs Reno's mean
    window is sqrt(3/(4p)), about 1/sqrt(2) of Mathis's b = 1: a stack that
    counted packets would sit near b = 1's sqrt(3/(2p)) and fail this."""
    case = next(c for c in v.cases(["reno"], reduced=True) if c.stack == "linux-2.6.22")
    row = v.measure(case)
    assert case.predicted == pytest.approx(math.sqrt(0.75 / case.p))
    assert 0.8 <= row["ratio"] <= 1.2, row
    assert row["mean_cwnd"] / v.reno_window(case.p, case.rtt_s) < 0.85, row


def test_halved_increase_is_the_response_at_twice_the_loss_rate():
    """W_b(p) = W_1(2p): Reno's b = 2 is Mathis's sqrt(3/(4p)); HighSpeed's is RFC
    3649's 0.12/(2p)^0.835; Scalable with 51 ACKs of 2 packets per step has
    a = 1/102: 0.0098/(p ln(8/7))."""
    reno, _ = v.STACK_RESPONSE[("reno", "linux-2.4")]
    assert reno(1e-4, 0.1) == pytest.approx(math.sqrt(7500))
    hs, _ = v.STACK_RESPONSE[("highspeed", "ns2")]
    assert hs(1e-4, 0.1) == pytest.approx(0.12 / 2e-4**0.835)
    sc, _ = v.STACK_RESPONSE[("scalable", "linux-2.6.22")]
    assert sc(1e-4, 0.1) == pytest.approx(1 / 102 / (1e-4 * math.log(8 / 7)))
    kelly, _ = v.STACK_RESPONSE[("scalable", "linux-2.4")]
    assert kelly(1e-4, 0.1) == pytest.approx(sc(1e-4, 0.1) * 51 / 101)


def test_cubic_2_1_response_uses_beta_0_8():
    """RFC 9438's cubic region with beta 0.8: (0.4 * 3.8 / 0.8)^0.25 = 1.9^0.25 =
    1.174 (RTT/p)^0.75, against 1.054 with 0.7; the Reno-friendly region counts
    delayed ACKs (b = 2) on both."""
    old, _ = v.STACK_RESPONSE[("cubic", "linux-2.6.22")]
    new, _ = v.STACK_RESPONSE[("cubic", "linux-3.16")]
    assert old(1e-5, 0.1) == pytest.approx(1.9**0.25 * 1e4**0.75, rel=1e-3)  # 819/1024 ~ 0.8
    assert new(1e-5, 0.1) == pytest.approx(v.cubic_window(1e-5, 0.1))
    assert old(1e-4, 0.005) == pytest.approx(math.sqrt(7500))


def test_each_stack_row_is_an_algorithm_the_stack_offers():
    from tcpeval import _sim

    for cc, stack in v.STACK_RESPONSE:
        _sim.stack_offers(stack, cc)


def test_a_rewrite_keeps_the_hand_written_sections(tmp_path):
    """make validate rewrites docs/validation.md; the sections measured by other
    tests (AQM, ECN, BBRv3) follow KEEP_MARK and survive it, once."""
    out = tmp_path / "validation.md"
    row = {"cc": "reno", "rtt_ms": 100.0, "p": 1e-4, "region": "-", "predicted": 122.5,
           "mean_cwnd": 128.0, "ratio": 1.045, "drops": 500, "timeouts": 0}
    out.write_text("# old page\n\nstale table\n\n" + v.KEEP_MARK + "\n\n## AQM\n\nCoDel 3.8 ms\n")
    v.write_report([row], out)
    v.write_report([row], out)
    text = out.read_text()
    assert "stale table" not in text and "| reno | 100 |" in text
    assert text.count(v.KEEP_MARK) == 1 and text.count("## AQM\n\nCoDel 3.8 ms") == 1
    assert text.index("## reno") < text.index(v.KEEP_MARK)
