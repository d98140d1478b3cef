"""Outputs unchanged (issue 27): the summary.json of every simulator example and of
every study's smoke cells, against a stored corpus (python/tests/golden/).

The simulator is deterministic, so a refactoring that keeps behaviour keeps
every number to the last digit. A change that alters results on purpose (a bug
fixed) regenerates the corpus and says why in its commit:

    TCPEVAL_REGEN_GOLDEN=1 .venv/bin/pytest python/tests/test_golden.py

Only the wall-clock time is left out of the comparison.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import tcpeval
from tcpeval.studies import STUDIES
from tcpeval.studies.runner import plan_study

GOLDEN = Path(__file__).parent / "golden"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REGEN = os.environ.get("TCPEVAL_REGEN_GOLDEN") == "1"


def _stable(summary: dict) -> dict:
    out = json.loads(json.dumps(summary))
    out["sim"].pop("wall_s", None)
    return out


def _check(path: Path, got: dict) -> None:
    if REGEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        return
    assert path.exists(), f"{path} missing: regenerate the corpus (see the module doc)"
    want = json.loads(path.read_text())
    for key in sorted(set(want) | set(got)):
        assert got.get(key) == want.get(key), f"{path.name}: {key} differs"


def _sim_examples() -> list[Path]:
    return [p for p in sorted(EXAMPLES.glob("*.toml")) if "testbed" not in p.stem]


@pytest.mark.parametrize("example", _sim_examples(), ids=lambda p: p.stem)
def test_example_summaries_are_unchanged(example):
    result = tcpeval.run(example)
    _check(GOLDEN / "examples" / f"{example.stem}.json", _stable(result.summary))


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_study_smoke_summaries_are_unchanged(smoke_store, name):
    store, _ = smoke_store(name)
    _, keys = plan_study(name, "smoke")
    got = {cell: _stable(json.loads((store / "runs" / key / "summary.json").read_text()))
           for cell, key in sorted(keys.items())}
    _check(GOLDEN / "studies" / f"{name}.json", got)
