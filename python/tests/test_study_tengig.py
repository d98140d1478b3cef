"""Study tengig (seed 002): the design matches the paper's Table II, every number the
text publishes has a cell, and the analysis on small hand-computed inputs."""

import math
import re

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcpeval.runkey import run_key
from tcpeval.scenario import load_scenario, resolve
from tcpeval.studies import protocol
from tcpeval.studies import tengig as t
from tcpeval.studies.protocol import published
from tcpeval.sweep import derive_seed, plan


def _runs(profile="full"):
    """kind -> [(axes, repetition, run name, scenario)]."""
    out = {}
    for name, cell, rep in t.design(profile).runs():
        out.setdefault(cell.axes["kind"], []).append((cell.axes, rep, name, cell.scenario))
    return out


def test_full_grid_is_the_papers_table_ii():
    c = _runs()
    # 6 variants x 4 RTTs x 7 drop rates x 5 repetitions; 6 self pairs; 5 against
    # Reno; 11 convergence pairs: 840 + 120 + 100 + 220 = 1,280 runs.
    assert {k: len(v) for k, v in c.items()} == {"single": 840, "fair": 120, "compat": 100,
                                                 "conv": 220}
    assert len({name for name, *_ in t.design("full").runs()}) == 1280
    assert {a["rtt_ms"] for a, *_ in c["single"]} == {0.2, 6.2, 12.2, 24.2}
    assert {a["drop_rate"] for a, *_ in c["single"]} == {0.0, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2}
    assert {a["variant"] for a, *_ in c["single"]} == set(t.VARIANTS)
    assert all(doc["run"]["duration"] == "900s" for *_, doc in c["single"])
    assert {a["second"] for a, *_ in c["conv"]} == set(t.VARIANTS)


def test_runs_resolve_to_the_papers_path():
    doc, = [d for a, rep, _, d in _runs()["single"]
            if (a["variant"], a["rtt_ms"], a["drop_rate"], rep) == ("cubic", 6.2, 1e-4, 0)]
    r = resolve(load_scenario(doc))
    assert r["network"]["hops"][0]["rate_bps"] == 10e9
    # 10 Gbit/s x 6.2 ms / 8 = 7,750,000 B = 5039.01 frames of 1538 B, rounded up.
    assert doc["network"]["buffer"] == "5040pkt"
    flow = doc["flows"][0]
    # Goodput ceiling 10 Gbit/s x 1460 / 1538 = 9.49 Gbit/s: the paper's 9.5.
    assert (flow["mtu"], flow["mss"]) == (1538, 1460)
    assert doc["network"]["loss"] == pytest.approx(1 - (1 - 1e-4) * (1 - 2.2e-8), rel=1e-12)


def test_buffer_and_loss_rules():
    assert t.buffer_pkts(10.0, 0.2) == 163          # 250,000 B / 1538 = 162.5
    assert t.buffer_pkts(1.0, 6.2) == 504           # 775,000 B / 1538 = 503.9
    assert t.path_loss(0.2, 1e-3) == 1e-3           # no ring on the 0.2 ms path
    assert t.path_loss(24.2, 0.0) == pytest.approx(2.2e-8)


def test_pairs_start_together_and_convergence_flows_later():
    c = _runs()
    fair, conv = c["fair"][0][-1], c["conv"][0][-1]
    assert [f["start"] for f in fair["flows"]] == ["0s", "0s"]
    assert [f["start"] for f in conv["flows"]] == ["0s", "60s"]
    assert all(d["flows"][1]["cc"] == "reno" for *_, d in c["compat"])
    assert conv["run"]["interval"] == "0.1s"


def test_repetitions_differ_by_seed_only():
    """Repetition r runs with the sweep's derived seed for r in every cell, also
    with one repetition (as the stored runs were made)."""
    d = t.design("full")
    assert d.seeds == tuple(derive_seed(1, r) for r in range(5)) and len(set(d.seeds)) == 5
    assert t.design("smoke").seeds == (derive_seed(1, 0),)
    runs = plan(d.sweep(d.cells[0])).runs
    assert [r.seed for r in runs] == list(d.seeds)
    assert len({run_key({**r.resolved, "seed": 0}) for r in runs}) == 1


def test_every_published_number_has_a_cell_in_the_full_design():
    c = _runs()
    singles = {(a["variant"], a["rtt_ms"], a["drop_rate"]) for a, *_ in c["single"]}
    fair = {(a["variant"], a["rtt_ms"]) for a, *_ in c["fair"]}
    rows = published("tengig", "published")
    assert len(rows) == 99
    for r in rows:
        if r["table"] == "fairness":
            assert (r["variant"], r["rtt_ms"]) in fair
        else:
            for variant in r["variant"].split("/"):
                assert (variant, r["rtt_ms"], r["drop_rate"]) in singles, r


