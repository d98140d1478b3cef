"""Studies (issue 8): every smoke profile runs and produces its tables and figures."""

import html
import re
import subprocess
import sys

import pandas as pd
import pytest

from tcpeval.studies import STUDIES
from tcpeval.studies.runner import report_captions, report_study, run_study


def svg_text(path) -> str:
    """An SVG's text as one line: a long stamp wraps into several <text>
    elements."""
    return " ".join(" ".join(re.findall(r">([^<]+)<", path.read_text())).split())


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_smoke_profile_produces_every_table_and_figure(smoke_store, name):
    store, stats = smoke_store(name)
    assert stats["failed"] == 0 and stats["done"] == stats["total"]
    page = report_study(name, store).read_text()
    rep_dir = store / "report"
    tables = sorted(rep_dir.glob("*.csv"))
    assert tables, "no tables"
    for path in tables:
        df = pd.read_csv(path)
        assert len(df) and not df.select_dtypes("number").isna().all(axis=None), path.name
        assert f"<h2>{path.stem}</h2>" in page
    # every table and figure has its caption from the study's data
    captions = report_captions(name)
    shown = parse_tables(page)
    assert len(shown) == len(tables) and all(t["caption"] for t in shown)
    assert {t["caption"] for t in shown} <= set(captions.values())
    if name == "dalton2004":  # Table III's error probabilities as the paper prints them
        table3, = [t for t in shown if t["caption"].startswith("TABLE III.")]
        assert {"0", "1e-4", "1e-2"} <= {c for c, _ in table3["cells"]}
    pngs = sorted(rep_dir.glob("*.png"))
    assert pngs and all(p.stat().st_size > 1000 for p in pngs)
    # Each figure is also an SVG, and both say what was run.
    svgs = sorted(rep_dir.glob("*.svg"))
    assert [p.stem for p in svgs] == [p.stem for p in pngs]
    assert all(f"study {name}, profile smoke" in p.read_text() for p in svgs)
    assert all(f"all {stats['total']} runs finished" in svg_text(p) for p in svgs)
    assert page.count("data:image/png;base64,") == len(pngs)
    assert all(f"<figcaption>{html.escape(captions[p.stem])}" in page for p in pngs)
    # Re-running skips every finished cell.
    again = run_study(name, "smoke", store, workers=1)
    assert again["skipped"] == again["total"]


def test_a_partly_run_store_says_so_on_every_figure(smoke_store, tmp_path):
    """A figure copied out of a store with missing runs must not pass for the
    whole design: the stamp says how many runs it shows."""
    import json
    import shutil

    store, stats = smoke_store("tengig")
    part = tmp_path / "store"
    shutil.copytree(store, part, ignore=shutil.ignore_patterns("report"))
    cells = json.loads((part / "study.json").read_text())["cells"]
    (part / "runs" / cells["single-reno-0.2-0-0"] / "summary.json").unlink()
    page = report_study("tengig", part).read_text()
    claim = f"only {stats['total'] - 1} of {stats['total']} runs finished"
    assert claim in page
    svgs = sorted((part / "report").glob("*.svg"))
    assert svgs and all(claim in svg_text(p) for p in svgs)


def test_dalton_tables_hold_every_published_cell(tmp_path):
    from tcpeval.studies import dalton2004 as d
    from tcpeval.studies.protocol import published

    rep = d.report({}, "smoke")
    for table in d.TABLES:
        rows = published("dalton2004", table)
        assert len(rep["tables"][table]) == len(rows)
        assert sorted(rep["tables"][table]["paper_bw_mbps"]) == sorted(r["bw_mbps"] for r in rows)
    # every published number is compared: bandwidth and cwnd (one cwnd is not printed),
    # and the conclusion that FAST is the most erratic with reverse traffic
    assert len(rep["tables"]["agreement"]) == 2 * 57 - 1 + 1


def test_bhatti_grid_matches_the_paper_design():
    from tcpeval.studies import bhatti2009 as b

    full = b.design("full")
    # 16 RTTs x 5 buffers x 5 repetitions x (4 self-fairness + 4 against NewReno)
    assert len(full.runs()) == 16 * 5 * 5 * 8 and full.seeds == (1, 2, 3, 4, 5)
    doc = full.cells[0].scenario
    assert doc["flows"][1]["start"] == "60s" and doc["run"]["measure_from"] == "120s"


