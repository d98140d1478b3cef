"""`make validate-studies` checks a study's full-profile verdicts from stored
results where TCPEVAL_FULL_STORES holds a full store of it, the quick profile
otherwise, and says which (python/validate_studies/stores.py)."""

import importlib.util
import json
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "validate_studies" / "stores.py"


@pytest.fixture
def stores(monkeypatch):
    spec = importlib.util.spec_from_file_location("validate_stores", HERE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.delenv(module.FULL_STORES, raising=False)
    return module


def _store(root: Path, name: str, profile: str, study: str | None = None) -> Path:
    (root / name).mkdir(parents=True)
    (root / name / "study.json").write_text(json.dumps(
        {"study": study or name, "profile": profile, "cells": {}}))
    return root / name


def test_a_full_store_is_chosen_and_anything_else_is_not(stores, tmp_path, monkeypatch):
    assert stores.profile_of("ha2006") == "quick"  # variable unset
    monkeypatch.setenv(stores.FULL_STORES, str(tmp_path))
    assert stores.profile_of("ha2006") == "quick"  # no store
    _store(tmp_path, "ha2006", "quick")
    _store(tmp_path, "tengig", "full", study="dalton2004")
    full = _store(tmp_path, "dalton2004", "full")
    assert [stores.profile_of(n) for n in ("ha2006", "tengig", "dalton2004")] == \
        ["quick", "quick", "full"]
    assert stores.full_store("dalton2004") == full
    assert stores.on_quick("dalton2004", "why").args == (False,)
    assert stores.on_quick("ha2006", "why").args == (True,)


def test_a_full_store_is_reported_without_running_and_the_choice_is_said(
        stores, tmp_path, tmp_path_factory, monkeypatch):
    from tcpeval.studies import runner

    def no_run(*args, **kwargs):
        raise AssertionError("a full store must not be run")

    reported = []
    monkeypatch.setattr(runner, "run_study", no_run)
    monkeypatch.setattr(runner, "report_study", lambda *a: reported.append(a))
    monkeypatch.setenv(stores.FULL_STORES, str(tmp_path))
    full = _store(tmp_path, "dalton2004", "full")
    out = stores.study_report("dalton2004", tmp_path_factory)
    assert reported == [("dalton2004", full, out)]
    said = stores.CHECKED["dalton2004"]
    assert said.startswith(f"FULL profile, stored results at {full}")
    assert "only 0 of 48 runs finished" in said


def test_without_a_full_store_the_quick_profile_runs_and_is_said(
        stores, tmp_path_factory, monkeypatch):
    from tcpeval.studies import runner

    ran = []
    monkeypatch.setattr(runner, "run_study", lambda *a: ran.append(a) or {"failed": 0})
    monkeypatch.setattr(runner, "report_study", lambda *a: None)
    stores.study_report("ha2006", tmp_path_factory)
    assert [(name, profile) for name, profile, _ in ran] == [("ha2006", "quick")]
    assert stores.CHECKED["ha2006"].startswith("QUICK profile, run now")
