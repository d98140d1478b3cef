"""Background traffic models (issue 5 item 3, issue 29 goal 4): the engine's web
transfers follow the front end's size model and Poisson arrivals, offer the
load, deliver every byte; RTT tables."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcpeval import _sim
from tcpeval import traffic as tr

CAP = 2e6  # a capped tail, so a short run's transfers finish


def _web_run(load: float, seed: int = 1, stop_s: float = 40, duration_s: float = 40) -> dict:
    """The web transfers (a column per field) of an engine run at `load` of
    100 Mbit/s (engine's `web`)."""
    sizes = {"mu": tr.SURGE_BODY_MU, "sigma": tr.SURGE_BODY_SIGMA, "alpha": tr.SURGE_TAIL_ALPHA,
             "k": tr.SURGE_TAIL_K, "tail_fraction": tr.SURGE_TAIL_FRACTION, "cap": CAP,
             "min_size": 1.0}
    cfg = {
        "seed": seed, "duration_ns": int(duration_s * 1e9), "interval_ns": 10**9,
        "trace_interval_ns": 10**9, "flows": [],
        "network": {"access_rate_bps": 1e9, "hops": [{"rate_bps": 100e6, "buffer_pkts": 800,
                                                      "reverse_buffer_pkts": 800}]},
        "web": [{"load": load, "rate_bps": 100e6, "stop_ns": int(stop_s * 1e9), "cc": "reno",
                 "sizes": sizes, "rtt": {"kind": "uniform", "low_ms": 10, "high_ms": 200}}],
    }
    res = json.loads(_sim.simulate(json.dumps(cfg)))
    assert res["intervals"]["flow"] == [], "web flows are not traced per interval"
    assert res["flows"] == []
    return {k: np.array(v) for k, v in res["web"].items()}


def _rate(load: float) -> float:
    """Arrivals per second offering `load` of 100 Mbit/s."""
    return load * 100e6 / (8 * tr.SizeModel(cap=CAP).mean())


def test_engine_sizes_and_gaps_follow_the_front_ends_model():
    web = _web_run(0.3)
    sizes = web["size_bytes"]
    assert len(sizes) > 1500
    _, p = tr.ks_statistic(sizes, tr.SizeModel(cap=CAP).cdf)
    assert p > 0.001
    gaps = np.diff(web["start_ns"] / 1e9)
    _, p = tr.ks_statistic(gaps, lambda x: 1 - np.exp(-_rate(0.3) * x))
    assert p > 0.001
    # The same statistic rejects a body shifted by 0.2 in ln bytes.
    _, p = tr.ks_statistic(sizes, tr.SizeModel(mu=tr.SURGE_BODY_MU + 0.2, cap=CAP).cdf)
    assert p < 1e-6


@settings(max_examples=5, deadline=None)
@given(st.floats(0.05, 0.5), st.integers(0, 2**31))
def test_arrivals_scale_with_load(load, seed):
    web = _web_run(load, seed, stop_s=20, duration_s=20)
    expected = _rate(load) * 20
    assert abs(len(web["id"]) - expected) < 6 * np.sqrt(expected) + 5


def test_web_transfers_complete_and_deliver_every_byte_through_the_engine():
    web = _web_run(0.3, stop_s=20, duration_s=40)
    assert list(web["id"]) == list(range(len(web["id"]))) and (web["source"] == 0).all()
    assert all(t is not None for t in web["completed_ns"])
    assert (web["bytes_delivered"] == web["size_bytes"]).all() and (web["size_bytes"] <= CAP).all()
    assert (web["completed_ns"] > web["start_ns"]).all() and (web["start_ns"] < 20e9).all()
    assert ((web["rtt_ns"] >= 10e6) & (web["rtt_ns"] <= 200e6)).all()


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
