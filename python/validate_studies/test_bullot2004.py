"""Bullot, Cottrell & Hughes-Jones 2004 (seed 000): headline results the paper
states, checked on the full profile's stored results where TCPEVAL_FULL_STORES
holds them, the quick profile otherwise (`make validate-studies`, stores.py; the
quick profile takes about 10 minutes on 2 free cores). Set BULLOT2004_STORE to
a store directory to keep the quick runs (finished cells are skipped next time)."""


import pandas as pd
import pytest
from stores import study_report

from tcpeval.studies import bullot2004 as b
from tcpeval.units import parse_size

TABLES = ("table1_throughput", "table1_summary", "stability_by_size", "table2_intra_jain",
          "table3_asymmetry", "table4_reverse")


@pytest.fixture(scope="module")
def bullot(tmp_path_factory):
    report = study_report("bullot2004", tmp_path_factory, "BULLOT2004_STORE")
    return {t: pd.read_csv(report / f"{t}.csv") for t in TABLES}


def _t1(bullot) -> pd.DataFrame:
    return bullot["table1_throughput"].set_index(["path", "size", "stack"])["mbps"]


@pytest.mark.parametrize("path", list(b.PATHS))
def test_smallest_window_only_ptcp_gets_past_the_window_limit(bullot, path):
    # Section 4.4: "With the smallest maximum window sizes (size 1) we were unable to
    # achieve optimal throughputs except when using P-TCP."
    t1 = _t1(bullot)
    net = b.PATHS[path]
    limit = parse_size(net.windows[0]) * 8 / (net.rtt_ms / 1e3) / 1e6
    single = [t1[(path, 1, b.STACKS[s])] for s in b.STACKS if s != "ptcp"]
    assert max(single) <= 1.05 * limit
    assert t1[(path, 1, "P-TCP")] > 1.3 * max(single)


def test_reno_and_hstcplp_bring_up_the_rear(bullot):
    # Section 4.4: for sizes 2 and 3, "HSTCP-LP and Reno single stream bringing up the rear".
    row = bullot["table1_summary"].set_index("row").loc["avg sizes 2&3"]
    ours = {s: row[f"ours {label}"] for s, label in b.STACKS.items()}
    rear = max(ours["reno"], ours["hstcplp"])
    assert all(ours[s] > rear for s in ("scalable", "bic", "htcp", "ptcp"))


def test_ptcp_inflates_the_short_path_rtt(bullot):
    # Section 4.1: on the short path P-TCP's RTT rises from 10 ms to 200 ms; the other
    # stacks leave it nearly unchanged.
    t = bullot["table1_throughput"]
    short = t[(t["path"] == "short") & (t["size"] == 3)].set_index("stack")["srtt_ms"]
    assert short["P-TCP"] > 100
    assert (short.drop("P-TCP") < 40).all()


def test_hstcplp_is_gentle_and_ptcp_aggressive_against_the_others(bullot):
    # Table 3: P-TCP's average asymmetry is positive on every path, HSTCP-LP's negative.
    t3 = bullot["table3_asymmetry"].set_index("path")
    for path in b.PATHS:
        assert t3.loc[path, "ours P-TCP"] > 0.1
        assert t3.loc[path, "ours HSTCP-LP"] < -0.1


def test_intra_protocol_fairness_is_mostly_good(bullot):
    # Section 5.1: "all the protocols have a good intra-fairness (83% of the measurements
    # had F >= 0.98)".
    t2 = bullot["table2_intra_jain"]
    cells = t2[~t2["path"].isin(["avg", "std"])]["jain"].dropna()
    assert len(cells) and (cells >= 0.98).mean() >= 0.8


def test_reverse_traffic_lowers_throughput(bullot):
    # Section 5.3 / Table 4: every stack loses throughput while 16 reverse streams run.
    t4 = bullot["table4_reverse"]
    assert len(t4) == 7 and (t4["with_mbps"] < t4["without_mbps"]).all()


def test_smallest_window_is_the_steadiest(bullot):
    # Section 4.6: without UDP, all stacks are steadier with the smallest window
    # (0.09 at size 1 against 0.24 at size 3 averaged over stacks and paths).
    s = bullot["stability_by_size"].set_index(["udp", "size"])["mean"]
    assert s[("none", 1)] < s[("none", 3)]
