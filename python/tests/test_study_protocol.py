"""The study protocol (issue 27.6): every study gives its cells as scenarios with
their seeds, its published values as data files with sources, and compares them
through one routine whose table has the same columns everywhere."""

import csv
import math
from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcpeval.studies import PROFILES, STUDIES, protocol
from tcpeval.studies.protocol import Published, agrees, compare
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
    assert "agrees with 1 of 2 published values" in protocol.agreement_note(table)


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
