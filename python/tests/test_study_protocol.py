"""The study protocol (issue 27.6): every study gives its cells as scenarios with
their seeds, its published values as data files with sources, and compares them
through one routine whose table has the same columns everywhere."""

import csv
import math
import re
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcpeval.studies import PROFILES, STUDIES, protocol
from tcpeval.studies.protocol import Published, agrees, compare
from tcpeval.studies.runner import plan_study
from tcpeval.sweep import plan

P = Published.parse


def test_agreement_rule():
    # 10% of the nearer end of a value, range or bound
    assert agrees(8.0, P("8.3")) and not agrees(7.0, P("8.3"))
    assert agrees(9.0, P(">= 9.48")) and not agrees(8.0, P(">= 9.48"))
    assert agrees(1.05, P("<= 1")) and not agrees(1.2, P("<= 1"))
    assert agrees(math.nan, P("1")) is None
    # an absolute tolerance (Jain's index by 0.03): 0.891 is within 10% of 0.96
    assert agrees(0.93, P("0.96..0.989"), "0.03") and agrees(1.0, P("0.989"), "0.03")
    assert not agrees(0.891, P("0.96..0.989"), "0.03") and agrees(0.891, P("0.96..0.989"))
    assert not agrees(1.0, P("0.96"), "0.03")
    # strict bounds exclude their end; a relative tolerance widens away from zero
    assert not agrees(0.0, P("< 0"), "0") and agrees(-1e-9, P("< 0"), "0")
    assert agrees(0.0, P("<= 0"), "0") and not agrees(0.9, P("> 0.9"), "0")
    assert agrees(-1.05, P("-1"), "10%") and not agrees(-1.2, P("-1"), "10%")


@given(low=st.floats(-1e6, 1e6), width=st.floats(0, 1e6), ours=st.floats(-3e6, 3e6))
def test_difference_is_zero_inside_and_the_distance_outside(low, width, ours):
    high = low + width
    row = compare("x", "Table 1", f"{low!r}..{high!r}", ours, "0")
    assert row["difference"] == ours - min(max(ours, low), high)
    assert row["agrees"] == (low <= ours <= high)
    assert (row["difference"] == 0) == row["agrees"]


def test_agreement_table_and_its_count():
    rows = [compare("a", "Table 1", "1", 1.05), compare("b", "Table 1", "1", 2.0, "0.5"),
            compare("c", "Fig. 2", "> 0", None, runs=3)]
    table = protocol.agreement(rows)
    assert tuple(table.columns) == protocol.AGREEMENT_COLUMNS
    assert table["agrees"].tolist()[:2] == [True, False] and table["agrees"].isna().iloc[2]
    assert table["tolerance"].tolist() == ["10%", "0.5", "10%"]
    assert "distinctive rows (numbers or orderings the paper argues from) 1 of 2; " \
        "bound rows (saturation, at-most/at-least checks) 0 of 0" in protocol.agreement_note(table)
    assert table["kind"].tolist() == ["distinctive", "distinctive", "bound"]


def test_kinds_are_counted_apart():
    rows = [compare("a", "T", "<= 1", 0.5), compare("b", "T", "<= 1", 3.0),
            compare("c", "T", "< 0", -1.0, kind="distinctive"), compare("d", "T", "2", 2.0),
            compare("e", "T", "2", 9.0), compare("f", "T", "2", None)]
    assert protocol.counts(protocol.agreement(rows)) == {"distinctive": (2, 3), "bound": (1, 2)}
    with pytest.raises(ValueError, match="kind 'saturation' of 'x': allowed distinctive, bound"):
        compare("x", "T", "1", 1.0, kind="saturation")


