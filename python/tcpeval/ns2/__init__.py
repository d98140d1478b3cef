"""ns-2.35 with TCP-Linux as a peer of the engine: translate a dumbbell scenario
into an ns-2 script, run `ns`, and read back the metrics tcpeval's summary has
(docs/crosscheck.md).

    from tcpeval import ns2
    ns2.run("examples/reno_loss.toml", overrides=["run.duration=30s"])
"""

from __future__ import annotations

from pathlib import Path

from .runner import Ns2Unavailable, ns_binary, parse_output, run_script, summarize
from .translate import CC_MODULE, KERNEL_VERSION, NS2_MODULES, Ns2Script, translate

__all__ = ["CC_MODULE", "KERNEL_VERSION", "NS2_MODULES", "Ns2Script", "Ns2Unavailable",
           "ns_binary", "run", "script_for", "translate"]


def script_for(source, overrides=(), seed: int | None = None, agents: str = "linux",
               abc: int | None = None) -> tuple[Ns2Script, dict]:
    """The ns-2 script of a scenario (path, dict or model) and its resolved form;
    agents "linux" (TCP-Linux) or "native" (ns-2's own Sack1, Vegas...)."""
    from ..scenario import load_scenario, resolve

    base = Path(source).parent if isinstance(source, (str, Path)) else None
    resolved = resolve(load_scenario(source, list(overrides)), seed=seed, base_dir=base)
    return translate(resolved, agents, abc), resolved


def run(source, overrides=(), seed: int | None = None, agents: str = "linux",
        abc: int | None = None, timeout_s: float | None = None) -> dict:
    """Run a scenario on ns-2; its summary (tcpeval's names where both have one)."""
    script, resolved = script_for(source, overrides, seed, agents, abc)
    out, wall = run_script(script, timeout_s)
    summary = summarize(parse_output(out, script), script, resolved["meta"]["logical_flows"],
                        resolved["seed"], wall)
    summary["agents"] = agents
    summary["abc"] = abc
    return summary
