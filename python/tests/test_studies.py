"""Studies (issue 8): every smoke profile runs and produces its tables and figures."""

import subprocess
import sys

import pandas as pd
import pytest

from tcpeval.studies import STUDIES
from tcpeval.studies.runner import report_study, run_study


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_smoke_profile_produces_every_table_and_figure(tmp_path, name):
    stats = run_study(name, "smoke", tmp_path / "store", workers=2)
    assert stats["failed"] == 0 and stats["done"] == stats["total"]
    page = report_study(name, tmp_path / "store").read_text()
    study = STUDIES[name]
    rep_dir = tmp_path / "store" / "report"
    for table in study.PUBLISHED:
        df = pd.read_csv(rep_dir / f"{table}.csv")
        assert df["ours_bw_mbps"].notna().all(), f"{table} has empty cells"
        assert f"<h2>{table}</h2>" in page
    assert page.count("data:image/png;base64,") >= 1
    assert (rep_dir / "table1_bandwidth.png").stat().st_size > 1000
    # Re-running skips every finished cell.
    again = run_study(name, "smoke", tmp_path / "store", workers=1)
    assert again["skipped"] == again["total"]


def test_dalton_cells_match_the_paper_design():
    from tcpeval.studies import dalton2004 as d

    cells = d.runs("full")
    assert len(cells["table1"]) == 9 and len(cells["table4"]) == 24
    assert set(k for k, _ in cells["table4"]) == set(d.PUBLISHED["table4"])
    (key, doc), = [(k, doc) for k, doc in cells["table5"] if k == (4, "reno")]
    assert [f.get("direction", "forward") for f in doc["flows"]] == ["forward", "reverse"]
    assert [f["count"] for f in doc["flows"]] == [2, 2]


def test_study_cli_lists_and_rejects_unknown_names(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "tcpeval.cli", "study", *a],  # noqa: E731
                                    capture_output=True, text=True)
    assert "dalton2004" in run("list").stdout
    bad = run("run", "nope", "--out", str(tmp_path / "s"))
    assert bad.returncode == 2 and "available: dalton2004" in bad.stderr