def _synthetic_tables():
    rows = [{"variant": v, "rtt_ms": r, "drop_rate": p, "mean_gbps": 1.0, "min_gbps": 1.0,
             "q25_gbps": 1.0, "q50_gbps": 1.0, "q75_gbps": 1.0, "max_gbps": 1.0,
             "runs": 5 if v == "cubic" else 4}
            for v in t.VARIANTS for r in t.RTTS_MS for p in t.DROP_RATES]
    pairs = pd.DataFrame([{"variant": v, "rtt_ms": r, "jain": 1.0, "max_diff_gbps": 0.0,
                           "total_gbps": 9.4, "runs": 3} for v in t.VARIANTS for r in t.RTTS_MS])
    df = pd.DataFrame(rows)
    return {"responsiveness": df, "efficiency": df, "fairness": pairs}


def test_agreement_fills_every_row_from_full_tables():
    pub = t.agreement(_synthetic_tables())
    assert len(pub) == 99 and pub["ours"].notna().all()
    ratio = pub[pub["quantity"].str.startswith("ratio")]
    assert len(ratio) == 2 and (ratio["ours"] == 1.0).all()
    # each number says how many runs back it; a ratio the fewer of its two variants'
    assert (ratio["runs"] == 4).all()
    assert (pub.loc[pub["quantity"].str.startswith("fairness"), "runs"] == 3).all()
    cubic = pub[pub["quantity"].str.startswith("responsiveness: cubic")]
    assert len(cubic) and (cubic["runs"] == 5).all()
    assert set(pub["paper"]) >= {">= 9.48", "8.3", "<= 1", "9.29..9.42"}
    # Jain's index is judged within 0.03, every other number within 10%
    jain = pub["quantity"].str.contains("jain")
    assert (pub.loc[jain, "tolerance"] == "0.03").all()
    assert (pub.loc[~jain, "tolerance"] == "10%").all()


def test_responsiveness_and_efficiency_statistics():
    means = pd.DataFrame({"variant": ["bic", "bic"], "rtt_ms": [6.2, 6.2],
                          "drop_rate": [1e-5, 1e-5], "rep": [0, 1], "gbps": [4.0, 6.0]})
    r = t.responsiveness(means).iloc[0]
    assert (r["mean_gbps"], r["runs"]) == (5.0, 2)
    assert r["std_gbps"] == pytest.approx(math.sqrt(2))
    samples = pd.DataFrame({"variant": "reno", "rtt_ms": 0.2, "drop_rate": 0.0,
                            "gbps": [5.0, 1.0, 4.0, 2.0, 3.0], "rep": [0, 0, 1, 1, 1]})
    e = t.efficiency(samples).iloc[0]
    assert [e[c] for c in ("min_gbps", "q25_gbps", "q50_gbps", "q75_gbps", "max_gbps")] == \
        [1.0, 2.0, 3.0, 4.0, 5.0]
    assert (e["samples"], e["runs"]) == (5, 2)


def test_pair_row():
    summary = {"flows": [{"throughput_mbps": 6000.0}, {"throughput_mbps": 2000.0}],
               "bottleneck": {"utilization": 0.9}}
    row = t.pair_row(summary)
    # Jain: (6 + 2)^2 / (2 (36 + 4)) = 0.8
    assert row["jain"] == pytest.approx(0.8)
    assert (row["max_diff_gbps"], row["total_gbps"]) == (4.0, 8.0)


def test_pairs_table_averages_the_finished_repetitions_and_counts_them():
    def summary(x1, x2):
        return {"flows": [{"throughput_mbps": x1}, {"throughput_mbps": x2}],
                "bottleneck": {"utilization": 0.9}}
    results = {t.cell_name("fair", ("bic", 12.2, 0)): summary(6000.0, 2000.0),
               t.cell_name("fair", ("bic", 12.2, 3)): summary(4000.0, 4000.0),
               t.cell_name("fair", ("reno", 0.2, 1)): summary(4000.0, 4000.0)}
    records = protocol.records(t.design("full"), results, None,
                               lambda cell, s, flows: t.run_record(cell, s, flows, "full"))
    df = t._pairs_table("fair", records).set_index(["variant", "rtt_ms"])
    assert df.loc[("bic", 12.2), "jain"] == pytest.approx(0.9)   # (0.8 + 1.0) / 2
    assert df.loc[("bic", 12.2), "runs"] == 2 and df.loc[("reno", 0.2), "runs"] == 1
    assert len(df) == 2


