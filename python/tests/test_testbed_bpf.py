"""The testbed's BPF congestion controls (issue 32): the generated parameter
header follows the engine's defaults, `testbed check` says what each algorithm
is (kernel, BPF, unavailable and why), refusals name the flow, and on a kernel
with BPF struct_ops a run loads the algorithm, the kernel reports it on the
sender's socket, and it is unloaded afterwards (also by cleanup). The
algorithms' behaviour against the simulator's is the cargo test
crates/tcpeval-sim/tests/bpf_agreement.rs."""

import importlib.util
import json
import os
import re
import shutil

import pytest

from tcpeval import _sim, testbed
from tcpeval.scenario import engine_config, load_scenario, resolve
from tcpeval.testbed import kernel_cc

_spec = importlib.util.spec_from_file_location("gen_params", kernel_cc.SOURCES / "gen_params.py")
gen_params = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_params)


def engine(data):
    return engine_config(resolve(load_scenario({"flows": [{}], **data})))


def caps(offers):
    return {"root": True, "congestion_controls": ["reno", "cubic", "bbr"], "algorithms": offers,
            "qdiscs": {}, "netem": False, "nfqueue": True, "tun": True, "delay_line": "/bin/true",
            "tools": {}, "envelope": {"max_rate_with_delay_bps": 200e6,
                                      "max_rate_without_delay_bps": 1e9}}


def test_the_parameter_header_carries_the_engines_defaults_in_fixed_point():
    params = json.loads(_sim.algorithm_params())
    text = gen_params.header(params)
    defines = dict(re.findall(r"#define (\w+) (-?\d+)", text))
    assert len(defines) == len(gen_params.WANTED)
    for alg, name, macro, scale in gen_params.WANTED:
        scaled = float(params[alg][name]) * scale
        want = int(scaled) if alg in gen_params.TRUNCATED else round(scaled)
        assert int(defines[macro]) == want, macro
        assert abs(int(defines[macro]) - scaled) < 1, macro  # the fixed point keeps the value


def test_a_parameter_the_engine_dropped_is_named():
    params = json.loads(_sim.algorithm_params())
    del params["bic"]["smooth_part"]
    with pytest.raises(SystemExit, match="bic.smooth_part"):
        gen_params.header(params)


def test_every_bpf_program_is_a_simulator_algorithm():
    assert kernel_cc.written(), "no BPF programs found"
    assert set(kernel_cc.written()) <= set(_sim.algorithms())


def test_an_algorithm_neither_kernel_nor_bpf_offers_is_refused_naming_the_flow():
    offers = {"vegas": {"how": "unavailable", "why": "no BPF program is written for it"},
              "highspeed": {"how": "bpf", "why": "BPF struct_ops"}}
    config = engine({"flows": [{"cc": "highspeed"}, {"cc": "vegas"}]})
    reason = testbed.refuse_reason(config, caps(offers))
    assert reason.startswith("flows[1].cc: the kernel offers bbr, cubic, reno and as BPF highspeed")
    assert "not 'vegas' (no BPF program is written for it)" in reason
    assert testbed.refuse_reason(engine({"flows": [{"cc": "highspeed"}]}), caps(offers)) is None


def test_an_unbuilt_program_is_unavailable_and_says_how_to_build_it(tmp_path, monkeypatch):
    monkeypatch.setenv(kernel_cc.BUILD_ENV, str(tmp_path))
    name = kernel_cc.written()[0]
    offer = kernel_cc.offers([name, "cubic"])
    assert offer["cubic"]["how"] == "kernel"
    assert offer[name]["how"] == "unavailable"
    if os.geteuid() == 0 and shutil.which("bpftool"):
        assert "make setup" in offer[name]["why"]


def _why_no_bpf() -> str | None:
    name = "scalable"
    if kernel_cc.bpf_problem(name):
        return f"BPF {name} cannot be loaded here: {kernel_cc.bpf_problem(name)}"
    if name in kernel_cc.available():
        return f"{name} is registered already (a concurrent run)"
    return testbed.refuse_reason(engine({"flows": [{"cc": name}], "network": {"rtt": "0ms"},
                                          "run": {"backend": "testbed"}}))


needs_bpf = pytest.mark.skipif(_why_no_bpf() is not None, reason=str(_why_no_bpf()))


@needs_bpf
def test_a_run_loads_the_bpf_algorithm_and_the_kernel_runs_it():
    config = engine({"network": {"bottleneck": "50Mbps", "rtt": "0ms", "buffer": "100pkt"},
                     "flows": [{"cc": "scalable"}],
                     "run": {"duration": "1s", "interval": "0.5s", "backend": "testbed"}})
    raw = testbed.run_engine_config(config)
    flow = raw["flows"][0]
    assert flow["kernel_cc"] == "scalable"  # getsockopt(TCP_CONGESTION) on the sender
    assert flow["bytes_delivered"] > 1_000_000
    assert "scalable" not in kernel_cc.available(), "left registered after the run"


@needs_bpf
def test_cleanup_unregisters_what_a_killed_run_left():
    map_id = kernel_cc.register("scalable")
    assert map_id is not None and "scalable" in kernel_cc.available()
    assert "scalable" in kernel_cc.unregister_all()
    assert "scalable" not in kernel_cc.available()
