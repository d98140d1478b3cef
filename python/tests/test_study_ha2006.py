"""ha2006 (seed 003): the design matches the paper, the paper's statements are all
in the claims table, and the analysis functions give hand-computed results."""

import json
import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcpeval.studies import ha2006 as h

MIB = 1024 * 1024


def test_full_grid_is_the_papers_design():
    p = h.PROFILES["full"]
    assert set(p["protocols"]) == {"bic", "cubic", "fast", "highspeed", "htcp", "scalable",
                                   "reno"}
    assert tuple(p["rtts"]) == (16, 42, 82, 162, 324)
    full = {c.name: c.scenario for c in h.design("full").cells}
    # Distinct runs, by hand: 7 protocols x 5 RTTs x 2 settings of intra-protocol
    # pairs (70); RTT fairness at the 4 RTTs other than the fixed 162 ms (56);
    # 6 variants against Reno (60); the 2 Mbyte buffer where it differs from the
    # default, only at 324 ms (14).
    assert len(full) == 70 + 56 + 60 + 14
    assert len({json.dumps(d, sort_keys=True) for d in full.values()}) == len(full)
    doc = full["intra-htcp-82ms-with"]
    assert doc["network"]["bottleneck"] == "400Mbps"
    assert [f["start"] for f in doc["flows"]] == ["30s", "130s"]
    assert doc["run"]["duration"] == "600s" and doc["run"]["measure_from"] == "135s"
    assert "background" not in full["intra-htcp-82ms-without"]


def test_background_runs_both_ways_with_64kb_windows():
    bg = h.background()
    assert {x["direction"] for x in bg["long_lived"]} == {"forward", "reverse"}
    assert {x["direction"] for x in bg["web"]} == {"forward", "reverse"}
    assert all(x["count"] == 4 for x in bg["long_lived"])
    # The scenario model's own default window is the paper's 64 KB.
    from tcpeval.scenario import LongLived, Web

    assert LongLived().window == Web().window == 64_000  # "64KB", parsed


def test_pair_designs():
    full = {c.name: c.scenario for c in h.design("full").cells}
    rtt = full["rtt-fast-16ms-with"]
    assert [f["rtt"] for f in rtt["flows"]] == ["162ms", "16ms"]
    assert [f["cc"] for f in full["friendly-scalable-42ms-without"]["flows"]] == ["scalable",
                                                                                  "reno"]
    assert full["buffer2mb-bic-324ms-without"]["network"]["buffer"] == f"{2 * MIB}B"
    assert full["intra-bic-324ms-without"]["network"]["buffer"] == "3240000B"
    # Linux 2.6.13's CUBIC is the stack's (CUBIC 2.1), not set by hand; FAST
    # runs the 2.4 stack, the Reno flow of its friendliness runs the design's.
    assert "params" not in full["intra-cubic-16ms-with"]["flows"][0]
    assert [f.get("stack") for f in full["friendly-fast-42ms-without"]["flows"]] == [
        "linux-2.4", None]
    assert h.design("full").stack == "linux-2.6.13"


def test_aliased_cells_point_at_the_intra_runs():
    p = h.PROFILES["full"]
    assert h.source("rtt", "bic", 162, p) == "intra"
    assert h.source("rtt", "bic", 82, p) == "rtt"
    assert h.source("buffer2mb", "bic", 162, p) == "intra"
    assert h.source("buffer2mb", "bic", 324, p) == "buffer2mb"


def test_buffer_rule():
    # 20% of 400 Mbit/s x 324 ms = 3.24 MB; below 162 ms 2 MiB is larger.
    assert h.buffer_bytes(16) == h.buffer_bytes(162) == 2 * MIB
    assert h.buffer_bytes(324) == 3_240_000


@given(st.floats(min_value=1, max_value=2000))
def test_buffer_is_the_larger_of_floor_and_fifth_of_bdp(rtt_ms):
    b = h.buffer_bytes(rtt_ms)
    fifth = 0.2 * 400e6 * rtt_ms / 1e3 / 8
    assert b >= 2 * MIB and b >= fifth - 1e-6
    # Whole bytes: the floor, or 20% of the BDP rounded up.
    assert b == 2 * MIB or fifth - 1e-6 <= b < fifth + 1