def test_convergence_of_a_constant_flow():
    # A flow at 2 Gbit/s from t = 5 s, sampled every 0.1 s (30 samples). Its EWMA
    # u_k = 2 (1 - 0.9^k) first reaches 0.8 x 2 at k = 16 (0.9^16 = 0.185 < 0.2 <
    # 0.9^15 = 0.206): 1.6 s. Spread: the mean of 2 x 0.9^k for k = 16..30.
    times = [5 + 0.1 * k for k in range(1, 31)]
    tc, spread = t.convergence([4.9, 5.0, *times], [0.0, 0.0] + [2.0] * 30, 5.0)
    assert tc == pytest.approx(1.6)
    assert spread == pytest.approx(sum(2 * 0.9**k for k in range(16, 31)) / 15)


@given(level=st.floats(0.01, 9.5), n=st.integers(16, 60))
def test_convergence_time_of_a_constant_flow_is_the_ewma_floor(level, n):
    tc, spread = t.convergence([0.1 * k for k in range(1, n + 1)], [level] * n, 0.0)
    assert tc == pytest.approx(1.6)
    assert 0 <= spread <= 0.2 * level


def test_never_converging_flow():
    tc, spread = t.convergence([0.1 * k for k in range(1, 11)], [1.0] * 10, 0.0)
    assert math.isnan(tc) and math.isnan(spread)


def test_report_of_a_store_with_no_finished_runs_has_every_table_and_figure():
    rep = t.report({}, "smoke", flows_of=None)
    assert set(rep["tables"]) == {"responsiveness", "efficiency", "fairness", "compatibility",
                                  "convergence", "agreement"}
    assert all(len(df) == 0 for df in rep["tables"].values())
    # One efficiency figure per RTT of the profile (0.2 and 6.2 ms: Figures 4b, 5b).
    assert {"fig4b_efficiency_0.2ms", "fig5b_efficiency_6.2ms"} <= set(rep["figures"])
    assert any("not comparable" in n for n in rep["notes"])


def _five_repetition_verdicts(page: str) -> list[tuple[tuple, str]]:
    """((table, variant, rtt, drop, metric, paper), verdict) of each row of the
    page's five-repetition table of published numbers."""
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("| figure data") and "five repetitions" in line)
    out = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        c = [x.strip() for x in line.strip("|").split("|")]
        drop = None if c[3] in ("", "-") else float(c[3])
        paper = re.sub(r"^([\d.]+)-([\d.]+)$", r"\1..\2", c[5].replace(" ", ""))  # a range
        out.append(((c[0], c[1], float(c[2]), drop, c[4], paper), c[-1]))
    return out


def test_tengig_page_counts_come_from_its_table():
    """The page's counts (all rows, and distinctive and bound rows apart) are
    those of its five-repetition table, each row's kind from published.csv."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs/studies/tengig.md").read_text()
    kinds = {(r["table"], r["variant"], float(r["rtt_ms"]), r["drop_rate"], r["metric"],
              str(r["paper"]).replace(" ", "")): r["kind"]
             for r in published("tengig", "published")}
    counts = {"distinctive": [0, 0], "bound": [0, 0]}
    rows = _five_repetition_verdicts(page)
    for key, verdict in rows:
        kind = kinds[key]
        counts[kind][1] += 1
        counts[kind][0] += verdict == "yes"
    agree = sum(v == "yes" for _, v in rows)
    assert re.search(rf"{len(rows)} published\s+numbers agree with the first repetition, "
                     rf"{agree} with the five-repetition means", page)
    said = re.search(r"of the (\d+)\s+distinctive numbers \(those the paper argues from\) "
                     r"(\d+) agree, of the (\d+)\s+bound\s+rows", page)
    assert said and [int(x) for x in said.groups()] == [
        counts["distinctive"][1], counts["distinctive"][0], counts["bound"][1]]
    assert re.search(rf"checks\) {counts['bound'][0]} agree", page)


def test_a_mean_over_repetitions_gets_its_t_interval():
    tables = _synthetic_tables()
    resp = tables["responsiveness"]
    tables["responsiveness"] = resp.assign(std_gbps=0.5)
    pub = t.agreement(tables).set_index("quantity")
    row = pub.loc["responsiveness: cubic mean_gbps, 6.2 ms, drop 1e-06"]
    half = 2.776 * 0.5 / math.sqrt(5)  # t(0.975, 4 dof)
    assert row["ci_high"] - row["ours"] == pytest.approx(half, rel=2e-3)
    assert pub.loc[pub.index.str.startswith("fairness"), "ci_low"].isna().all()
