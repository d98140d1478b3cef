"""Which results `make validate-studies` checks for each study: the full
profile's stored results where they exist, the quick profile otherwise.

Set TCPEVAL_FULL_STORES to a directory holding one result store per study,
named after it (DIR/ha2006, DIR/tengig, ...), each made by
`tcpeval study run NAME --profile full --out DIR/NAME`. A study with such a
store is checked on its full-profile verdicts, read from the stored runs (no
run is made); a study without one runs its quick profile (minutes). The
choice is a function of the environment and the file system, so tests can
mark an expectation for one profile only at collection time, and the run's
summary says which profile each study was checked on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

FULL_STORES = "TCPEVAL_FULL_STORES"
# study -> what was checked, for the run's summary (conftest.py prints it).
CHECKED: dict[str, str] = {}


def full_store(name: str) -> Path | None:
    """DIR/<name> when it is a store of the study's full profile."""
    root = os.environ.get(FULL_STORES)
    if not root:
        return None
    store = Path(root) / name
    meta = store / "study.json"
    if not meta.exists():
        return None
    info = json.loads(meta.read_text())
    return store if info.get("study") == name and info.get("profile") == "full" else None


def profile_of(name: str) -> str:
    return "full" if full_store(name) else "quick"


def on_quick(name: str, reason: str):
    """An expected failure of the quick profile only: on the full profile's
    stored results the check is an ordinary assertion."""
    return pytest.mark.xfail(profile_of(name) == "quick", reason=reason, strict=True)


def study_report(name: str, tmp_path_factory, quick_store_env: str | None = None) -> Path:
    """The directory of the study's report (its CSV tables): built from the full
    profile's stored results, or from a quick run (into $quick_store_env when
    set, so a recorded quick run resumes)."""
    from tcpeval.studies.runner import report_study, run_study

    store = full_store(name)
    out = tmp_path_factory.mktemp(f"{name}-report")
    if store:
        report_study(name, store, out)
        CHECKED[name] = f"FULL profile, stored results at {store} ({_finished(name, store)})"
        return out
    reuse = os.environ.get(quick_store_env) if quick_store_env else None
    quick = Path(reuse) if reuse else tmp_path_factory.mktemp(name)
    stats = run_study(name, "quick", quick)
    assert stats["failed"] == 0, f"{name}: {stats['failed']} quick runs failed"
    report_study(name, quick, out)
    CHECKED[name] = (f"QUICK profile, run now into {quick} (no full store: set "
                     f"{FULL_STORES} to a directory with {name}/ made by the full profile)")
    return out


def _finished(name: str, store: Path) -> str:
    from tcpeval.studies.runner import completeness, plan_study

    keys = set(plan_study(name, "full")[1].values())
    done = sum((store / "runs" / k / "summary.json").exists() for k in keys)
    return completeness(done, len(keys))
