"""The testbed's BPF congestion controls (issue 32): the generated parameter
header follows the engine's defaults, `testbed check` says what each algorithm
is (kernel, BPF, unavailable and why), refusals name the flow, and on a kernel
with BPF struct_ops a run loads the algorithm, the kernel reports it on the
sender's socket, and it is unloaded afterwards (also by cleanup). The
algorithms' behaviour against the simulator's is the cargo test
crates/tcpeval-sim/tests/bpf_agreement.rs."""

import importlib.util
import json
import math
import os
import re
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_check_says_why_dctcp_and_bbr3_have_no_program():
    from tcpeval.testbed import kernel_cc

    assert "ECN marks" in kernel_cc.bpf_problem("dctcp")
    assert "not in mainline" in kernel_cc.bpf_problem("bbr3")
    assert kernel_cc.bpf_problem("nosuch") == "no BPF program is written for it"


def test_the_parameter_header_carries_the_engines_defaults_in_fixed_point():
    params = json.loads(_sim.algorithm_params())
    text = gen_params.header(params)
    defines = dict(re.findall(r"#define (\w+) (-?\d+)", text))
    assert len(defines) == len(gen_params.WANTED)
    for alg, name, macro, scale in gen_params.WANTED:
        scaled = float(params[alg][name]) * scale
        if (alg, name) in gen_params.CEILED:
            want = math.ceil(scaled)
        else:
            want = int(scaled) if alg in gen_params.TRUNCATED else round(scaled)
        assert int(defines[macro]) == want, macro
        assert abs(int(defines[macro]) - scaled) < 1, macro  # the fixed point keeps the value


@settings(max_examples=50, deadline=None)
@given(st.data())
def test_the_header_scales_any_parameter_values(data):
    params = json.loads(_sim.algorithm_params())
    for alg, name, _, _ in gen_params.WANTED:
        params[alg][name] = data.draw(st.floats(0, 1e6) if isinstance(params[alg][name], float)
                                      else st.integers(0, 10**6), label=f"{alg}.{name}")
    defines = dict(re.findall(r"#define (\w+) (-?\d+)", gen_params.header(params)))
    for alg, name, macro, scale in gen_params.WANTED:
        assert abs(int(defines[macro]) - float(params[alg][name]) * scale) <= 1, macro


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


# The programs added after scalable's end-to-end test: one kernel run carries
# them all, a flow each, so the check stays one short run.
LATER = ["westwood", "lp", "hstcp-lp", "fast", "compound"]
LATER_KERNEL = [kernel_cc.kernel_name(n) for n in LATER]


def _why_not_later() -> str | None:
    for name in LATER_KERNEL:
        if kernel_cc.bpf_problem(name):
            return f"BPF {name} cannot be loaded here: {kernel_cc.bpf_problem(name)}"
        if name in kernel_cc.available():
            return f"{name} is registered already (a concurrent run)"
    return testbed.refuse_reason(engine({"flows": [{"cc": n} for n in LATER],
                                         "network": {"rtt": "0ms"}, "run": {"backend": "testbed"}}))


@pytest.mark.skipif(_why_not_later() is not None, reason=str(_why_not_later()))
def test_one_run_loads_each_later_bpf_algorithm_and_the_kernel_runs_it():
    config = engine({"network": {"bottleneck": "50Mbps", "rtt": "0ms", "buffer": "100pkt"},
                     "flows": [{"cc": n} for n in LATER],
                     "run": {"duration": "1s", "interval": "0.5s", "backend": "testbed"}})
    raw = testbed.run_engine_config(config)
    assert [f["kernel_cc"] for f in raw["flows"]] == LATER_KERNEL  # getsockopt on each sender
    for flow in raw["flows"]:  # the LP flows yield to westwood by design: little, not nothing
        assert flow["bytes_delivered"] > 10_000, flow["kernel_cc"]
    assert not set(LATER_KERNEL) & set(kernel_cc.available()), "left registered after the run"


def test_every_program_has_a_name_the_kernel_accepts():
    """A BPF tcp_congestion_ops name holds letters, digits, '_' and '.' only
    (kernel/bpf/syscall.c bpf_obj_name_cpy): HSTCP-LP goes by its alias."""
    assert kernel_cc.kernel_name("hstcp-lp") == "hstcplp" and "hstcplp" in kernel_cc.written()
    for name in kernel_cc.written():
        assert re.fullmatch(r"[A-Za-z0-9_.]{1,15}", name), name


