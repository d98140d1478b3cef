"""The wheel of `make wheel` installs into a fresh venv and runs the demo there
without cargo (issue 31 item 6). Minutes (a venv, the dependencies, the demo):
it runs only under `make wheel-test`, which builds the wheel first."""

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not os.environ.get("TCPEVAL_WHEEL_TEST"),
                                reason="slow: runs under `make wheel-test` only")


def test_the_wheel_installs_without_cargo_and_runs_the_demo(tmp_path):
    wheels = sorted((ROOT / "target" / "wheels").glob("tcpeval-*.whl"),
                    key=lambda p: p.stat().st_mtime)
    assert wheels, "no wheel in target/wheels: `make wheel` builds it"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([venv / "bin" / "pip", "install", "-q", wheels[-1]], check=True)
    # Neither cargo nor the checkout: the venv's bin and the system's.
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    assert shutil.which("cargo", path=env["PATH"]) is None

    def tcpeval(*args):
        return subprocess.run([venv / "bin" / "tcpeval", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True)

    want = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert tcpeval("--version").stdout.strip() == f"tcpeval {want}"
    demo = tcpeval("demo", "--out", "demo")
    assert demo.returncode == 0, demo.stderr
    assert (tmp_path / "demo" / "summary.json").is_file()
    assert (tmp_path / "demo" / "report.html").is_file()
    # The installed package, not the checkout, ran.
    code = "import tcpeval; print(tcpeval.__file__)"
    where = subprocess.run([venv / "bin" / "python", "-c", code], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(venv)
