"""`pip install .` from the checkout builds the engine through pyproject's
build backend (maturin) and installs a working tcpeval into a fresh venv
(issue 31 item 6). Minutes (a release build of the engine, the dependencies):
it runs only under `make pip-test`."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not os.environ.get("TCPEVAL_PIP_TEST"),
                                reason="slow: runs under `make pip-test` only")

SCENARIO = """
[network]
bottleneck = "10Mbps"
rtt = "20ms"

[[flows]]
cc = "cubic"

[run]
duration = "2s"
"""


def test_pip_install_of_the_checkout_builds_and_runs(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    # Its own cargo target directory: the PEP 517 build passes other settings
    # than `maturin develop`, and sharing target/ would make each rebuild.
    env = {**os.environ, "CARGO_TARGET_DIR": str(ROOT / "target" / "pip-build")}
    env.pop("VIRTUAL_ENV", None)
    subprocess.run([venv / "bin" / "pip", "install", "-q", ROOT], check=True, env=env)
    run_env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}

    def tcpeval(*args):
        return subprocess.run([venv / "bin" / "tcpeval", *args], cwd=tmp_path, env=run_env,
                              capture_output=True, text=True)

    want = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert tcpeval("--version").stdout.strip() == f"tcpeval {want}"
    (tmp_path / "s.toml").write_text(SCENARIO)
    res = tcpeval("run", "s.toml", "--out", "r", "--json")
    assert res.returncode == 0, res.stderr
    flow = json.loads(res.stdout)["flows"][0]
    assert flow["cc"] == "cubic" and 5 < flow["throughput_mbps"] <= 10
    assert (tmp_path / "r" / "flows.parquet").is_file()
    # The installed package ran (not the checkout), with its extras declared.
    code = ("import importlib.metadata as m, tcpeval; print(tcpeval.__file__); "
            "print(*m.metadata('tcpeval').get_all('Provides-Extra'))")
    out = subprocess.run([venv / "bin" / "python", "-c", code], cwd=tmp_path, env=run_env,
                         capture_output=True, text=True, check=True).stdout.split("\n")
    assert Path(out[0]).is_relative_to(venv)
    assert {"dask", "dev"} <= set(out[1].split())
