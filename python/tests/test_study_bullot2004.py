"""Study bullot2004 (seed 000): the design matches the paper, every table cell
has its published number, and the analysis functions on hand-computed inputs."""

import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcpeval.scenario import load_scenario
from tcpeval.studies import bullot2004 as b


@pytest.fixture(scope="module")
def full():
    return {c.name: c.scenario for c in b.design("full").cells}


def test_paths_are_the_papers(full):
    # Section 3: 10/70/170 ms minimum RTT; 622 Mbit/s (CENIC, OC12 at SLAC), 467 Mbit/s at UFL.
    net = {p: full[f"t1-{p}-s1-reno"]["network"] for p in b.PATHS}
    assert [(n["bottleneck"], n["rtt"]) for n in net.values()] == [
        ("622Mbps", "10ms"), ("467Mbps", "70ms"), ("622Mbps", "170ms")]
    windows = {p: [full[f"t1-{p}-s{s}-bic"]["flows"][0]["max_window"] for s in (1, 2, 3)]
               for p in b.PATHS}
    assert windows == {"short": ["256KiB", "512KiB", "1MiB"], "medium": ["1MiB", "4MiB", "8MiB"],
                       "long": ["4MiB", "8MiB", "12MiB"]}


def test_full_grid_counts(full):
    kinds = pd.Series([name.split("-")[0] for name in full]).value_counts().to_dict()
    # 3 paths x 3 windows x 8 stacks; the same with UDP at 60 s and 30 s; intra for the
    # 7 advanced stacks; every pair of the 7 on each path; 7 reverse-traffic runs.
    assert kinds == {"t1": 72, "udp60": 72, "udp30": 72, "intra": 63, "inter": 63, "rev": 7,
                     "txq": 21}
    assert all(doc["run"]["duration"] == "1200s" and doc["run"]["interval"] == "5s"
               for doc in full.values())


def test_stacks_are_configured_as_the_paper_ran_them(full):
    ptcp = full["t1-medium-s2-ptcp"]["flows"][0]
    assert (ptcp["cc"], ptcp["streams"], ptcp["max_window"]) == ("reno", 16, "4MiB")
    assert full["t1-long-s3-scalable"]["flows"][0]["txqueuelen"] == 2000
    assert full["t1-long-s3-htcp"]["flows"][0]["txqueuelen"] == 100
    ccs = {full[f"t1-short-s1-{s}"]["flows"][0]["cc"] for s in b.STACKS}
    assert ccs == {"reno", "scalable", "fast", "highspeed", "hstcplp", "htcp", "bic"}


def test_udp_swings_between_5_and_20_percent(full):
    udp = full["udp30-medium-s3-bic"]["udp"]
    assert udp == [{"rate": "12.5%", "amplitude": "7.5%", "period": "30s"}]
    assert full["udp60-long-s1-reno"]["udp"][0]["period"] == "60s"
    assert "udp" not in full["t1-long-s1-reno"]


def test_reverse_cells_have_16_reverse_streams_for_the_first_half(full):
    doc = full["rev-fast"]
    fwd, rev = doc["flows"]
    assert (doc["network"]["rtt"], fwd["cc"], fwd["max_window"]) == ("70ms", "fast", "8MiB")
    assert (rev["direction"], rev["streams"], rev["stop"]) == ("reverse", 16, "600s")
    assert rev["max_window"] == "8MiB"  # Table 4: "measured with 8 MByte windows"


def test_intra_and_inter_cells(full):
    assert [f["cc"] for f in full["intra-long-s3-hstcplp"]["flows"]] == ["hstcplp"] * 2
    pair = full["inter-short-ptcp-hstcplp"]["flows"]
    assert [f.get("streams", 1) for f in pair] == [16, 1]
    assert pair[0]["max_window"] == "512KiB"  # size 2 (assumed for Table 3)
    assert not any(name.startswith("intra") and name.endswith("reno") for name in full)


