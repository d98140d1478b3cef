"""Simulator vs kernel: one scenario on both backends, side by side.

The testbed run must pass its validity gates; a spoiled run is repeated (up to
`attempts` times) and, if none is valid, nothing is compared. The result says
how many runs a valid one needed and why the others were spoiled.

The simulator then runs the testbed run's own scenario with each flow started
when the kernel's sender called connect(). The kernel's senders wake a few
milliseconds apart (0.4-5.4 ms late on this VM), and two flows that start even
0.1 ms apart do not share a long path evenly: the later one's slow-start rounds
meet the earlier one's queue and HyStart's delay test ends its slow start at
half the other's window (docs/testbed.md, "Start times"). Starting the
simulator's flows at the same instant would compare a symmetric split no
kernel run can produce.
"""

from __future__ import annotations

import copy
from pathlib import Path


class InvalidRun(RuntimeError):
    """No testbed run of the scenario passed the validity gates."""

    def __init__(self, reasons: list[str]):
        super().__init__("; ".join(reasons))
        self.reasons = reasons


def rel(sim: float | None, kernel: float | None) -> float | None:
    """Relative difference of the kernel's value from the simulator's."""
    if sim is None or kernel is None or sim == 0:
        return None
    return (kernel - sim) / sim


def _pair(sim: float | None, kernel: float | None) -> dict:
    return {"sim": sim, "testbed": kernel, "rel_diff": rel(sim, kernel)}


def compare(scenario: str | Path | dict, *, overrides=(), seed: int | None = None,
            attempts: int = 2) -> dict:
    """Run the scenario on the testbed, then on the simulator with the kernel's
    start times; per-flow throughput and srtt, Jain index and utilization side
    by side."""
    from ..run import run, run_resolved

    reasons: list[str] = []
    invalid: list[list[str]] = []  # each spoiled run's reasons, for the record
    for _ in range(attempts):
        kernel_run = run(scenario, overrides=overrides, seed=seed, backend="testbed")
        kernel = kernel_run.summary
        if kernel["validity"]["valid"]:
            break
        reasons = kernel["validity"]["reasons"]
        invalid.append(reasons)
    else:
        raise InvalidRun(reasons)
    resolved = at_kernel_starts(kernel_run.scenario, kernel_run.raw["flows"])
    cmp = side_by_side(run_resolved(resolved).summary, kernel)
    cmp["testbed_gates"] = [g["gate"] for g in kernel["validity"]["gates"]]
    cmp["testbed_runs"] = {"needed": len(invalid) + 1, "invalid_reasons": invalid}
    return cmp


def side_by_side(sim: dict, kernel: dict) -> dict:
    """Per-flow throughput, srtt and retransmissions, the aggregate, Jain index,
    utilization and drops of two run summaries, the kernel's relative to the
    simulator's."""
    flows = []
    for fs, fk in zip(sim["flows"], kernel["flows"], strict=True):
        flows.append({"flow": fs["label"], "cc": fs["cc"], "rtt_ms": fs["rtt_ms"],
                      "start_ms": fs["start_s"] * 1e3,
                      "throughput_mbps": _pair(fs["throughput_mbps"], fk["throughput_mbps"]),
                      "srtt_ms": _pair(fs["mean_srtt_ms"], fk["mean_srtt_ms"]),
                      "retransmits": _pair(fs["retransmits"], fk["retransmits"])})
    bs, bk = sim["bottleneck"], kernel["bottleneck"]
    return {
        "window_s": sim["window_s"],
        "capacity_mbps": bs["capacity_mbps"],
        "flows": flows,
        "aggregate_mbps": _pair(sum(f["throughput_mbps"] for f in sim["flows"]),
                                sum(f["throughput_mbps"] for f in kernel["flows"])),
        "jain_index": _pair(sim["jain_index"], kernel["jain_index"]),
        "utilization": _pair(bs["utilization"], bk["utilization"]),
        "drops": _pair(bs["drops"], bk["drops"]),
    }


def rescore(scenario: str | Path, stored: dict, *, overrides=(), seed: int | None = None) -> dict:
    """A stored comparison (a `grid --raw` line) with the simulator's side run
    again by today's engine: same scenario, overrides, seed and kernel start
    times; the kernel's side is kept as it was measured. The kernel runs are
    the expensive half (a grid is 25 minutes per algorithm), so a simulator
    change is judged against them without running them again."""
    from ..run import run_resolved
    from ..scenario import load_scenario, resolve

    sc = load_scenario(scenario, [*overrides, 'run.backend="testbed"'])
    resolved = resolve(sc, seed=seed, base_dir=Path(scenario).parent)
    starts = [{"id": i, "connect_ns": round(f["start_ms"] * 1e6)}
              for i, f in enumerate(stored["flows"])]
    sim = run_resolved(at_kernel_starts(resolved, starts)).summary
    out = side_by_side(sim, _kernel_summary(stored))
    return {**stored, **out}


def _kernel_summary(stored: dict) -> dict:
    """The kernel's side of a stored comparison, shaped as the summary fields
    side_by_side reads."""
    flows = [{"throughput_mbps": f["throughput_mbps"]["testbed"],
              "mean_srtt_ms": f["srtt_ms"]["testbed"],
              "retransmits": f["retransmits"]["testbed"]} for f in stored["flows"]]
    return {"flows": flows, "jain_index": stored["jain_index"]["testbed"],
            "bottleneck": {"utilization": stored["utilization"]["testbed"],
                           "drops": stored["drops"]["testbed"]}}


def at_kernel_starts(resolved: dict, kernel_flows: list[dict]) -> dict:
    """The testbed run's resolved scenario for the simulator, each engine flow
    starting when the kernel's sender called connect() (its scenario start where
    the run did not record one)."""
    out = copy.deepcopy(resolved)
    out["meta"]["backend"] = "sim"
    connected = {f["id"]: f.get("connect_ns") for f in kernel_flows}
    for i, flow in enumerate(out["flows"]):
        if connected.get(i) is not None:
            flow["start_ns"] = max(flow["start_ns"], connected[i])
    return out