def test_bhatti_grid_averages_repetitions_and_gives_their_spread():
    """The grid is the mean over the repetitions present, with their count and
    sample std; a cell with one repetition has no spread."""
    import numpy as np

    from tcpeval import metrics
    from tcpeval.studies import bhatti2009 as b

    t = np.arange(121, 301)

    def flows(x1, x2):
        return pd.DataFrame({"flow": [0] * len(t) + [1] * len(t), "t_s": [*t, *t],
                             "throughput_mbps": [x1] * len(t) + [x2] * len(t)})

    runs = {}
    for rep, cubic in ((0, 60.0), (1, 70.0), (2, 65.0)):
        runs[f"self-newreno-25ms-20pct-r{rep}"] = flows(50.0, 50.0)
        runs[f"self-cubic-25ms-20pct-r{rep}"] = flows(50.0, 40.0)
        if rep < 2:  # the third repetition's NRU run is missing
            runs[f"vs-cubic-25ms-20pct-r{rep}"] = flows(30.0, cubic)
    runs["self-newreno-50ms-20pct-r0"] = flows(50.0, 45.0)
    runs["vs-newreno-50ms-20pct-r0"] = flows(50.0, 45.0)
    rep = b.report({k: {} for k in runs}, "full", runs.__getitem__)
    grid = rep["tables"]["grid"].set_index(["variant", "rtt_ms", "buffer_pct_bdp"])
    nru = [metrics.flow_nru([x] * len(t), 40.0) for x in (60.0, 70.0)]
    cell = grid.loc[("cubic", 25, 20)]
    assert cell["reps"] == 2 and cell["self_flow2_mbps"] == 40.0
    assert cell["flow2_nru_db"] == pytest.approx(np.mean(nru))
    assert cell["flow2_nru_db_rep_std"] == pytest.approx(np.std(nru, ddof=1))
    assert cell["self_flow2_mbps_rep_std"] == 0.0
    single = grid.loc[("newreno", 50, 20)]
    assert single["reps"] == 1 and np.isnan(single["flow2_nru_db_rep_std"])
    stats = rep["tables"]["caption_stats"].set_index(["variant", "metric"])
    assert stats.loc[("cubic", "flow2_nru_db"), "rep_std"] == pytest.approx(np.std(nru, ddof=1))
    # the agreement's mean: the repetitions' means with their t-interval (two runs:
    # t(0.975, 1) = 12.71); the minimum has no interval
    agree = rep["tables"]["agreement"].set_index("quantity")
    mean = agree.loc["flow2_nru_db cubic: mean over the grid"]
    half = 12.706 * np.std(nru, ddof=1) / np.sqrt(2)
    assert mean["ours"] == pytest.approx(np.mean(nru)) and mean["runs"] == 2
    assert mean["ci_high"] - mean["ours"] == pytest.approx(half, rel=1e-3)
    assert np.isnan(agree.loc["flow2_nru_db cubic: min over the grid", "ci_low"])


def _bhatti_newreno_runs(vs_flow2: float) -> dict:
    """Synthetic full-profile flows for NewReno at 25 ms, 20% BDP: the
    self-fairness run splits 50/50; the separate NewReno-vs-NewReno run gives
    flow 2 `vs_flow2` Mbit/s against flow 1's 100 - vs_flow2."""
    import numpy as np

    t = np.arange(121, 301)

    def flows(x1, x2):
        return pd.DataFrame({"flow": [0] * len(t) + [1] * len(t), "t_s": [*t, *t],
                             "throughput_mbps": [x1] * len(t) + [x2] * len(t)})

    return {"self-newreno-25ms-20pct-r0": flows(50.0, 50.0),
            "vs-newreno-25ms-20pct-r0": flows(100.0 - vs_flow2, vs_flow2)}


def test_bhatti_newreno_nru_comes_from_its_own_runs_and_can_fail():
    """NewReno's flow-NRU is measured on the vs-newreno run, not on the run that
    set its weight (which gives 0 dB by construction): an unfair split there
    fails the self-fairness check, a fair one passes."""
    import numpy as np

    from tcpeval.studies import bhatti2009 as b

    for vs_flow2, fair in ((50.0, True), (52.0, True), (80.0, False), (20.0, False)):
        runs = _bhatti_newreno_runs(vs_flow2)
        _, stats, _ = b.grid_and_stats({k: {} for k in runs}, "full", runs.__getitem__)
        nru = stats.set_index(["variant", "metric"]).loc[("newreno", "flow2_nru_db"), "mean"]
        assert nru == pytest.approx(10 * np.log10(vs_flow2 / 50.0))
        assert b.newreno_is_fair_to_itself(stats) is fair


