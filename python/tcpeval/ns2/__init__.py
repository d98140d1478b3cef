"""ns-2.35 with TCP-Linux as a peer of the engine: translate a dumbbell scenario
into an ns-2 script, run `ns`, and read back the metrics tcpeval's summary has
(docs/crosscheck.md).

    from tcpeval import ns2
    ns2.run("examples/reno_loss.toml", overrides=["run.duration=30s"])
"""

from __future__ import annotations

from pathlib import Path

from .runner import Ns2Unavailable, cwnd_trace, ns_binary, parse_output, run_script, summarize
from .translate import CC_MODULE, KERNEL_VERSION, NS2_MODULES, Ns2Script, translate

__all__ = ["CC_MODULE", "KERNEL_VERSION", "NS2_MODULES", "Ns2Script", "Ns2Unavailable",
           "ns_binary", "run", "run_translated", "script_for", "translate"]


def script_for(source, overrides=(), seed: int | None = None, agents: str = "linux",
               abc: int | None = None) -> tuple[Ns2Script, dict]:
    """The ns-2 script of a scenario (path, dict or model) and its resolved form;
    agents "linux" (TCP-Linux) or "native" (ns-2's own Sack1, Vegas...)."""
    from ..scenario import load_scenario, resolve

    base = Path(source).parent if isinstance(source, (str, Path)) else None
    resolved = resolve(load_scenario(source, list(overrides)), seed=seed, base_dir=base)
    return translate(resolved, agents, abc), resolved


def run(source, overrides=(), seed: int | None = None, agents: str = "linux",
        abc: int | None = None, timeout_s: float | None = None, trace: bool = False) -> dict:
    """Run a scenario on ns-2; its summary (tcpeval's names where both have one).
    With `trace`, also summary["trace"]: the cwnd of every stream (engine flow)
    each trace interval, {"t_s": [...], "cwnd_pkts": {label: [...]}}."""
    script, resolved = script_for(source, overrides, seed, agents, abc)
    return run_translated(script, resolved, agents, abc, timeout_s, trace)


def run_translated(script: Ns2Script, resolved: dict, agents: str = "linux",
                   abc: int | None = None, timeout_s: float | None = None,
                   trace: bool = False) -> dict:
    """Run a script `script_for` made; the summary `run` returns."""
    out, wall = run_script(script, timeout_s)
    raw = parse_output(out, script)
    summary = summarize(raw, script, resolved["meta"]["logical_flows"], resolved["seed"], wall)
    if trace:
        summary["trace"] = cwnd_trace(raw, script)
    summary["agents"] = agents
    summary["abc"] = abc
    return summary
