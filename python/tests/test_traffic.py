"""Background traffic models (issue 5 item 3): size distribution, arrivals, load,
RTT distributions, and a run of web transfers through the engine."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcpeval import traffic as tr


def test_sizes_pass_ks_against_the_configured_distribution():
    model = tr.SizeModel()
    sizes = model.sample(np.random.default_rng(1), 20_000)
    d, p = tr.ks_statistic(sizes, model.cdf)
    assert p > 0.01, (d, p)


def test_ks_rejects_a_different_distribution():
    shifted = tr.SizeModel(mu=tr.SURGE_BODY_MU + 0.2)
    sizes = shifted.sample(np.random.default_rng(1), 20_000)
    _, p = tr.ks_statistic(sizes, tr.SizeModel().cdf)
    assert p < 1e-6


def test_analytic_mean_matches_a_large_sample():
    model = tr.SizeModel(cap=10e6)
    sizes = model.sample(np.random.default_rng(2), 4_000_000)
    assert sizes.mean() == pytest.approx(model.mean(), rel=0.03)


def test_generator_reaches_the_target_load_over_a_long_run():
    # 8 hours of arrivals at 30% of 100 Mbit/s: relative std of the realised load
    # is about 1.3% for the default 100 MB cap, so 5% is a 4-sigma bar.
    flows = tr.web_flows(load=0.3, capacity_bps=100e6, start_s=0, stop_s=8 * 3600,
                         rng=np.random.default_rng(3), sizes=tr.SizeModel(),
                         rtts=tr.RttModel())
    offered = sum(f["bytes"] for f in flows) * 8 / (100e6 * 8 * 3600)
    assert offered == pytest.approx(0.3, rel=0.05)


def test_poisson_arrivals_have_exponential_gaps():
    t = tr.poisson_arrivals(np.random.default_rng(4), 50.0, 0.0, 2000.0)
    assert len(t) == pytest.approx(100_000, abs=4 * np.sqrt(100_000))
    _, p = tr.ks_statistic(np.diff(t), lambda x: 1 - np.exp(-50.0 * x))
    assert p > 0.01


def test_empirical_rtt_table(tmp_path):
    csv = tmp_path / "rtt.csv"
    csv.write_text("rtt_ms,weight\n10,1\n100,3\n")
    model = tr.RttModel.from_csv(csv)
    x = model.sample_ms(np.random.default_rng(5), 40_000)
    assert set(np.unique(x)) == {10.0, 100.0}
    assert (x == 100).mean() == pytest.approx(0.75, abs=0.01)


def test_bad_rtt_table_names_the_problem(tmp_path):
    csv = tmp_path / "rtt.csv"
    csv.write_text("rtt_ms\n-5\n")
    with pytest.raises(ValueError, match="positive"):
        tr.RttModel.from_csv(csv)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.05, 0.9), st.integers(0, 2**31))
def test_arrival_rate_scales_with_load(load, seed):
    model = tr.SizeModel(cap=1e6)
    flows = tr.web_flows(load=load, capacity_bps=1e9, start_s=0, stop_s=50,
                         rng=np.random.default_rng(seed), sizes=model, rtts=tr.RttModel())
    expected = load * 1e9 / (8 * model.mean()) * 50
    assert abs(len(flows) - expected) < 6 * np.sqrt(expected) + 5


def test_web_transfers_complete_and_deliver_every_byte_through_the_engine():
    from tcpeval import _sim

    rng = np.random.default_rng(6)
    flows = tr.web_flows(load=0.3, capacity_bps=100e6, start_s=0, stop_s=20, rng=rng,
                         sizes=tr.SizeModel(cap=2e6),
                         rtts=tr.RttModel(kind="uniform", low_ms=10, high_ms=200))
    cfg = {
        "seed": 1, "duration_ns": 40 * 10**9, "interval_ns": 10**9, "trace_interval_ns": 10**9,
        "network": {"access_rate_bps": 1e9, "hops": [{"rate_bps": 100e6, "buffer_pkts": 800,
                                                      "reverse_buffer_pkts": 800}]},
        "flows": flows,
    }
    res = json.loads(_sim.simulate(json.dumps(cfg)))
    done = [f for f in res["flows"] if f["completed_ns"] is not None]
    assert len(done) == len(flows)
    for f, spec in zip(res["flows"], flows, strict=True):
        assert f["bytes_delivered"] == spec["bytes"]
        assert f["completed_ns"] > spec["start_ns"]
        assert f["group"] == "web"
    assert res["intervals"]["flow"] == [], "web flows are not traced per interval"