def test_a_default_the_programs_are_written_for_is_checked():
    params = json.loads(_sim.algorithm_params())
    params["hstcp-lp"]["eci_decrease"] = "hstcp"
    with pytest.raises(SystemExit, match="hstcp-lp.eci_decrease"):
        gen_params.header(params)


@needs_bpf
def test_cleanup_unregisters_what_a_killed_run_left():
    map_id = kernel_cc.register("scalable")
    assert map_id is not None and "scalable" in kernel_cc.available()
    assert "scalable" in kernel_cc.unregister_all()
    assert "scalable" not in kernel_cc.available()


def test_compare_backends_says_how_many_testbed_runs_a_valid_one_needed(monkeypatch, tmp_path):
    """Two spoiled runs, then a valid one: the comparison records 3 runs and why
    the first two were spoiled (a simulated result stands in for the kernel's)."""
    import importlib

    from tcpeval.testbed.compare import InvalidRun, compare

    run_mod = importlib.import_module("tcpeval.run")
    sim = run_mod.simulate
    verdicts = iter([["delay line late: 335 us"], ["delay line late: 346 us"], []])

    def fake(resolved):
        raw = sim(engine_config(resolved))
        if resolved["meta"]["backend"] == "testbed":
            reasons = next(verdicts)
            raw["validity"] = {"valid": not reasons, "reasons": reasons, "gates": []}
        return raw, 0.1

    monkeypatch.setattr(run_mod, "run_backend", fake)
    data = {"network": {"bottleneck": "10Mbps", "rtt": "20ms"}, "flows": [{}],
            "run": {"duration": "2s"}}
    cmp = compare(data, attempts=3)
    assert cmp["testbed_runs"] == {"needed": 3, "invalid_reasons": [
        ["delay line late: 335 us"], ["delay line late: 346 us"]]}
    verdicts = iter([["late"], ["later"]])
    with pytest.raises(InvalidRun, match="later"):
        compare(data, attempts=2)
    # The CLI prints it under the table.
    from typer.testing import CliRunner

    from tcpeval import cli

    scenario = tmp_path / "s.toml"
    scenario.write_text('[network]\nbottleneck = "10Mbps"\nrtt = "20ms"\n[[flows]]\n'
                        '[run]\nduration = "2s"\n')
    verdicts = iter([["delay line late: 400 us"], []])
    r = CliRunner().invoke(cli.app, ["compare-backends", str(scenario), "--attempts", "2"])
    assert r.exit_code == 0, r.output
    assert "testbed runs needed for a valid one: 2" in r.output
    assert "spoiled: delay line late: 400 us" in r.output


def test_a_run_unloads_only_what_it_loaded_even_when_it_fails(monkeypatch):
    """kernel_cc.loaded: built-in algorithms are not loaded; one another run has
    registered is used and left alone; ours are unregistered after an error."""
    calls = []
    monkeypatch.setattr(kernel_cc, "available", lambda: ["reno", "cubic", "bbr", "bic"])
    monkeypatch.setattr(kernel_cc, "register",
                        lambda name: calls.append(("register", name)) or 7)
    monkeypatch.setattr(kernel_cc, "unregister",
                        lambda map_id: calls.append(("unregister", map_id)))
    with pytest.raises(RuntimeError), kernel_cc.loaded(["newreno", "cubic", "bic", "scalable",
                                                        "scalable"]):
        assert calls == [("register", "scalable")]
        raise RuntimeError("the run failed")
    assert calls == [("register", "scalable"), ("unregister", 7)]


def test_a_missing_bpftool_is_named(monkeypatch):
    if os.geteuid() != 0 or not os.path.exists("/sys/kernel/btf/vmlinux"):
        pytest.skip("the check for tools comes after those for root and BTF")
    real = shutil.which
    monkeypatch.setattr(kernel_cc.shutil, "which", lambda t: None if t == "bpftool" else real(t))
    assert "bpftool is missing" in kernel_cc.bpf_problem(kernel_cc.written()[0])