def test_every_statement_of_section_4_has_a_row_with_the_texts_numbers():
    t = h.claims_table({k: pd.DataFrame() for k in ("intra_protocol", "rtt_fairness",
                                                     "tcp_friendliness", "utilization_2mb")},
                       h.PROFILES["full"])
    assert sorted({c["figure"] for c in h.claims()}) == [2, 3, 4, 5, 6, 7, 8, 9]
    assert set(t["source"]) >= {"section 4.1, Fig. 2", "section 4.6, Fig. 9"}
    assert {c["id"] for c in h.claims()} == set(h.measures(h.PROFILES["full"]))
    # The numbers the text states: Reno above 90%, H-TCP down to 75%, FAST near 1.0,
    # utilisation close to 100%.
    assert {"> 0.9", "0.75", ">= 0.95", "1"} <= set(t["paper"])
    assert t["ours"].isna().all() and t["agrees"].isna().all()


def _flows(start2, x1, x2):
    """Interval rows (1 s) of two flows; flow 2 from start2."""
    rows = [{"t_s": float(t), "flow": 0, "throughput_mbps": v} for t, v in x1]
    rows += [{"t_s": float(t), "flow": 1, "throughput_mbps": v} for t, v in x2 if t > start2]
    return pd.DataFrame(rows)


def test_convergence_time_by_hand():
    # Both flows at 100 after flow 2 starts at 10 s: fair share 100; the EWMA
    # 100 (1 - 0.9^k) first reaches 80 at k = 16 (0.9^15 = 0.206, 0.9^16 = 0.185).
    x = [(t, 100.0) for t in range(1, 41)]
    assert h.convergence(_flows(10, x, x), 10, 40) == 16.0
    # Flow 2 never above 20 while flow 1 holds 180: fair share 100, never converges.
    f = _flows(10, [(t, 180.0) for t in range(1, 41)], [(t, 20.0) for t in range(1, 41)])
    assert math.isnan(h.convergence(f, 10, 40))


def test_total_cov_uses_the_bottleneck_after_the_start():
    links = pd.DataFrame({"t_s": [1.0, 2.0, 3.0, 4.0, 5.0, 3.0],
                          "link": ["bottleneck"] * 5 + ["reverse"],
                          "tx_bytes": [1.0, 99.0, 40.0, 60.0, 40.0, 1e6]})
    # After 2 s: 40, 60, 40: mean 46.67, population std 9.43 -> 0.2020.
    assert h.total_cov(links, 2.0) == pytest.approx(9.428090 / 46.666667, rel=1e-6)


def _table(values):
    """Rows (protocol, rtt, setting, value)."""
    return pd.DataFrame([{"protocol": c, "rtt_ms": r, "background": s, "v": v}
                         for c, r, s, v in values])


def test_change_with_background_and_rank():
    t = _table([("fast", 16, "without", 0.9), ("fast", 16, "with", 0.7),
                ("fast", 82, "without", 1.0), ("fast", 82, "with", 0.6),
                ("htcp", 16, "without", 0.2), ("htcp", 82, "without", 0.4),
                ("reno", 16, "without", 0.25), ("reno", 82, "without", 0.25)])
    # (0.7 - 0.9 + 0.6 - 1.0) / 2 = -0.3
    assert h.change_with_background(t, "fast", "v") == pytest.approx(-0.3)
    # Means without: fast 0.95, htcp 0.3, reno 0.25.
    assert h.rank_from_top(t, "without", "v", "fast") == 1
    assert h.rank_from_top(t, "without", "v", "htcp") == 2
    assert h.rank_from_top(t, "without", "v", "reno") == 3
    assert math.isnan(h.rank_from_top(t, "with", "v", "htcp"))


def test_claims_are_judged_on_the_numbers():
    intra = pd.DataFrame([
        {"protocol": "reno", "rtt_ms": r, "background": s, "utilization": u, "jain": 1.0,
         "convergence_s": math.nan, "cov_total": 0.0, "loss_rate": 0.0}
        for r, s, u in ((16, "without", 0.97), (82, "without", 0.88), (324, "without", 0.5),
                        (16, "with", 0.99), (82, "with", 0.99), (324, "with", 0.96))])
    tables = {"intra_protocol": intra, "rtt_fairness": pd.DataFrame(),
              "tcp_friendliness": pd.DataFrame(), "utilization_2mb": pd.DataFrame()}
    t = h.claims_table(tables, h.PROFILES["full"]).set_index("quantity")
    reno = t.loc[[c for c in t.index if c.startswith("Reno's utilisation")][0]]
    assert reno["ours"] == 0.88 and not reno["agrees"]  # 82 ms is below 90%
    full = t.loc[[c for c in t.index if c.startswith("With background, utilisation")][0]]
    assert full["ours"] == 0.96 and full["agrees"]
    # Never converged with or without: both count as 470 s, no change (not faster).
    conv = t.loc[[c for c in t.index if c.startswith("Reno converges")][0]]
    assert conv["ours"] == 0.0 and not conv["agrees"]


