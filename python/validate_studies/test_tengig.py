"""Headline results of the 10G study (seed 002) on the full profile's stored
results where TCPEVAL_FULL_STORES holds them, the quick profile otherwise
(`make validate-studies`, stores.py; the quick profile takes about ten minutes on
2 cores; its known failures are expected on it only). TENGIG_QUICK_STORE names
a store to run into (finished cells are skipped), so a recorded quick run can be
checked again without rerunning it."""

import pandas as pd
import pytest
from stores import on_quick, study_report

from tcpeval.studies import tengig as t

HIGH_SPEED = [v for v in t.VARIANTS if v != t.LEGACY]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    report = study_report("tengig", tmp_path_factory, "TENGIG_QUICK_STORE")
    names = ("responsiveness", "fairness", "compatibility", "convergence")
    return {n: pd.read_csv(report / f"{n}.csv") for n in names}


def _means(tables, rtt, drop) -> pd.Series:
    r = tables["responsiveness"]
    sel = (r.rtt_ms == rtt) & (r.drop_rate == drop)
    return r[sel].set_index("variant")["mean_gbps"]


def _pairs(tables, kind, rtt) -> pd.DataFrame:
    f = tables[kind]
    return f[f.rtt_ms == rtt].set_index("variant")


def test_without_loss_every_variant_fills_the_short_path(tables):
    # "at an RTT of 0.2 ms and without packet drops, every ... algorithm fully
    # utilizes the link"
    assert (_means(tables, 0.2, 0.0) > 9.0).all()


@pytest.mark.parametrize("drop", [
    1e-4,
    pytest.param(1e-3, marks=on_quick("tengig", "quick run on linux-3.16 (issue 30): at 0.2 ms "
                                      "and 1e-3 Scalable 4.74 Gbit/s leads, BIC 3.34"))])
def test_bic_leads_on_the_lossy_short_path(tables, drop):
    # "BIC works best in lossy networks with low latency and reaches 8.3 Gbps" (at
    # 1e-4; at 1e-3 it "performs best"). Scalable may tie with it at the link rate.
    m = _means(tables, 0.2, drop)
    assert m["bic"] >= 0.98 * m.max()
    assert m["bic"] > 1.2 * m[["reno", "cubic", "htcp"]].max()


@on_quick("tengig", "quick run: every variant is below 0.06 Gbit/s at "
                   "1e-2 and 6.2 ms, as a window of ~12 packets allows; the paper's 2.3 Gbit/s "
                   "for BIC needs a ~1200-packet window at 1% loss (docs/studies/tengig.md)")
def test_bic_leads_at_one_percent_loss_and_6ms(tables):
    # "Even at a drop rate of 1e-2 BIC still reaches an average throughput of
    # 2.3 Gbps while every other variant lies below 1 Gbps"
    assert _means(tables, 6.2, 1e-2).idxmax() == "bic"


@on_quick("tengig", "quick run on linux-3.16 (issue 30): at 0.2 ms and 1e-4 CUBIC 4.16 "
                   "Gbit/s, Reno 5.21 (on linux-6.6 within 15%: 6.90 and 7.04; why is not "
                   "measured yet)")
def test_cubic_is_reno_on_the_short_path(tables):
    # "CUBIC shows the same behavior as Reno because it operates in legacy mode"
    m = _means(tables, 0.2, 1e-4)
    assert abs(m["cubic"] - m["reno"]) < 0.15 * m["reno"]


@on_quick("tengig", "quick run: H-TCP stays Reno-like at 6.2 ms (Linux's "
                   "RTT scaling divides its increase by 10 below 10 ms, and 1e-6 drops come "
                   "about every second) and 10 s runs leave Reno its slow-start throughput")
def test_reno_trails_every_high_speed_variant_once_loss_meets_delay(tables):
    # 6.2 ms, 1e-6: Reno 1.4 Gbps, CUBIC 6.26, HS-TCP 6.52, the others higher
    m = _means(tables, 6.2, 1e-6)
    assert (m[HIGH_SPEED] > 1.5 * m["reno"]).all()


def test_throughput_falls_with_drop_rate(tables):
    r = tables["responsiveness"].sort_values("drop_rate")
    for (_, _), g in r.groupby(["variant", "rtt_ms"]):
        x = g["mean_gbps"].to_numpy()
        assert x[-1] < 0.5 * x[0]
        assert all(b <= a * 1.05 + 0.05 for a, b in zip(x, x[1:], strict=False))


def test_two_flows_of_a_variant_share_the_short_path_fairly(tables):
    # 0.2 ms: "complete fairness", at most 150 Mbit/s apart, the link fully used
    f = _pairs(tables, "fairness", 0.2)
    assert (f["jain"] > 0.99).all() and (f["total_gbps"] > 9.0).all()


# On linux-6.6 the quick run's CUBIC and Reno split evenly at 12.2 and 24.2 ms
# (an expected failure until issue 30); on the paper's linux-3.16 it holds.
@pytest.mark.parametrize("rtt", [6.2, 12.2, 24.2])
def test_the_high_speed_flow_takes_more_than_reno(tables, rtt):
    # "With higher RTT, the flow with the high-speed variant always takes more
    # bandwidth than the Reno flow"
    c = _pairs(tables, "compatibility", rtt)
    assert (c["variant_share"] > 0.5).all()


def test_fairness_against_reno_is_worse_than_against_itself(tables):
    # "The resulting fairness is worse for every permutation" (RTT above 0.2 ms)
    for rtt in (6.2, 12.2, 24.2):
        self_j = _pairs(tables, "fairness", rtt)["jain"]
        reno_j = _pairs(tables, "compatibility", rtt)["jain"]
        assert (reno_j[HIGH_SPEED] <= self_j[HIGH_SPEED] + 0.01).all(), rtt


def test_cubic_is_fairer_to_reno_than_bic_and_scalable(tables):
    # "at an RTT of 6.2 ms, BIC dominates the network link. Here, CUBIC is by far
    # the best alternative"
    j = _pairs(tables, "compatibility", 6.2)["jain"]
    assert j["cubic"] > j["bic"] and j["cubic"] > j["scalable"]


def test_convergence_on_the_short_path_is_immediate(tables):
    # "measurements with an RTT of 0.2 ms converged virtually instantly"; with
    # lambda 0.1 and 0.1 s samples a flow at its long-term rate from its first
    # sample converges at 1.6 s
    c = tables["convergence"]
    assert (c[c.rtt_ms == 0.2]["tc_mean_s"] <= 2.5).all()


@on_quick("tengig", "quick run: a Reno newcomer pushed down to a small "
                   "share has a small absolute spread; 8 s after the start is too short to "
                   "see the paper's retransmission effects")
def test_convergence_with_reno_involved_is_less_stable(tables):
    # "any high speed TCP variant leads to a very unstable convergence when
    # streams with Reno are involved": larger spread than the same-variant pairs
    c = tables["convergence"]
    c = c[c.rtt_ms > 0.2]
    with_reno = c[(c["second"] == "reno") & (c["first"] != "reno")]["spread_mean_gbps"]
    same = c[(c["second"] == c["first"]) & (c["first"] != "reno")]["spread_mean_gbps"]
    assert with_reno.mean() > same.mean()