def test_ours_is_the_mean_over_repetitions_with_a_t_interval():
    row = compare("x", "T", "2", samples=[1.0, 2.0, 3.0])
    # t(0.975, 2 dof) = 4.303; s = 1, n = 3: half-width 4.303 / sqrt(3) = 2.484
    assert row["ours"] == 2.0 and row["runs"] == 3
    assert row["ci_low"] == pytest.approx(2 - 2.484, abs=1e-3)
    assert row["ci_high"] == pytest.approx(2 + 2.484, abs=1e-3)
    one = compare("x", "T", "2", samples=[1.5])
    assert one["ours"] == 1.5 and one["runs"] == 1
    assert math.isnan(one["ci_low"]) and math.isnan(one["ci_high"])
    # from the mean, std and count alone: the same interval
    same = compare("x", "T", "2", 2.0, runs=3, spread=1.0)
    assert (same["ci_low"], same["ci_high"]) == pytest.approx((row["ci_low"], row["ci_high"]))
    assert math.isnan(compare("x", "T", "2", 2.0, runs=1, spread=0.5)["ci_low"])
    none = compare("x", "T", "2", samples=[])
    assert math.isnan(none["ours"]) and none["runs"] is None and none["agrees"] is None


def test_the_rule_column_states_the_interval_ours_must_lie_in():
    assert compare("x", "T", "8.3", 8.0)["rule"] == "7.47 <= ours <= 9.13"
    assert compare("x", "T", "> 0", 1.0, "0")["rule"] == "0 < ours"
    assert compare("x", "T", "<= 0.15", 1.0)["rule"] == "ours <= 0.165"
    assert compare("x", "T", "0.96..0.989", 1.0, "0.03")["rule"] == "0.93 <= ours <= 1.019"


@given(paper=st.floats(-1e3, 1e3), ours=st.floats(-3e3, 3e3),
       tol=st.sampled_from(["0", "10%", "0.5", "25%"]))
def test_the_rule_gives_the_verdict(paper, ours, tol):
    """The verdict is what the rule's interval says (up to its printed digits)."""
    row = compare("x", "T", repr(paper), ours, tol)
    lo, hi = (float(x) for x in row["rule"].split(" <= ours <= "))
    if min(abs(ours - lo), abs(ours - hi)) > 1e-3 * max(1.0, abs(ours)):
        assert row["agrees"] == (lo <= ours <= hi)


def _data_files():
    root = resources.files("tcpeval.studies") / "data"
    return sorted(p for d in root.iterdir() if d.is_dir() for p in d.iterdir()
                  if p.name.endswith(".csv"))


@pytest.mark.parametrize("path", _data_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_published_row_names_its_source(path):
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["source"].strip() for r in rows)
    assert path.parent.name in STUDIES


def test_a_row_without_source_is_refused(tmp_path, monkeypatch):
    (tmp_path / "data" / "x").mkdir(parents=True)
    (tmp_path / "data" / "x" / "t.csv").write_text("a,source\n1,Table 1\n2,\n")
    monkeypatch.setattr(protocol.resources, "files", lambda _: tmp_path)
    with pytest.raises(ValueError, match="row 2 has no source"):
        protocol.published("x", "t")


@pytest.mark.parametrize("name", sorted(STUDIES))
@pytest.mark.parametrize("profile", PROFILES)
def test_every_study_follows_the_protocol(name, profile):
    """One design function; cells with unique names, axes and scenarios that
    carry no seed of their own (the design's seeds give it)."""
    d = STUDIES[name].design(profile)
    names = [run for run, _, _ in d.runs()]
    assert len(names) == len(set(names)) == len(d.cells) * len(d.seeds)
    assert all(c.axes and "seed" not in c.scenario.get("run", {}) for c in d.cells)


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_a_cell_runs_once_per_seed(name):
    d = STUDIES[name].design("smoke")
    runs = plan(d.sweep(d.cells[0])).runs
    assert [(r.repetition, r.seed) for r in runs] == list(enumerate(d.seeds))


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_every_report_has_the_agreement_table_and_its_count(name):
    """Every study's report, even of a store without runs, holds the agreement
    table with the common columns and counts it in its notes."""
    import matplotlib.pyplot as plt

    rep = STUDIES[name].report({}, "smoke", None)
    plt.close("all")
    table = rep["tables"]["agreement"]
    assert tuple(table.columns) == protocol.AGREEMENT_COLUMNS
    assert protocol.agreement_note(table) in rep["notes"]