def test_bhatti_newreno_baseline_runs_are_separate_draws():
    """vs-newreno has the self-fairness cell's scenario but seeds of its own, so
    its runs have other keys (and other start times) than the calibration runs."""
    from tcpeval.studies import bhatti2009 as b
    from tcpeval.sweep import plan

    d = b.design("full")
    cell = {c.name: c for c in d.cells}
    own, cal = cell["vs-newreno-25ms-20pct"], cell["self-newreno-25ms-20pct"]
    assert own.scenario == cal.scenario
    keys = [{r.key for r in plan(d.sweep(c)).runs} for c in (own, cal)]
    assert len(keys[0]) == len(keys[1]) == 5 and not keys[0] & keys[1]


def test_repetitions_of_loss_free_two_flow_cells_are_not_copies():
    """Without random loss nothing but the seed's start jitter tells repetitions
    apart: each repetition's flows start at other times, within one RTT."""
    from tcpeval.scenario import load_scenario, resolve
    from tcpeval.studies import bhatti2009 as b
    from tcpeval.studies import tengig as t
    from tcpeval.sweep import plan

    for study, name, rtt_s in ((b, "vs-cubic-25ms-20pct", 0.025), (t, "fair-cubic-0.2", 0.0002)):
        d = study.design("full")
        cell, = [c for c in d.cells if c.name == name]
        runs = plan(d.sweep(cell)).runs
        starts = [tuple(f["start_ns"] for f in r.resolved["flows"]) for r in runs]
        assert len(set(starts)) == 5
        doc = cell.scenario
        plain = {**doc, "flows": [{**f, "start_jitter": "0s"} for f in doc["flows"]]}
        nominal = [f["start_ns"] for f in resolve(load_scenario(plain))["flows"]]
        assert all(0 <= s - n < rtt_s * 1e9
                   for run in starts for s, n in zip(run, nominal, strict=True))


def test_dalton_cells_match_the_paper_design():
    from tcpeval.studies import dalton2004 as d
    from tcpeval.studies.protocol import published

    cells = d.design("full").cells
    by_table = {t: [c for c in cells if c.axes["table"] == t] for t in d.TABLES}
    assert len(by_table["table1"]) == 9 and len(by_table["table4"]) == 24
    assert {tuple(c.axes.values())[1:] for c in by_table["table4"]} == \
        {(r["buffer_pkts"], r["queue"], r["cc"]) for r in published("dalton2004", "table4")}
    doc, = [c.scenario for c in by_table["table5"] if c.name == "table5-4-reno"]
    assert [f.get("direction", "forward") for f in doc["flows"]] == ["forward", "reverse"]
    assert [f["count"] for f in doc["flows"]] == [2, 2]


def test_study_cli_lists_and_rejects_unknown_names(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "tcpeval.cli", "study", *a],  # noqa: E731
                                    capture_output=True, text=True)
    listed = run("list").stdout
    assert all(name in listed for name in STUDIES)
    bad = run("run", "nope", "--out", str(tmp_path / "s"))
    assert bad.returncode == 2 and f"available: {', '.join(STUDIES)}" in bad.stderr


def test_cells_run_part_of_a_study_and_the_rest_later(tmp_path):
    """`study run --cells` runs the matching cells only; the report counts the
    others as missing, and a later run without --cells adds just those."""
    store = tmp_path / "store"
    part = run_study("dalton2004", "smoke", store, workers=1, cells=["table1-*"])
    whole = run_study("dalton2004", "smoke", store, workers=1)
    assert 0 < part["done"] < whole["total"]
    assert whole["skipped"] == part["done"] and whole["done"] == whole["total"] - part["done"]


