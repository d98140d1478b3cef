"""Background traffic: a recipe resolved from the scenario. Its long-lived flows
are expanded into engine flows when the run starts; its web sources go to the
engine as they are (the engine's `web` section), which makes each transfer when
it arrives (docs/traffic.md)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .. import traffic
from ..errors import ScenarioError
from .limits import MAX_WEB_FLOWS, _check_times
from .models import Scenario

# Random streams of a run, derived from its seed: each use has its own, so adding
# one never shifts another's draws (resolution.START_JITTER_STREAM is another).
BACKGROUND_STREAM = 0xB6
# Who draws the web transfers, recorded in each web source of the recipe so the
# run key tells runs of one generator from another's: the front end's numpy
# expansion before (no field), the engine's generator now.
WEB_GENERATOR = "engine-1"


def _background(sc: Scenario, rate_bps: float, duration_s: float,
                base_dir: Path | None) -> dict | None:
    """Background traffic as a recipe: every input of its expansion, resolved to
    numbers (an empirical RTT table is read in now), so the recipe alone fixes
    the flows and the run key changes with any input. The flows themselves are
    made only when the engine needs them (`engine_config`): a 600 s run with web
    traffic expands into ~10^5 flows, and a sweep of such runs would otherwise
    hold gigabytes while it plans."""
    bg = sc.background
    if not any(ll.count for ll in bg.long_lived) and not any(w.load > 0 for w in bg.web):
        return None
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
    return {"seed": sc.run.seed, "rate_bps": rate_bps, "long_lived": long_lived, "web": web}


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
    out: list[dict] = []
    for ll in recipe["long_lived"]:
        out += traffic.long_lived_flows(
            count=ll["count"], rng=rng, rtts=_rtt_model(ll["rtt"]), cc=ll["cc"],
            jitter_s=ll["jitter_s"], direction=ll["direction"], max_window=ll["max_window"])
    return out


def engine_web(recipe: dict) -> list[dict]:
    """The engine's `web` sources of a recipe (config.rs WebConfig); the engine
    draws their transfers from the run's seed."""
    return [{"load": w["load"], "rate_bps": recipe["rate_bps"],
             "start_ns": round(w["start_s"] * 1e9), "stop_ns": round(w["stop_s"] * 1e9),
             "sizes": w["sizes"], "rtt": _json_rtt(w["rtt"]), "cc": w["cc"],
             "direction": w["direction"], "max_window_bytes": w["max_window"]}
            for w in recipe["web"] if w["load"] > 0]


def _json_rtt(rtt: dict) -> dict:
    """An RTT model with its table as lists (the recipe's rows are tuples)."""
    return {**rtt, "table": [list(r) for r in rtt["table"]]}