def test_a_designs_stack_is_the_run_stack_of_every_run():
    """Design.stack becomes each run's `run.stack`; a flow's own stack stays."""
    from dataclasses import replace

    cell = protocol.Cell("c", {"flows": [{"cc": "reno"}, {"cc": "fast", "stack": "linux-2.4"}],
                               "run": {"duration": "5s"}}, {"kind": "x"})
    d = protocol.Design([cell], seeds=(1, 2))
    assert "stack" not in d.sweep(cell).get("run", {})
    runs = plan(replace(d, stack="linux-2.6.13").sweep(cell), name="c").runs
    assert len(runs) == 2
    for r in runs:
        assert [f["stack"] for f in r.resolved["flows"]] == ["linux-2.6.13", "linux-2.4"]
        assert r.resolved["duration_ns"] == 5 * 10**9
    assert cell.scenario["run"] == {"duration": "5s"}, "the cell's document is not changed"


# The stack each paper ran (issue 30): seed 000 Linux 2.4.19-2.4.22 with the
# algorithm patches, 001 Linux 2.6.22.6, 002 Ubuntu 14.04.1's Linux 3.16, 003 a
# modified Linux 2.6.13, 004 ns-2.26's own agents.
PAPER_STACKS = {"bullot2004": "linux-2.4", "bhatti2009": "linux-2.6.22",
                "tengig": "linux-3.16", "ha2006": "linux-2.6.13", "dalton2004": "ns2"}
PAGES = Path(__file__).resolve().parents[2] / "docs" / "studies"


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_every_study_runs_on_its_papers_stack(name):
    """Every design names its paper's stack, and every flow of every smoke run
    resolves to it, or to the override the module lists (FLOW_STACKS: ha2006's
    FAST ran on a 2.4 kernel), which the study's page names."""
    study = STUDIES[name]
    assert PAPER_STACKS[name] == study.PAPER_STACK
    for profile in PROFILES:
        assert study.design(profile).stack == PAPER_STACKS[name], profile
    overrides = getattr(study, "FLOW_STACKS", {})
    runs = plan_study(name, "smoke")[0].runs
    seen = {f["cc"] for r in runs for f in r.resolved["flows"]}
    # an override's algorithm the smoke profile leaves out: its first quick cell
    quick = study.design("quick")
    for cc in set(overrides) - seen:
        cell = next(c for c in quick.cells if any(f["cc"] == cc for f in c.scenario["flows"]))
        runs += plan(quick.sweep(cell), name=cell.name).runs[:1]
    for run in runs:
        for f in run.resolved["flows"]:
            assert f["stack"] == overrides.get(f["cc"], PAPER_STACKS[name]), (run.params, f)
    page = (PAGES / f"{name}.md").read_text()
    assert f"`{PAPER_STACKS[name]}`" in page
    items = re.split(r"\n\s*\n|\n- ", page)  # paragraphs and list items
    for cc, stack in overrides.items():
        assert any(f"`{stack}`" in item and cc in item.lower() for item in items), \
            f"{name}.md does not list {cc} on {stack}"


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_each_pages_quick_counts_are_its_data_files(name):
    """The page's quick-profile table is what `pages.render` makes of the
    study's quick.csv (rows written from agreement tables, never typed)."""
    from tcpeval.studies import pages

    page = (PAGES / f"{name}.md").read_text()
    assert pages.page_block(page) == pages.render(name)
    assert f"| {name} |" in pages.render_summary()


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_each_pages_full_profile_tables_are_its_stored_report_csvs(name):
    """A study whose page shows its full run's tables (studies.fulltables)
    holds exactly what its stored report CSVs give; the others have none."""
    from tcpeval.studies import fulltables, get

    page = (PAGES / f"{name}.md").read_text()
    if not hasattr(get(name), "page_tables"):
        assert "<!-- full-tables" not in page
        return
    made = fulltables.blocks(name)
    assert made and all(fulltables.page_block(page, k) == v for k, v in made.items())


def test_a_full_tables_record_refuses_a_report_without_its_csvs(tmp_path):
    from tcpeval.studies import fulltables

    (tmp_path / "report").mkdir()
    with pytest.raises(FileNotFoundError, match="table1_throughput.csv"):
        fulltables.record("bullot2004", tmp_path)


