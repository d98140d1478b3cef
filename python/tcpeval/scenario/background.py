"""Background traffic: a recipe resolved from the scenario. Its long-lived flows
are expanded into engine flows when the run starts; its web sources go to the
engine as they are (the engine's `web` section), which makes each transfer when
it arrives (docs/traffic.md)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .. import _sim, traffic
from ..errors import ScenarioError
from .limits import MAX_WEB_FLOWS, _check_times
from .models import Run, Scenario

# Random streams of a run, derived from its seed: each use has its own, so adding
# one never shifts another's draws (resolution.START_JITTER_STREAM is another).
BACKGROUND_STREAM = 0xB6
# Who draws the web transfers, recorded in each web source of the recipe so the
# run key tells runs of one generator from another's: the front end's numpy
# expansion before (no field), the engine's generator now.
WEB_GENERATOR = "engine-1"
# The run's default stack (today's); a recipe names its stack only when it is
# another, so the keys of runs on today's stack stay what they were.
DEFAULT_STACK = Run.model_fields["stack"].default


def _background(sc: Scenario, rate_bps: float, duration_s: float,
                base_dir: Path | None) -> dict | None:
    """Background traffic as a recipe: every input of its expansion, resolved to
    numbers (an empirical RTT table is read in now), so the recipe alone fixes
    the flows and the run key changes with any input. The flows themselves are
    made only when the engine needs them (`engine_config`): a 600 s run with web
    traffic expands into ~10^5 flows, and a sweep of such runs would otherwise
    hold gigabytes while it plans.

    Background traffic runs the run's stack (`[run] stack`, issue 28): a study
    on linux-2.6.22 has its background on linux-2.6.22 too."""
    bg = sc.background
    if not any(ll.count for ll in bg.long_lived) and not any(w.load > 0 for w in bg.web):
        return None
    _check_stack(sc)
    try:
        long_lived = [{"count": ll.count, "cc": ll.cc, "jitter_s": ll.jitter,
                       "direction": ll.direction, "max_window": ll.window,
                       "rtt": dataclasses.asdict(ll.rtt.model(base_dir))}
                      for ll in bg.long_lived]
        web = [{"generator": WEB_GENERATOR, "load": w.load, "cc": w.cc, "direction": w.direction,
                "max_window": w.window, "start_s": w.start,
                "stop_s": w.stop if w.stop is not None else duration_s,
                "sizes": dataclasses.asdict(w.sizes.model()),
                "rtt": dataclasses.asdict(w.rtt.model(base_dir))}
               for w in bg.web]
    except (ValueError, OSError) as e:
        raise ScenarioError(f"background: {e}") from None
    for j, w in enumerate(web):
        _check_web(j, w, rate_bps, duration_s)
    stack = {} if sc.run.stack == DEFAULT_STACK else {"stack": sc.run.stack}
    return {"seed": sc.run.seed, "rate_bps": rate_bps, "long_lived": long_lived, "web": web,
            **stack}


def _check_stack(sc: Scenario) -> None:
    """Each background source's algorithm must exist in the run's stack; the
    error names the source's `cc` and what the stack offers (an unknown stack
    is run.stack's error, found with the flows)."""
    sources = [("long_lived", i, ll.cc) for i, ll in enumerate(sc.background.long_lived)]
    sources += [("web", j, w.cc) for j, w in enumerate(sc.background.web)]
    for kind, i, cc in sources:
        try:
            _sim.stack_offers(sc.run.stack, cc)
        except ValueError as e:
            field, message = e.args
            where = "run.stack" if field == "stack" else f"background.{kind}[{i}].cc"
            raise ScenarioError(f"{where}: {message}") from None


def _check_web(j: int, w: dict, rate_bps: float, duration_s: float) -> None:
    field = f"background.web[{j}]"
    _check_times(field, [w["start_s"]], w["stop_s"], duration_s)
    mean = traffic.SizeModel(**w["sizes"]).mean()
    expected = w["load"] * rate_bps * (w["stop_s"] - w["start_s"]) / (8 * mean)
    if not expected <= MAX_WEB_FLOWS:
        raise ScenarioError(f"{field}.load: about {expected:.3g} transfers (load x rate x "
                            f"time / mean size {mean:.3g} B); at most {MAX_WEB_FLOWS:.0e}")


def _rtt_model(d: dict) -> traffic.RttModel:
    return traffic.RttModel(**{**d, "table": tuple(tuple(r) for r in d["table"])})


def expand_background(recipe: dict) -> list[dict]:
    """Engine flows of a recipe's long-lived sources (one seeded stream of their
    own, in the scenario's order)."""
    import numpy as np

    rng = np.random.default_rng([recipe["seed"], BACKGROUND_STREAM])
    stack = recipe.get("stack", DEFAULT_STACK)
    out: list[dict] = []
    for ll in recipe["long_lived"]:
        out += traffic.long_lived_flows(
            count=ll["count"], rng=rng, rtts=_rtt_model(ll["rtt"]), cc=ll["cc"],
            jitter_s=ll["jitter_s"], direction=ll["direction"], max_window=ll["max_window"])
    return [{**f, **_stack_fields(stack)} for f in out]


def _stack_fields(stack: str) -> dict:
    """A background flow's stack and that stack's initial window and delayed-ACK
    timer out of the box (as resolution gives a scenario flow that sets neither);
    today's stack adds nothing, the engine's defaults being its values."""
    if stack == DEFAULT_STACK:
        return {}
    iw, delack_ns = _sim.stack_defaults(stack)
    return {"stack": stack, "initial_cwnd": iw,
            **({} if delack_ns is None else {"delack_timeout_ns": delack_ns})}


def engine_web(recipe: dict) -> list[dict]:
    """The engine's `web` sources of a recipe (config.rs WebConfig); the engine
    draws their transfers from the run's seed."""
    return [{"load": w["load"], "rate_bps": recipe["rate_bps"],
             "start_ns": round(w["start_s"] * 1e9), "stop_ns": round(w["stop_s"] * 1e9),
             "sizes": w["sizes"], "rtt": _json_rtt(w["rtt"]), "cc": w["cc"],
             "direction": w["direction"], "max_window_bytes": w["max_window"],
             **({"stack": recipe["stack"]} if "stack" in recipe else {})}
            for w in recipe["web"] if w["load"] > 0]


def _json_rtt(rtt: dict) -> dict:
    """An RTT model with its table as lists (the recipe's rows are tuples)."""
    return {**rtt, "table": [list(r) for r in rtt["table"]]}