def test_cells_that_match_nothing_exit_2_naming_the_option(tmp_path):
    bad = subprocess.run([sys.executable, "-m", "tcpeval.cli", "study", "run", "dalton2004",
                          "--profile", "smoke", "--out", str(tmp_path / "s"), "--cells", "zz*"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--cells: no cell of dalton2004" in bad.stderr
    assert "table1-" in bad.stderr and not (tmp_path / "s").exists()


def test_report_finds_runs_by_the_current_run_keys(smoke_store, tmp_path):
    """study.json keeps the keys the runs were made under; after the run key
    changes (the store migrates its runs on open), the report still finds every
    run through the keys the code computes now."""
    import json
    import shutil

    store, stats = smoke_store("dalton2004")
    part = tmp_path / "store"
    shutil.copytree(store, part, ignore=shutil.ignore_patterns("report"))
    meta = json.loads((part / "study.json").read_text())
    meta["cells"] = {cell: f"stale{i:015d}" for i, cell in enumerate(meta["cells"])}
    (part / "study.json").write_text(json.dumps(meta))
    page = report_study("dalton2004", part).read_text()
    assert f"all {stats['total']} runs finished" in page


def test_dalton_rtt_is_the_one_the_papers_numbers_imply():
    """At 1000 Mbit/s a 50-packet queue adds at most 0.4 ms, so window over
    bandwidth is the base RTT: 27.4-28.1 ms counting 1000-byte payloads,
    28.5-29.2 ms counting 40-byte headers too; the design's 28 ms lies in it."""
    from tcpeval.scenario import parse_time
    from tcpeval.studies import dalton2004 as d
    from tcpeval.studies.protocol import published

    gig = [r for r in published("dalton2004", "table2") if r["rate_mbps"] == 1000]
    low = min(d.implied_rtt_ms(r) for r in gig)
    high = max(d.implied_rtt_ms(r, header_bytes=40) for r in gig)
    assert low == pytest.approx(27.41, abs=0.01) and high == pytest.approx(29.20, abs=0.01)
    rtts = {c.scenario["network"]["rtt"] for c in d.design("full").cells}
    assert len(rtts) == 1 and low <= parse_time(rtts.pop()) * 1e3 <= high


def _cwnd_trace(flows: dict[int, list[float]]) -> pd.DataFrame:
    rows = [{"t_s": 0.1 * i, "flow": f, "cwnd_pkts": w}
            for f, ws in flows.items() for i, w in enumerate(ws)]
    return pd.DataFrame(rows)


def test_dalton_cwnd_cov_by_hand():
    from tcpeval.studies import dalton2004 as d

    steady = _cwnd_trace({0: [100.0] * 40, 1: [50.0] * 40})
    assert d.cwnd_cov(steady, 0.0) == 0.0
    # flow 0 alternates 50/150 after 2 s (CoV 0.5), flow 1 is steady: mean 0.25
    swing = _cwnd_trace({0: [500.0] * 20 + [50.0, 150.0] * 10, 1: [80.0] * 40})
    assert d.cwnd_cov(swing, 2.0) == pytest.approx(0.25)


@pytest.mark.parametrize("fast_swing, holds", [(60.0, True), (5.0, False)])
def test_dalton_fast_erratic_row_can_hold_or_fail(fast_swing, holds):
    """The Fig. 8 conclusion is judged from the runs' cwnd traces: FAST swinging
    more than the other two agrees, FAST steadier fails."""
    from tcpeval.studies import dalton2004 as d

    def swinging(amp):
        return _cwnd_trace({f: [100.0 + amp * (-1) ** i for i in range(100)] for f in (0, 1)})

    traces = {"reno": swinging(10.0), "highspeed": swinging(20.0), "fast": swinging(fast_swing)}
    row = d.erratic_row(traces, "smoke")
    assert row["ours"] == pytest.approx(fast_swing / 20.0) and row["agrees"] == holds
    assert d.erratic_row({"reno": traces["reno"]}, "smoke")["agrees"] is None


class _Tables(__import__("html.parser").parser.HTMLParser):
    """Each <table> of a page: its caption, headers and cells (with classes)."""

    def __init__(self):
        super().__init__()
        self.tables, self._where, self._cls = [], None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"caption": "", "headers": [], "cells": []})
        elif tag in ("caption", "th", "td"):
            self._where, self._cls = tag, dict(attrs).get("class")
            if tag == "td":
                self.tables[-1]["cells"].append(["", self._cls])

    def handle_endtag(self, tag):
        if tag in ("caption", "th", "td"):
            self._where = None

    def handle_data(self, data):
        t = self.tables[-1] if self.tables else None
        if self._where == "caption":
            t["caption"] += data
        elif self._where == "th":
            t["headers"].append(data)
        elif self._where == "td":
            t["cells"][-1][0] += data


