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