def test_derived_buffers_and_cross_loads():
    # 622 Mbit/s x 190 ms / 12000 bit = 9848.3 -> 9849 packets; 467 x 20 ms -> 778.3 -> 779.
    assert [p.buffer_pkts for p in b.PATHS.values()] == [9849, 779, 1037]
    # 500 KiB x 8 / 10 ms = 409.6 Mbit/s of 622 -> 0.341; 3.5 MiB / 70 ms = 419.4 of 467
    # -> 0.102; 10 MiB / 170 ms = 493.4 of 622 -> 0.207.
    assert [p.cross_load for p in b.PATHS.values()] == [0.341, 0.102, 0.207]
    # 64 KiB / RTT per flow: 52.4, 7.49, 3.08 Mbit/s; 212.1 / 52.4 -> 4, 47.6 / 7.49 -> 6,
    # 128.8 / 3.08 -> 42.
    assert [p.cross_flows for p in b.PATHS.values()] == [4, 6, 42]
    ll = {c.name: c.scenario for c in b.design("full").cells}["t1-long-s1-reno"][
        "background"]["long_lived"][0]
    assert (ll["count"], ll["window"]) == (42, "65536B")


@pytest.mark.parametrize("profile", list(b.PROFILES))
def test_every_cell_is_a_valid_scenario(profile):
    for cell in b.design(profile).cells[:: 7 if profile == "full" else 1]:
        load_scenario(cell.scenario)  # raises on any invalid field


def test_published_numbers_fill_every_table_cell():
    rep = b.report({}, "full")
    t = rep["tables"]
    assert len(t["table1_throughput"]) == 72
    assert t["table1_throughput"][["paper_mbps", "paper_std_mbps"]].notna().all(axis=None)
    assert len(t["table2_intra_jain"]) == 63 + 14
    assert t["table2_intra_jain"]["paper_jain"].notna().all()
    assert t["table3_asymmetry"].filter(like="paper").notna().all(axis=None)
    assert len(t["table3_asymmetry"]) == 4 and len(t["table4_reverse"]) == 7
    assert len(t["stability_by_size"]) == 6
    # every published number has a row of the agreement table: Table 1's 72 cells
    # and 40 summary entries, 6 stability means, Table 2's 63 + 14, Table 3's 28,
    # Table 4's 14, section 4.3's three txqueuelen statements
    assert len(t["agreement"]) == 72 + 40 + 6 + 77 + 28 + 14 + 3
    assert set(rep["figures"]) == {"fig1_throughput", "fig2_bic_sinusoidal_udp",
                                   "fig3_stability_by_path", "fig4_stability_udp",
                                   "fig5_intra_ufl"}


# Summary entries of the paper's Table 1 that its own cells do not give (all of
# S-TCP's, some of H-TCP's, BIC's, HSTCP-LP's and FAST's; docs/studies/bullot2004.md).
PAPER_SUMMARY_MISMATCHES = {
    ("avg size 1", "scalable"), ("avg size 2", "scalable"), ("avg size 3", "scalable"),
    ("avg sizes 2&3", "scalable"), ("std sizes 2&3", "scalable"), ("avg size 1", "htcp"),
    ("avg size 3", "bic"), ("avg sizes 2&3", "bic"), ("avg sizes 2&3", "hstcplp"),
    ("std sizes 2&3", "hstcplp"), ("std sizes 2&3", "fast")}


def test_published_table1_summary_rows_follow_from_its_cells():
    pub = b.published_tables()
    rows = [{"path": p, "size": s, "stack": k, "mbps": v[0]}
            for (p, s), cells in pub["t1"].items() for k, v in cells.items()]
    ours = b.table1_summary(pd.DataFrame(rows)).set_index("stack")
    for name, published in pub["t1_summary"].items():
        for stack, value in published.items():
            agrees = ours.loc[stack, name] == pytest.approx(value, abs=1.5)
            assert agrees != ((name, stack) in PAPER_SUMMARY_MISMATCHES), (name, stack)


def test_published_average_rows_follow_from_their_cells():
    pub = b.published_tables()
    for s in b.ADVANCED:
        per_path = [pub["t3"][p][s] for p in b.PATHS]
        assert sum(per_path) / 3 == pytest.approx(pub["t3"]["avg"][s], abs=0.01)
        jain = [pub["t2"][k][s] for k in pub["t2"]]
        assert sum(jain) / 9 == pytest.approx(pub["t2_summary"]["avg"][s], abs=0.011)