def test_the_grid_reports_mean_ci_and_verdict_per_cell():
    """grid.run_cell with stand-in comparisons: the statistics are the mean and
    t-interval of the repetitions, and a cell beyond a goal says which."""
    from tcpeval.testbed import grid

    def cmp(agg_sim, agg_k, shares_k, srtt_rel, needed=1):
        flows = [{"throughput_mbps": {"sim": agg_sim / 2, "testbed": agg_k * s},
                  "srtt_ms": {"rel_diff": srtt_rel}} for s in shares_k]
        return {"flows": flows, "aggregate_mbps": {"rel_diff": (agg_k - agg_sim) / agg_sim},
                "drops": {"sim": 10, "testbed": 30}, "testbed_runs": {"needed": needed}}

    reps = iter([cmp(100, 99, (0.5, 0.5), 0.02), cmp(100, 98, (0.6, 0.4), 0.04, needed=2),
                 cmp(100, 97, (0.5, 0.5), 0.06)])
    cell = grid.Cell("scalable", 2, 50, 1)
    r = grid.run_cell("s.toml", cell, 3, 3, lambda *a, **k: next(reps))
    mean, half = r["stats"]["aggregate"]
    assert mean == pytest.approx(-0.02)
    assert half == pytest.approx(4.303 * 0.01 / 3 ** 0.5)  # sd 0.01, t(0.975, 2)
    # The larger flow's share, simulator minus kernel: 0, 0.5 - 0.6, 0.
    assert r["stats"]["share"][0] == pytest.approx(-0.1 / 3)
    # Alike flows: the larger share is compared with the larger, whichever flow has it.
    swapped = cmp(100, 100, (0.4, 0.6), 0.0)
    swapped["flows"][0]["throughput_mbps"]["sim"] = 60
    swapped["flows"][1]["throughput_mbps"]["sim"] = 40
    assert grid.metrics(swapped)["share"] == pytest.approx(0.0)
    assert r["runs"] == 4 and r["misses"] == []
    assert 'flows.0.count=2' in cell.overrides() and 'network.buffer="1bdp"' in cell.overrides()
    bad = grid.verdict({"aggregate": (0.05, 0), "share": (0.2, 0.15), "srtt": (-0.01, 0)})
    assert bad == ["aggregate +0.050 beyond 0.03 (whole interval beyond)",
                   "share +0.200 beyond 0.1 (interval reaches it)"]
    assert "| scalable x2 50 ms 1 BDP | -2.0% ±" in grid.markdown([r])
    assert len(grid.cells(["reno", "bic"])) == 2 * 2 * 3 * 3
    assert len(grid.cells(["reno"], quick=True)) == 2
    one = grid.cells(["reno", "fast"], only=["fast x2 20 ms 1 BDP"])
    assert [c.name for c in one] == ["fast x2 20 ms 1 BDP"]
    assert [c.buffer_bdp for c in grid.cells(["reno"], only=["* x1 100 ms *"])] == [0.5, 1, 2]
    assert grid.cells(["reno"], only=["reno x3 *"]) == []


def test_a_grid_cell_share_difference_is_signed_so_spread_is_not_bias():
    """Each side splitting 60/40 in one run and 50/50 in the other, in turn, is
    spread, not a difference: the cell's share difference is 0; a simulator
    that splits 70/30 every time against an even kernel is +0.2, shown."""
    from tcpeval.testbed import grid

    def cmp(sim, ker):
        flows = [{"throughput_mbps": {"sim": s, "testbed": k}, "srtt_ms": {"rel_diff": 0.0}}
                 for s, k in zip(sim, ker, strict=True)]
        return {"flows": flows, "aggregate_mbps": {"rel_diff": 0.0},
                "drops": {"sim": 0, "testbed": 0}, "testbed_runs": {"needed": 1}}

    cell = grid.Cell("reno", 2, 20, 1)
    spread = grid.summarize_cell(cell, [cmp((60, 40), (50, 50)), cmp((50, 50), (40, 60))])
    assert spread["stats"]["share"][0] == pytest.approx(0.0) and spread["misses"] == []
    uneven = grid.summarize_cell(cell, [cmp((70, 30), (50, 50)), cmp((30, 70), (49, 51))])
    assert uneven["stats"]["share"][0] == pytest.approx(0.195)
    assert uneven["shown"] == ["share"]


def test_the_grid_refuses_an_algorithm_not_offered_with_exit_2(capsys):
    from tcpeval.testbed.__main__ import main

    assert main(["grid", "--cc", "nosuch"]) == 2
    assert "--cc: nosuch not offered here" in capsys.readouterr().err
