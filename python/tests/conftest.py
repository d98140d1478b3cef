import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def examples() -> Path:
    return ROOT / "examples"


@pytest.fixture(scope="session")
def smoke_store(tmp_path_factory):
    """A study's smoke profile run once per test session: name -> (store, stats of
    the first run). The study tests and the browser tests share the runs."""
    from tcpeval.studies.runner import run_study

    done: dict[str, tuple[Path, dict]] = {}

    def get(name: str) -> tuple[Path, dict]:
        if name not in done:
            store = tmp_path_factory.mktemp(f"smoke-{name}") / "store"
            done[name] = store, run_study(name, "smoke", store, workers=2)
        return done[name]

    return get


@pytest.fixture(autouse=True)
def _close_figures():
    """Study reports return pyplot figures that only report_study closes (after
    saving them); a test that builds a report without saving it closes them here,
    so a test session does not pile up figures (matplotlib warns past 20)."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")