def test_table1_summary_by_hand():
    df = pd.DataFrame({"path": ["short", "long", "short", "long", "short", "long"],
                       "size": [1, 1, 2, 2, 3, 3], "stack": ["x"] * 6,
                       "mbps": [100.0, 200.0, 300.0, 100.0, 200.0, 400.0]})
    row = b.table1_summary(df).iloc[0]
    assert row["avg size 1"] == 150 and row["avg size 2"] == 200 and row["avg size 3"] == 300
    # 300, 100, 200, 400: mean 250, sample variance (50^2+150^2+50^2+150^2)/3 = 50000/3
    assert row["avg sizes 2&3"] == 250
    assert row["std sizes 2&3"] == pytest.approx(math.sqrt(50000 / 3))


def test_average_asymmetry_leaves_out_ptcp_short_and_lp_elsewhere():
    stacks = ("ptcp", "fast", "bic", "hstcplp")
    pairs = {("ptcp", "fast"): 0.8, ("ptcp", "bic"): 0.6, ("fast", "bic"): 0.2,
             ("fast", "hstcplp"): 0.5, ("ptcp", "hstcplp"): 0.9, ("bic", "hstcplp"): 0.3}
    short = b.average_asymmetry(pairs, "short", stacks)
    # P-TCP keeps all its pairs; the others drop their pairs with P-TCP.
    assert short["ptcp"] == pytest.approx((0.8 + 0.6 + 0.9) / 3)
    assert short["fast"] == pytest.approx((0.2 + 0.5) / 2)
    assert short["bic"] == pytest.approx((-0.2 + 0.3) / 2)
    assert short["hstcplp"] == pytest.approx((-0.5 - 0.3) / 2)
    medium = b.average_asymmetry(pairs, "medium", stacks)
    assert medium["fast"] == pytest.approx((-0.8 + 0.2) / 2)
    assert medium["hstcplp"] == pytest.approx((-0.5 - 0.9 - 0.3) / 3)


@given(st.floats(-1, 1), st.sampled_from(["short", "medium", "long"]))
def test_two_stack_asymmetry_is_antisymmetric(a, path):
    out = b.average_asymmetry({("fast", "bic"): a}, path, ("fast", "bic"))
    assert out["fast"] == pytest.approx(-out["bic"]) and abs(out["fast"]) <= 1


def _summary(*mbps, std=0.0):
    return {"flows": [{"throughput_mbps": x, "throughput_std_mbps": std,
                       "stability_index": std / x} for x in mbps]}


def test_report_places_cells_and_splits_the_reverse_run():
    results = {"t1-long-s3-bic": _summary(400.0, std=100.0),
               "intra-medium-s3-highspeed": _summary(300.0, 100.0),
               "inter-short-ptcp-hstcplp": _summary(300.0, 100.0), "rev-fast": _summary(1.0)}
    flows = pd.DataFrame({"t_s": [300.0, 600.0, 900.0, 1200.0], "flow": [0] * 4,
                          "throughput_mbps": [10.0, 30.0, 200.0, 300.0]})
    t = b.report(results, "full", lambda name: flows)["tables"]
    t1 = t["table1_throughput"].set_index(["path", "size", "stack"])
    assert t1.loc[("long", 3, "Bic-TCP"), "mbps"] == 400
    assert t1.loc[("long", 3, "Bic-TCP"), "std_mbps"] == 100
    t2 = t["table2_intra_jain"]
    cell = (t2["path"] == "medium") & (t2["window"] == "8MiB") & (t2["stack"] == "HS-TCP")
    jain = t2[cell]["jain"]
    assert jain.item() == pytest.approx(400**2 / (2 * (300**2 + 100**2)))  # 0.8
    pairs = t["asymmetry_pairs"]
    assert pairs["asymmetry"].item() == pytest.approx(0.5)
    rev = t["table4_reverse"].set_index("stack").loc["Fast TCP"]
    # With reverse traffic: reports ending at 300 s and 600 s; without: 900 s, 1200 s.
    assert (rev["with_mbps"], rev["without_mbps"]) == (20, 250)
    assert rev["with_std"] == 10
    cells = t["stability_cells"]
    one = cells[(cells["udp"] == "none") & (cells["path"] == "long") & (cells["size"] == 3)
                & (cells["stack"] == "Bic-TCP")]
    assert one["stability"].item() == 0.25