@pytest.mark.parametrize("drop,holds", [(0.01, False), (0.1, True)])
def test_considerably_lower_needs_a_real_drop(drop, holds):
    """'Considerably lower with background' needs a mean fall of Jain's index of
    at least 0.05 (claims.csv), not any fall."""
    rtt = pd.DataFrame([{"protocol": "fast", "rtt_ms": r, "background": s,
                         "jain": 0.98 - (drop if s == "with" else 0.0)}
                        for r in (16, 82) for s in ("without", "with")])
    tables = {"intra_protocol": pd.DataFrame(), "rtt_fairness": rtt,
              "tcp_friendliness": pd.DataFrame(), "utilization_2mb": pd.DataFrame()}
    t = h.claims_table(tables, h.PROFILES["full"]).set_index("quantity")
    row = t.loc[[c for c in t.index if c.startswith("FAST's RTT fairness index is")][0]]
    assert row["ours"] == pytest.approx(-drop) and row["agrees"] == holds


NUMBERS = {w: i for i, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen"))}


def _verdicts(page: str, heading: str) -> list[str]:
    """The last column of the first table under `heading`, lower case."""
    lines = page[page.index(heading):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")),
               len(lines))
    body = lines[start + 2:end]  # past the header and its rule
    assert body, f"no table under {heading!r}"
    return [r.strip("|").split("|")[-1].strip().strip("*").lower() for r in body]


def page_counts(page: str) -> dict[str, tuple[int, int]]:
    """profile -> (holds, listed) from the page's statement tables."""
    out = {}
    for profile, heading in (("full", "### The paper's statements beside ours"),
                             ("quick", "## The quick profile's statements")):
        verdicts = _verdicts(page, heading)
        out[profile] = (sum(v.startswith("yes") for v in verdicts), len(verdicts))
    return out


def test_ha2006_page_counts_come_from_its_tables():
    """The page's sentence "N of the M hold on the full profile (K on the quick
    profile" counts the verdicts of its own tables (it once said seven where
    its table showed six)."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs/studies/ha2006.md").read_text()
    counts = page_counts(page)
    said = re.search(r"(\w+) of the (\w+) hold on the full profile \((\w+) on the quick",
                     page)
    assert said, "the count sentence is gone"
    full, total, quick = (NUMBERS[w.lower()] for w in said.groups())
    assert (full, total) == counts["full"] and quick == counts["quick"][0]
    assert counts["quick"][1] == total
    # the full profile's verdicts by kind (claims.csv), as the page states them
    kind = {c["claim"]: c["kind"] for c in h.claims()}
    lines = page[page.index("### The paper's statements beside ours"):].splitlines()
    rows = [r.strip("|").split("|") for r in lines if r.startswith("| ") and r[2:3].isdigit()]
    by_kind = {"distinctive": [0, 0], "bound": [0, 0]}
    for r in rows[:total]:
        k = kind[r[1].strip()]
        by_kind[k][0] += r[-1].strip().startswith("yes")
        by_kind[k][1] += 1
    said = re.search(r"the paper argues from\) (\d+) of (\d+) hold, bound rows \(.*?\) "
                     r"(\d+) of (\d+)\.", page, re.S)
    assert said and [int(x) for x in said.groups()] == [*by_kind["distinctive"],
                                                        *by_kind["bound"]]


def test_page_counts_see_a_changed_verdict():
    page = ("### The paper's statements beside ours\n\n| a | holds |\n|---|---|\n| x | yes |\n"
            "| y | no |\n\ntext\n## The quick profile's statements\n\n| a | holds |\n|---|---|\n"
            "| x | **no** |\n| y | yes, barely |\n")
    assert page_counts(page) == {"full": (1, 2), "quick": (1, 2)}
    assert page_counts(page.replace("| y | no |", "| y | yes |"))["full"] == (2, 2)