def parse_tables(page: str) -> list[dict]:
    p = _Tables()
    p.feed(page)
    return p.tables


def test_report_table_prints_as_the_paper_does():
    """Captions, units in the headers, 1e-4 (not 0.000), integers as integers,
    and the difference coloured where ours breaks the rule or its interval
    lies outside the paper's value."""
    from tcpeval.studies import protocol
    from tcpeval.studies.runner import html_table

    df = pd.DataFrame({"p": [0.0, 1e-4, 1e-2], "buffer_pkts": [10, 50, 500],
                       "ours_bw_mbps": [63.8687, 84.3331, 425.292], "ours_cwnd": [1.5, 2.25, 3]})
    t, = parse_tables(html_table(df, "TABLE III. Performance [paper: TABLE III]"))
    assert t["caption"] == "TABLE III. Performance [paper: TABLE III]"
    assert t["headers"] == ["p", "buffer (packets)", "ours bw (Mbit/s)", "ours cwnd (packets)"]
    assert [c for c, _ in t["cells"]] == ["0", "10", "63.87", "1.500", "1e-4", "50", "84.33",
                                          "2.250", "1e-2", "500", "425.29", "3.000"]
    rows = [protocol.compare("in", "T", "8.3", 8.0),
            protocol.compare("out", "T", "8.3", 5.0),
            protocol.compare("ci", "T", "2..2.1", samples=[2.28, 2.30, 2.32]),
            protocol.compare("none", "T", "2", None)]
    t, = parse_tables(html_table(protocol.agreement(rows), "Agreement"))
    width = len(t["headers"])
    diff = t["headers"].index("difference")
    marks = [t["cells"][i * width + diff][1] for i in range(len(rows))]
    assert marks == [None, "off", "ci-off", None]
    assert t["cells"][3 * width + t["headers"].index("agrees")][0] == "-"


def test_dalton_page_count_comes_from_its_tables():
    """The page's count of agreeing published numbers is what the studies'
    comparison rule gives on its own tables (paper beside ours)."""
    from pathlib import Path

    from tcpeval.studies.protocol import compare

    lines = (Path(__file__).resolve().parents[2] / "docs/studies/dalton2004.md").read_text()
    agree = total = 0
    rows = lines.splitlines()
    for i, line in enumerate(rows):
        if line.startswith("| ") and "paper_bw_mbps" in line:
            head = [c.strip() for c in line.strip("|").split("|")]
            for r in rows[i + 2:]:
                if not r.startswith("|"):
                    break
                cell = dict(zip(head, (c.strip() for c in r.strip("|").split("|")), strict=True))
                for paper, ours in (("paper_bw_mbps", "ours_bw_mbps"), ("paper_cwnd", "ours_cwnd")):
                    if cell[paper] not in ("", "-", "nan"):
                        total += 1
                        agree += bool(compare("x", "T", float(cell[paper]), float(cell[ours]))[
                            "agrees"])
    said = re.search(r"(\d+) of\s+the (\d+) published numbers agree within 10%", lines)
    assert said and (int(said[1]), int(said[2])) == (agree, total)


def test_bhatti_page_count_comes_from_its_table():
    """The page's count of agreeing caption numbers is what the comparison rule
    (each caption's tolerance) gives on its caption-statistics table."""
    from pathlib import Path

    from tcpeval.studies.protocol import compare, published

    page = (Path(__file__).resolve().parents[2] / "docs/studies/bhatti2009.md").read_text()
    tol = {(r["variant"], r["metric"]): r["tolerance"] for r in published("bhatti2009", "captions")}
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| variant | metric | ours"))
    agree = total = 0
    for row in lines[start + 2:]:
        if not row.startswith("|"):
            break
        v, m, ours, _, paper = (c.strip() for c in row.strip("|").split("|"))
        numbers = [[float(x) for x in re.findall(r"-?\d+\.\d+", s)] for s in (ours, paper)]
        for o, p in zip(*numbers, strict=False):  # min, mean, max and std where the paper has it
            total += 1
            agree += bool(compare("x", "T", p, o, tol[(v, m)])["agrees"])
    said = re.search(r"(\d+) of the (\d+) caption numbers agree", page)
    assert said and (int(said[1]), int(said[2])) == (agree, total)
