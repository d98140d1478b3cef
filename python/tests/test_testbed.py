"""Testbed capability check and refusals (issue 9, first part)."""

import json
import os
import subprocess
import sys

import pytest

from tcpeval import testbed
from tcpeval.scenario import load_scenario, resolve

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and tc need root")


@needs_root
def test_check_probes_the_kernel_and_cleans_up():
    before = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    caps = testbed.check()
    assert "reno" in caps["congestion_controls"]
    assert caps["qdiscs"]["pfifo"] and caps["qdiscs"]["tbf"]
    assert isinstance(caps["netem"], bool)
    after = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "tcpe-probe" not in after and before == after


def caps(**over):
    base = {"root": True, "congestion_controls": ["reno", "cubic", "bbr"],
            "qdiscs": {"red": False, "netem": False}, "netem": False,
            "envelope": {"max_rate_with_delay_bps": 200e6}}
    return {**base, **over}


def engine(data):
    return {k: v for k, v in resolve(load_scenario(data)).items() if k != "meta"}


@pytest.mark.parametrize("data,needle", [
    ({"flows": [{"cc": "highspeed"}]}, "flows[0].cc: the kernel offers bbr, cubic, reno"),
    ({"network": {"queue": "red"}}, "no red qdisc"),
    ({"network": {"bottleneck": "1Gbps"}}, "beyond this machine's delay line"),
])
def test_scenarios_the_kernel_cannot_run_are_refused(data, needle):
    assert needle in testbed.refuse_reason(engine(data), caps())


def test_a_runnable_scenario_is_not_refused():
    assert testbed.refuse_reason(engine({"flows": [{"cc": "newreno"}]}), caps()) is None


def test_cli_run_on_the_testbed_exits_2_with_the_reason(tmp_path, examples):
    out = tmp_path / "r"
    p = subprocess.run([sys.executable, "-m", "tcpeval.cli", "run",
                        str(examples / "reno_single.toml"), "--backend", "testbed",
                        "--out", str(out)], capture_output=True, text=True)
    assert p.returncode == 2 and "backend testbed" in p.stderr
    assert not out.exists()


@needs_root
def test_cli_check_json():
    p = subprocess.run([sys.executable, "-m", "tcpeval.cli", "testbed", "check", "--json"],
                       capture_output=True, text=True)
    assert p.returncode == 0
    assert "congestion_controls" in json.loads(p.stdout)


@needs_root
def test_cleanup_removes_only_its_own_namespaces():
    import uuid

    mine, other = f"tcpe-test-{uuid.uuid4().hex[:6]}", f"other-{uuid.uuid4().hex[:6]}"
    for ns in (mine, other):
        subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        p = subprocess.run([sys.executable, "-m", "tcpeval.cli", "testbed", "cleanup"],
                           capture_output=True, text=True)
        assert p.returncode == 0 and mine in p.stdout
        left = testbed.namespaces()
        assert mine not in left and other in left
    finally:
        for ns in (mine, other):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_cleanup_refuses_a_foreign_prefix():
    with pytest.raises(ValueError, match="refusing"):
        testbed.cleanup("x")
