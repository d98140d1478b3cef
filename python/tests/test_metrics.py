"""Metrics with hand-computed values and property tests (issue 6)."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcpeval import metrics as m


def test_jain_worked_example_from_the_literature():
    # Flow 2 fixed at 100, flow 1 from 1 to 10000 (Jain et al. 1984 figure):
    # (1 + 100)^2 / (2 (1 + 10000)) = 10201 / 20002 = 0.51 at both ends.
    assert m.jain_index([1, 100]) == pytest.approx(0.51, abs=0.001)
    assert m.jain_index([10000, 100]) == pytest.approx(0.51, abs=0.001)
    assert m.jain_index([100, 100]) == 1.0
    assert math.isnan(m.jain_index([])) and math.isnan(m.jain_index([0, 0]))


@given(st.lists(st.floats(0.001, 1e6), min_size=1, max_size=20), st.floats(0.01, 100))
def test_jain_bounds_and_scale_invariance(x, k):
    j = m.jain_index(x)
    assert 1 / len(x) - 1e-9 <= j <= 1 + 1e-9
    assert m.jain_index([v * k for v in x]) == pytest.approx(j, rel=1e-9)


def test_asymmetry_sign_convention():
    assert m.asymmetry(75, 25) == 0.5  # flow 1 takes more: positive
    assert m.asymmetry(25, 75) == -0.5
    assert m.asymmetry(40, 40) == 0.0


def test_nru_zero_at_the_calibrated_share_and_three_db_at_twice():
    assert m.flow_nru([50, 50, 50], 50) == pytest.approx(0.0)
    assert m.flow_nru([100, 100], 50) == pytest.approx(3.0103, abs=1e-4)
    assert m.flow_nru([25], 50) == pytest.approx(-3.0103, abs=1e-4)
    assert m.nru_series([0], 50)[0] == m.NRU_FLOOR_DB


@given(st.lists(st.floats(1, 1e4), min_size=1, max_size=10))
def test_nru_of_a_fair_system_is_zero(shares):
    # Every flow at exactly its calibrated share: all flow-NRUs and the system-NRU are 0.
    flows = [m.flow_nru([s] * 5, s) for s in shares]
    assert m.system_nru(flows) == pytest.approx(0.0, abs=1e-9)


def test_convergence_time_on_a_step():
    # A flow started at t = 10 s sends 0 for its first 3 intervals, then 100.
    # The long-term mean over 47 intervals (t = 11..57) is 100 * 44/47 = 93.6;
    # the EWMA after k intervals of 100 is 100 (1 - 0.9^k); it first reaches
    # 0.8 * 93.6 = 74.9 at k = 14 (77.1; k = 13 gives 74.6), i.e. t = 13 + 14 = 27:
    # 17 s after the start.
    t = np.arange(11, 58, dtype=float)
    x = np.where(t <= 13, 0.0, 100.0)
    assert m.convergence_time(t, x, 10.0) == pytest.approx(17.0)
    assert m.convergence_time(t, x, 10.0, reference=100.0) == pytest.approx(3 + 16)  # 0.9^16 < 0.2
    assert math.isnan(m.convergence_time(t, np.zeros_like(t), 10.0, reference=1.0))


def test_spread_of_a_constant_flow_is_its_ewma_lag_only():
    x = np.full(200, 10.0)
    # After 100 steps the EWMA is within 10 * 0.9^100 of 10.
    assert m.spread(x, 100) < 1e-3
    # Alternating 0, 20: the EWMA settles on a cycle b = 0.9 a + 2, a = 0.9 b,
    # i.e. b = 2 / 0.19 = 10.526 and a = 9.474, each 0.526 from the mean 10.
    assert m.spread([0, 20] * 100, 50) == pytest.approx(2 / 0.19 - 10, abs=1e-3)


def test_stability_index_and_aggregate_cov():
    assert m.stability_index([10, 10, 10]) == 0
    assert m.stability_index([5, 15]) == pytest.approx(0.5)
    flows = pd.DataFrame({"t_s": [1, 1, 2, 2], "flow": [0, 1, 0, 1],
                          "throughput_mbps": [5.0, 5.0, 15.0, 5.0]})
    assert m.aggregate_cov(flows) == pytest.approx(5 / 15)  # totals 10 and 20


def test_rtt_fairness_and_friendliness():
    r = m.rtt_fairness(80, 20)
    assert r["ratio"] == 4 and r["jain"] == pytest.approx(100**2 / (2 * (6400 + 400)))
    assert m.tcp_friendliness(30, 50) == pytest.approx(0.6)


def test_queueing_delay_and_loss_rate():
    q = pd.DataFrame({"t_s": [0, 1, 2, 3], "link": ["bottleneck"] * 4,
                      "queue_bytes": [0, 12500, 25000, 12500]})
    d = m.queueing_delay(q, 100e6)  # 12500 B at 100 Mbit/s = 1 ms
    assert d["mean_ms"] == pytest.approx(1.0) and d["p50_ms"] == pytest.approx(1.0)
    links = pd.DataFrame({"t_s": [1, 2], "link": ["bottleneck"] * 2, "arrivals": [100, 300],
                          "drops": [1, 3]})
    assert m.loss_rate(links) == pytest.approx(0.01)


def test_fct_by_size_buckets():
    # The last transfer is unfinished: its 5,000 delivered bytes do not make it a
    # small finished one.
    c = pd.DataFrame({"size_bytes": [5000, 50_000, 60_000, 2_000_000],
                      "delivered_bytes": [5000, 50_000, 60_000, 5000],
                      "completed": [True, True, True, False],
                      "fct_s": [0.1, 0.3, 0.5, None]})
    t = m.fct_by_size(c)
    assert t["count"].tolist()[:4] == [1, 2, 0, 0]
    assert t["mean"].iloc[1] == pytest.approx(0.4)


@pytest.mark.parametrize("p,dof,want", [
    (0.975, 1, 12.706), (0.975, 2, 4.303), (0.975, 4, 2.776), (0.975, 9, 2.262),
    (0.975, 29, 2.045), (0.95, 5, 2.015), (0.995, 10, 3.169),
])
def test_t_quantiles_against_tables(p, dof, want):
    assert m.t_quantile(p, dof) == pytest.approx(want, abs=2e-3)


def test_confidence_interval_over_repetitions():
    a = m.aggregate([10, 12, 14, 16, 18])
    # mean 14, sample std sqrt(10) = 3.162, half-width 2.776 * 3.162 / sqrt(5) = 3.93
    assert (a["n"], a["mean"]) == (5, 14)
    assert a["ci"] == pytest.approx(2.776 * math.sqrt(10) / math.sqrt(5), abs=0.01)


@given(st.integers(3, 200))
def test_confidence_interval_shrinks_with_more_samples(n):
    rng = np.random.default_rng(n)
    x = rng.normal(10, 2, 4 * n)
    assert m.aggregate(x)["ci"] < m.aggregate(x[:n])["ci"] * 1.3


# ----- the functions the summary is made of ------------------------------------------

FLOWS = pd.DataFrame({"t_s": [1.0, 1.0, 2.0, 2.0, 3.0, 3.0], "flow": [0, 1, 0, 1, 0, 1],
                      "throughput_mbps": [2.0, 9.0, 4.0, 9.0, 6.0, 9.0],
                      "retransmits": [1, 0, 2, 0, 3, 5]})


def test_window_takes_intervals_ending_in_the_half_open_range():
    assert m.window(FLOWS, 1.0, 2.0)["t_s"].tolist() == [2.0, 2.0]
    assert len(m.window(FLOWS)) == 6 and m.window(FLOWS, 3.0).empty


def test_whole_intervals_start_each_flow_at_its_own_first_instant():
    # 1 s intervals: flow 1 measured from 1.5 s has no whole interval before 3 s
    # (the one ending at 2 s began at 1 s); flow 0 from 0 s keeps them all.
    first = pd.Series({0: 0.0, 1: 1.5})
    rows = m.whole_intervals(FLOWS, first, 3.0, 1.0)
    assert rows[rows["flow"] == 0]["t_s"].tolist() == [1.0, 2.0, 3.0]
    assert rows[rows["flow"] == 1]["t_s"].tolist() == [3.0]
    assert m.whole_intervals(FLOWS, first, 2.0, 1.0)["flow"].tolist() == [0, 0]


def test_per_flow_groups_in_table_order():
    got = m.per_flow(FLOWS.iloc[::-1], "throughput_mbps")
    assert list(got) == [0, 1] and got[0].tolist() == [6.0, 4.0, 2.0]
    assert m.per_flow(FLOWS.iloc[:0], "throughput_mbps") == {}


def test_mean_is_sum_over_count_and_nan_when_empty():
    assert m.mean([1, 2, 6]) == 3.0 and math.isnan(m.mean([]))


def test_interval_stats_by_hand():
    # 2, 4, 6: mean 4, population std sqrt(8/3), linear quartiles 3, 4, 5.
    s = m.interval_stats([2.0, 4.0, 6.0])
    assert (s.mean, s.q25, s.q50, s.q75) == (4.0, 3.0, 4.0, 5.0)
    assert s.std == pytest.approx(math.sqrt(8 / 3))
    assert all(math.isnan(v) for v in (m.interval_stats([]).mean, m.interval_stats([]).q50))


@given(st.lists(st.floats(0, 1e4), min_size=1, max_size=30))
def test_interval_stats_orders_its_quartiles_inside_the_range(x):
    s = m.interval_stats(x)
    assert min(x) - 1e-9 <= s.q25 <= s.q50 <= s.q75 <= max(x) + 1e-9
    assert min(x) - 1e-6 <= s.mean <= max(x) + 1e-6 and s.std >= 0


def test_throughput_stats_per_flow_over_the_window():
    t = m.throughput_stats(FLOWS, 1.0)  # intervals ending at 2 and 3 s
    assert t.loc[0, "mean"] == 5.0 and t.loc[0, "std"] == 1.0
    assert t.loc[1].tolist() == [9.0, 0.0, 9.0, 9.0, 9.0]


def test_window_counts_sum_the_window_only():
    assert m.window_counts(FLOWS, ["retransmits"], 1.0) == {0: {"retransmits": 5},
                                                          1: {"retransmits": 5}}


LINKS = pd.DataFrame({"t_s": [1.0, 2.0, 1.0], "link": ["bottleneck", "bottleneck", "hop2"],
                      "utilization": [0.5, 1.0, 0.1], "queue_pkts_mean": [10.0, 30.0, 0.0],
                      "drops": [1, 3, 7], "arrivals": [100, 300, 50]})


def test_link_window_metrics_by_hand():
    assert m.link_utilization(LINKS) == 0.75 and m.link_utilization(LINKS, 1.0) == 1.0
    assert m.mean_queue(LINKS) == 20.0 and m.drops(LINKS) == 4
    assert m.drops(LINKS, link="hop2") == 7 and m.loss_rate(LINKS, link="hop2") == 7 / 50
    assert math.isnan(m.link_utilization(LINKS, 2.0)) and math.isnan(m.mean_queue(LINKS, 2.0))
    assert m.drops(LINKS, 2.0) == 0 and m.loss_rate(LINKS, 2.0) == 0.0


def test_ratio_and_retransmission_rate():
    assert m.ratio(1, 4) == 0.25 and m.ratio(3, 0) == 0.0
    assert m.retransmission_rate(5, 200) == 0.025 and m.retransmission_rate(0, 0) == 0.0


def test_jain_series_per_interval():
    # t = 1: (2 + 9)^2 / (2 (4 + 81)) = 121 / 170; t = 3: 225 / 234.
    j = m.jain_series(FLOWS)
    assert j.loc[1.0] == pytest.approx(121 / 170) and j.loc[3.0] == pytest.approx(225 / 234)


def test_ewma_by_hand():
    assert m.ewma([10, 10], lam=0.5).tolist() == [5.0, 7.5]
