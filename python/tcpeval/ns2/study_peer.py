"""A study's own cells on tcpeval and on ns-2 (issue 30): every cell whose flows
ns-2 can run (its native agents or TCP-Linux modules, forward flows), same
scenario and seed, aggregate throughput side by side. For the studies that ran
ns-2 themselves (dalton2004), this separates what ns-2 does from what the paper
reports.

    python -m tcpeval.ns2 study dalton2004 [--profile quick] [--seeds 1] [--workers 2]
"""

from __future__ import annotations

import copy
import statistics
from concurrent.futures import ProcessPoolExecutor

from ..errors import ScenarioError


def cells(study: str, profile: str) -> list[tuple[str, dict, str]]:
    """(cell name, scenario with the study's stack on every flow, stack)."""
    from ..studies import STUDIES

    design = STUDIES[study].design(profile)
    out = []
    for c in design.cells:
        doc = copy.deepcopy(c.scenario)
        for f in doc["flows"]:
            f.setdefault("stack", design.stack)
        out.append((c.name, doc, design.stack))
    return out


def run_cell(item: tuple[str, dict, str, int, str]) -> dict:
    """One cell and seed on both simulators; an ns-2 refusal is kept as text."""
    from .. import run as tcpeval_run
    from . import run as ns2_run

    name, doc, _, seed, agents = item
    ours = sum(f["throughput_mbps"] for f in tcpeval_run(doc, seed=seed).summary["flows"])
    try:
        theirs = ns2_run(doc, seed=seed, agents=agents)["aggregate_mbps"]
    except ScenarioError as e:
        theirs = str(e)
    return {"cell": name, "seed": seed, "tcpeval": ours, "ns2": theirs}


def table(results: list[dict]) -> tuple[list[str], str]:
    """Markdown rows (cell, tcpeval, ns-2, ratio; means over seeds) and a count of
    cells within 10%."""
    by_cell: dict[str, list[dict]] = {}
    for r in results:
        by_cell.setdefault(r["cell"], []).append(r)
    rows = ["| cell | seeds | tcpeval Mbit/s | ns-2 Mbit/s | ratio |", "|---|---|---|---|---|"]
    within = compared = 0
    for name, rs in by_cell.items():
        ours = statistics.mean(r["tcpeval"] for r in rs)
        if any(isinstance(r["ns2"], str) for r in rs):
            rows.append(f"| {name} | {len(rs)} | {ours:.2f} | not run: {rs[0]['ns2']} | |")
            continue
        theirs = statistics.mean(r["ns2"] for r in rs)
        ratio = ours / theirs if theirs else float("nan")
        compared += 1
        within += abs(ratio - 1) <= 0.1
        rows.append(f"| {name} | {len(rs)} | {ours:.2f} | {theirs:.2f} | {ratio:.3f} |")
    return rows, f"{within} of {compared} cells within 10% of ns-2"


def run_study(study: str, profile: str, seeds: list[int], workers: int, match: str = "",
              cc: tuple[str, ...] = ()) -> list[dict]:
    """Every matching cell x seed; `cc` keeps only cells whose flows all run those."""
    items = []
    for name, doc, stack in cells(study, profile):
        if match not in name or (cc and any(f["cc"] not in cc for f in doc["flows"])):
            continue
        agents = "native" if stack == "ns2" else "linux"
        items += [(name, doc, stack, s, agents) for s in seeds]
    if not items:
        raise ScenarioError(f"--match: no cell of {study} matches {match!r}")
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run_cell, items))