def test_the_readmes_before_and_after_counts_are_the_data_files():
    from tcpeval.studies import pages

    readme = (PAGES / "README.md").read_text()
    assert pages.page_block(readme) == pages.render_summary()


def test_quick_counts_row_counts_kinds_apart():
    from tcpeval.studies import pages

    table = protocol.agreement([
        compare("a", "s", "8.3", 8.0),            # distinctive, agrees
        compare("b", "s", "8.3", 5.0),            # distinctive, does not
        compare("c", "s", ">= 9", 9.5),           # bound, agrees
        compare("d", "s", "8.3", None),           # not judged
    ])
    row = pages.row_of("ha2006", "after", table, "linux-2.6.13", "x", "abc")
    assert (row["distinctive_agree"], row["distinctive_judged"]) == (1, 2)
    assert (row["bound_agree"], row["bound_judged"]) == (1, 1)


def test_a_full_profile_row_is_recorded_and_counted_apart(tmp_path, monkeypatch):
    """Case "full" (issue 30 goal 4) is read from the full store's agreement
    table, runs on the paper's stack, and fills the README's full columns
    without touching the quick profile's after columns."""
    from tcpeval.studies import get, pages

    monkeypatch.setattr(pages, "_path", lambda study: tmp_path / f"{study}.csv")
    table = protocol.agreement([compare("a", "s", "8.3", 8.0), compare("b", "s", "8.3", 5.0),
                                compare("c", "s", ">= 9", 9.5)])
    (tmp_path / "store" / "report").mkdir(parents=True)
    table.to_csv(tmp_path / "store" / "report" / "agreement.csv", index=False)
    row = pages.record("ha2006", "full", tmp_path / "store", commit="abc")
    assert row["stack"] == get("ha2006").PAPER_STACK
    assert row["change"] == pages.FULL_CHANGE
    line = next(x for x in pages.render_summary().splitlines() if x.startswith("| ha2006 |"))
    assert line.split(" | ")[-4:] == ["not run", "not run", "1 of 2", "1 of 1 |"]


def test_sensitivity_cases_change_only_what_they_say():
    from tcpeval.studies import pages

    doc = {"network": {"buffer": "779pkt", "rtt": "28ms"}, "flows": [{"cc": "reno"}],
           "background": {"long_lived": [{"count": 4}], "web": [{"load": 0.2}]}}
    pages._buffer_scale(0.5)(doc)
    pages._background(2.0)(doc)
    pages._set_rtt("40ms")(doc)
    pages._flows(delayed_ack=True)(doc)
    assert doc == {"network": {"buffer": "390pkt", "rtt": "40ms"},
                   "flows": [{"cc": "reno", "delayed_ack": True}],
                   "background": {"long_lived": [{"count": 8}], "web": [{"load": 0.4}]}}
    base = STUDIES["dalton2004"].design("smoke")
    changed = pages.changed_design("dalton2004", "smoke", "rtt 40 ms")
    assert [c.name for c in changed.cells] == [c.name for c in base.cells]
    assert {c.scenario["network"]["rtt"] for c in changed.cells} == {"40ms"}
    assert {c.scenario["network"]["rtt"] for c in base.cells} == {"28ms"}
    assert changed.stack == base.stack == "ns2"
    # a case kept to some cells leaves the others as they were (the same runs)
    base = STUDIES["tengig"].design("smoke")
    changed = pages.changed_design("tengig", "smoke", "buffer 0.5 BDP")
    moved = {c.name for c, b in zip(changed.cells, base.cells, strict=True)
             if c.scenario != b.scenario}
    assert moved == {c.name for c in base.cells if c.name.startswith("single-")}
    # host noise is on every flow of every cell, and its case takes it off each
    changed = pages.changed_design("tengig", "smoke", "no host noise")
    assert {f.get("send_overhead") for c in changed.cells for f in c.scenario["flows"]} == {"0s"}
    assert {f["send_overhead"] for c in base.cells for f in c.scenario["flows"]} == {"0.3us"}