def test_page_tables_print_the_reports_csvs_paper_then_ours(tmp_path):
    """The page's full-profile sections (studies.fulltables) from the report's
    CSVs: cells placed by path, window and stack, paper / ours, "-" where the
    run has no value."""
    results = {"t1-long-s3-bic": _summary(400.0, std=100.0),
               "intra-medium-s3-highspeed": _summary(300.0, 100.0), "rev-fast": _summary(1.0)}
    flows = pd.DataFrame({"t_s": [300.0, 600.0, 900.0, 1200.0], "flow": [0] * 4,
                          "throughput_mbps": [10.0, 30.0, 200.0, 300.0]})
    for name, df in b.report(results, "full", lambda name: flows)["tables"].items():
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    out = b.page_tables(tmp_path)
    lines = out["results"].splitlines()
    row = next(x for x in lines if x.startswith("| Manchester 12MiB |")).split(" | ")
    assert row[6] == "416±100 / 400±100", row  # Bic-TCP, the sixth stack
    assert row[1] == "182±66 / -"
    assert "| Fast TCP | 20±10 / 20±10 | 260±50 / 250±50 |" in lines
    assert "| S-TCP | 280±50 / - | 400±20 / - |" in lines
    t2 = next(x for x in out["table2"].splitlines() if x.startswith("| medium 8MiB |"))
    assert t2.split(" | ")[4] == "0.94 / 0.80", t2  # HS-TCP
    assert out["results"].startswith("#### Table 1: throughput")


def test_intra_flows_start_apart_within_one_rtt():
    """Each intra-protocol flow starts within one RTT of 0 s, drawn from the
    seed: the two flows of a run no longer start at exactly the same time."""
    from tcpeval.scenario import resolve

    for cell in [c for c in b.design("quick").cells if c.axes["kind"] == "intra"]:
        s = cell.axes["stack"]
        first = {}  # a P-TCP sender's 16 streams start together: one start per sender
        for f in resolve(load_scenario(cell.scenario))["flows"]:
            first.setdefault(f["group"], f["start_ns"])
        starts = [first[f"{s}-1"], first[f"{s}-2"]]
        rtt_ns = b.PATHS[cell.axes["path"]].rtt_ms * 1e6
        assert starts[0] != starts[1] and all(0 <= t < rtt_ns for t in starts)


def test_txqueuelen_cells_set_the_interface_queue(full):
    """Section 4.3: every advanced stack alone to UFL at txqueuelen 100, 2000 and
    10000, which reaches the engine as the sender's interface queue."""
    from tcpeval.scenario import resolve

    for s in b.ADVANCED:
        for q in b.TXQUEUELENS:
            doc = full[f"txq-{s}-q{q}"]
            assert doc["network"]["rtt"] == "70ms" and doc["flows"][0]["max_window"] == "4MiB"
            engine = resolve(load_scenario(doc))["flows"][0]
            assert engine["nic_queue_pkts"] == q


def _txq(mbps: dict, stability: dict) -> pd.DataFrame:
    return pd.DataFrame([{"stack": b.STACKS[s], "txqueuelen": q, "mbps": mbps[s][i],
                          "stability": stability[s][i]}
                         for s in b.ADVANCED for i, q in enumerate(b.TXQUEUELENS)])


def test_txqueuelen_claims_hold_and_fail_on_hand_made_tables():
    as_paper = {s: (300, 250, 200) for s in b.ADVANCED} | {"scalable": (200, 300, 250)}
    steady = {s: (0.1, 0.1, 0.3) for s in b.ADVANCED}
    claims = b.txq_claims(_txq(as_paper, steady))
    assert [ours for _, _, ours in claims] == [1.0, 1.5, 1.0]
    # the opposite: every stack faster and steadier with the largest queue
    opposite = {s: (200, 250, 300) for s in b.ADVANCED}
    claims = b.txq_claims(_txq(opposite, {s: (0.3, 0.2, 0.1) for s in b.ADVANCED}))
    assert [ours for _, _, ours in claims] == [0.0, 1.25, 0.0]
    assert [ours for _, _, ours in b.txq_claims(_txq(opposite, steady).iloc[:0])] == [None] * 3
    # no effect at all (the full profile's runs): no stack is faster at 100
    flat = {s: (400, 400, 400) for s in b.ADVANCED}
    assert [ours for _, _, ours in b.txq_claims(_txq(flat, steady))] == [0.0, 1.0, 1.0]


def test_txqueuelen_rows_are_judged_in_the_agreement_table():
    rep = b.report({}, "smoke")
    rows = rep["tables"]["agreement"]
    txq = rows[rows["source"] == "section 4.3"]
    assert len(txq) == 3 and txq["agrees"].isna().all()
