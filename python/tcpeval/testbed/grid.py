"""The simulator-vs-kernel agreement grid (issue 32 goal 3): every cell of
algorithm x flows x RTT x buffer compared `reps` times on valid testbed runs,
each metric's mean and 95% confidence interval, and a verdict against the
issue's goals (aggregate within 3%, per-flow shares within 0.1, srtt within
10%). `python -m tcpeval.testbed grid` runs it and prints a Markdown table.

A cell takes about a minute per repetition on 2 vCPUs (a 20 s run on each
backend plus setup), so the full grid is hours; `--quick` runs one RTT and
buffer per algorithm.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import product
from pathlib import Path

KERNEL = ("reno", "cubic", "bbr")
FLOWS = (1, 2)
RTTS_MS = (20, 50, 100)
BUFFERS_BDP = (0.5, 1, 2)
# The goals: |aggregate rel. diff| <= 3%, |share diff| <= 0.1, |srtt rel. diff| <= 10%.
GOALS = {"aggregate": 0.03, "share": 0.1, "srtt": 0.10}
# Student's t, 97.5% quantile, by degrees of freedom (normal beyond 10).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228}


@dataclass(frozen=True)
class Cell:
    cc: str
    flows: int
    rtt_ms: int
    buffer_bdp: float

    @property
    def name(self) -> str:
        return f"{self.cc} x{self.flows} {self.rtt_ms} ms {self.buffer_bdp:g} BDP"

    @classmethod
    def parse(cls, name: str) -> Cell:
        """The cell a name (`Cell.name`) stands for."""
        cc, flows, rtt, _, buffer, _ = name.split()
        return cls(cc, int(flows.removeprefix("x")), int(rtt), float(buffer))

    def overrides(self) -> list[str]:
        return [f'flows.0.cc="{self.cc}"', f"flows.0.count={self.flows}",
                f'network.rtt="{self.rtt_ms}ms"', f'network.buffer="{self.buffer_bdp:g}bdp"']


def cells(ccs: Iterable[str], quick: bool = False,
          only: Iterable[str] | None = None) -> list[Cell]:
    """The grid's cells; `only`: shell-style patterns of the cell names to keep
    (e.g. "fast x2 20 ms 1 BDP", "* x1 100 ms *"), to run one cell again."""
    rtts, buffers = ((50,), (1,)) if quick else (RTTS_MS, BUFFERS_BDP)
    out = [Cell(*c) for c in product(ccs, FLOWS, rtts, buffers)]
    if only is None:
        return out
    patterns = list(only)
    return [c for c in out if any(fnmatch.fnmatchcase(c.name, p) for p in patterns)]


def metrics(cmp: dict) -> dict[str, float]:
    """One comparison's differences: aggregate and mean srtt relative to the
    simulator, and the share of the larger flow, simulator minus kernel. A
    cell's flows are alike (same algorithm, RTT and start), so which of them
    takes the larger share is chance: shares are compared largest to largest.
    The difference is signed so that run-to-run spread averages out and the
    cell's mean measures how unevenly each side splits the link (an absolute
    difference per run counts the spread of both sides as disagreement)."""
    sim = sorted(f["throughput_mbps"]["sim"] for f in cmp["flows"])
    ker = sorted(f["throughput_mbps"]["testbed"] for f in cmp["flows"])
    share = sim[-1] / sum(sim) - ker[-1] / sum(ker)
    srtt = [f["srtt_ms"]["rel_diff"] for f in cmp["flows"] if f["srtt_ms"]["rel_diff"] is not None]
    drops = cmp["drops"]
    return {"aggregate": cmp["aggregate_mbps"]["rel_diff"], "share": share,
            "srtt": sum(srtt) / len(srtt) if srtt else math.nan,
            "drops_sim": drops["sim"] or 0, "drops_kernel": drops["testbed"] or 0}


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval (t distribution;
    0 for a single value)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, T975.get(n - 1, 1.96) * sd / math.sqrt(n)


def verdict(stats: dict[str, tuple[float, float]]) -> list[str]:
    """The goals a cell misses by its mean, empty when it meets them all. A
    miss whose whole interval lies beyond the goal is shown; one whose interval
    reaches the goal may be chance (more repetitions would tell)."""
    return [f"{k} {mean:+.3f} beyond {limit:g} ("
            + ("whole interval beyond" if shown(mean, half, limit) else "interval reaches it") + ")"
            for k, limit in GOALS.items()
            for mean, half in [stats[k]] if not abs(mean) <= limit]


def shown(mean: float, half: float, limit: float) -> bool:
    """Whether a mean beyond `limit` is so with its whole 95% interval."""
    return abs(mean) - half > limit


def run_cell(scenario: str | Path, cell: Cell, reps: int, attempts: int,
             compare: Callable[..., dict]) -> dict:
    """`reps` valid comparisons of one cell; the runs a valid one needed are summed."""
    return summarize_cell(cell, [compare(scenario, overrides=cell.overrides(), seed=rep + 1,
                                         attempts=attempts) for rep in range(reps)])


# What tabulating and rescoring read of a stored comparison (metrics,
# summarize_cell, compare.rescore).
_SIDES = ("sim", "testbed")
RAW_FIELDS = (*((k, side) for k in ("aggregate_mbps", "jain_index", "utilization", "drops")
                for side in _SIDES), ("aggregate_mbps", "rel_diff"), ("testbed_runs", "needed"))
RAW_FLOW_FIELDS = (*((k, side) for k in ("throughput_mbps", "srtt_ms", "retransmits")
                     for side in _SIDES), ("srtt_ms", "rel_diff"), ("start_ms",))


def read_raw(text: str) -> list[dict]:
    """A `--raw` file's comparisons, each line checked for what rescoring reads,
    so a damaged or foreign file is refused by line number before any
    simulation runs."""
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            Cell.parse(row["cell"])
            for keys in RAW_FIELDS:
                _dig(row, keys)
            for flow in row["flows"]:
                for keys in RAW_FLOW_FIELDS:
                    _dig(flow, keys)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"line {n}: not a grid comparison "
                             f"({type(e).__name__}: {e})") from None
        rows.append(row)
    if not rows:
        raise ValueError("no comparisons in the file")
    return rows


def _dig(obj: dict, keys: tuple[str, ...]) -> object:
    for key in keys:
        obj = obj[key]
    return obj


def by_cell(stored: list[dict]) -> dict[Cell, list[dict]]:
    """Stored comparisons (`--raw` lines) grouped by cell, in the file's order;
    a cell's repetitions in order, seeds 1, 2, ..."""
    cells: dict[Cell, list[dict]] = {}
    for row in stored:
        cells.setdefault(Cell.parse(row["cell"]), []).append(row)
    return cells


def tables(stored: list[dict]) -> list[dict]:
    """The grid's cells as they were measured: stored comparisons summarized
    (no simulation)."""
    return [summarize_cell(cell, rows) for cell, rows in by_cell(stored).items()]


def rescore_cells(scenario: str | Path, stored: list[dict],
                  rescore: Callable[..., dict]) -> list[dict]:
    """Stored comparisons with the simulator's side run again (compare.rescore)."""
    return [summarize_cell(cell, [rescore(scenario, row, overrides=cell.overrides(), seed=rep + 1)
                                  for rep, row in enumerate(rows)])
            for cell, rows in by_cell(stored).items()]


def summarize_cell(cell: Cell, comparisons: list[dict]) -> dict:
    """A cell's metrics (mean and interval), testbed runs and verdict."""
    rows = [metrics(c) for c in comparisons]
    stats = {k: mean_ci([r[k] for r in rows]) for k in rows[0]}
    runs = sum(c["testbed_runs"]["needed"] for c in comparisons)
    return {"cell": cell, "stats": stats, "runs": runs, "misses": verdict(stats),
            "shown": [k for k, limit in GOALS.items() if shown(*stats[k], limit)],
            "comparisons": comparisons}


def markdown(results: list[dict]) -> str:
    lines = ["| cell | aggregate diff | share diff | srtt diff | drops sim / kernel | "
             "testbed runs | verdict |", "|---|---|---|---|---|---|---|"]
    for r in results:
        s = r["stats"]

        def pct(k: str, s=s) -> str:
            return f"{100 * s[k][0]:+.1f}% ± {100 * s[k][1]:.1f}"

        lines.append(f"| {r['cell'].name} | {pct('aggregate')} | {s['share'][0]:+.3f} ± "
                     f"{s['share'][1]:.3f} | {pct('srtt')} | {s['drops_sim'][0]:.0f} / "
                     f"{s['drops_kernel'][0]:.0f} | {r['runs']} | "
                     f"{'; '.join(r['misses']) or 'meets the goals'} |")
    return "\n".join(lines) + "\n"


def algorithms() -> list[str]:
    """The grid's algorithms: the kernel's own and every BPF program written
    (by their kernel names, kernel_cc)."""
    from .kernel_cc import written

    return [*KERNEL, *written()]


PAGE_HEAD = """\
# The simulator-vs-kernel agreement grid

<!-- Generated from docs/testbed-grid/ by `make testbed-grid-page`; do not edit. -->

Each algorithm's cells (1 and 2 flows x RTT 20, 50, 100 ms x drop-tail buffer
0.5, 1, 2 BDP; 100 Mbit/s, 20 s runs, metrics over 5-20 s) as `python -m
tcpeval.testbed grid --raw` stored them in `docs/testbed-grid/<algorithm>.jsonl`:
every valid comparison of a kernel run with the simulator started at the
kernel's connect times. A cell's mean and 95% interval (Student's t) are over
its repetitions; a cell meets the goals when its means are within them
(aggregate 3%, share 0.1, srtt 10%), and a miss is shown when the whole
interval lies beyond the goal (otherwise more repetitions could move it
either way). The share difference is the larger flow's share of the link,
simulator minus kernel, per paired run: positive when the simulator's flows
split more unevenly. (The tables in docs/testbed.md made before 2026-11-27
averaged its absolute value, which counts both sides' run-to-run spread as
a difference.) `runs.toml` says when the kernel runs
were made, with which sink (docs/testbed.md, "The receiver's ACK pattern")
and which engine gave the simulator's side. Every number on this
page is computed from those files (`grid.page`); docs/testbed.md explains
the sink, the gates and what each miss is.
"""


def page(data: Path) -> str:
    """The grid's page: every stored grid in `data` (<algorithm>.jsonl) tabulated,
    with the totals, from the data alone."""
    import tomllib

    known = algorithms()
    stray = sorted(p.stem for p in data.glob("*.jsonl") if p.stem not in known)
    if stray:
        raise ValueError(f"{data}: {', '.join(stray)}: not a grid algorithm ({', '.join(known)})")
    provenance = tomllib.loads((data / "runs.toml").read_text())
    measured = {cc: tables(read_raw((data / f"{cc}.jsonl").read_text()))
                for cc in known if (data / f"{cc}.jsonl").exists()}
    missing = sorted(set(measured) - set(provenance))
    if missing:
        raise ValueError(f"{data / 'runs.toml'}: no entry for {', '.join(missing)}")
    unsaid = sorted(cc for cc in measured if "sink" not in provenance[cc])
    if unsaid:
        raise ValueError(f"{data / 'runs.toml'}: no sink for {', '.join(unsaid)}")
    lines = [PAGE_HEAD, "## Totals", "", "| algorithm | cells meeting the goals | "
             "misses shown | valid comparisons | testbed runs | kernel runs | sink | simulator |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [_totals_row(cc, results, provenance[cc]) for cc, results in measured.items()]
    every = [r for results in measured.values() for r in results]
    lines.append(_totals_row("**all**", every, {"kernel": "", "sink": "", "simulator": ""}))
    not_run = [cc for cc in known if cc not in measured]
    if not_run:
        lines += ["", f"Not yet run: {', '.join(not_run)}."]
    for cc, results in measured.items():
        note = provenance[cc].get("note")
        lines += ["", f"## {cc}", "", f"{_met(results)} cells meet the goals; misses: "
                  f"{_misses(results)}; shown by the whole interval: "
                  f"{_misses(results, 'shown')}." + (f" {note}." if note else ""), "",
                  markdown(results).rstrip("\n")]
    return "\n".join(lines) + "\n"


def _met(results: list[dict]) -> str:
    return f"{sum(not r['misses'] for r in results)} of {len(results)}"


def _totals_row(name: str, results: list[dict], prov: dict) -> str:
    comparisons = sum(len(r["comparisons"]) for r in results)
    runs = sum(r["runs"] for r in results)
    shown = sum(bool(r["shown"]) for r in results)
    return (f"| {name} | {_met(results)} | {shown} | {comparisons} | {runs} | "
            f"{prov['kernel']} | {prov['sink']} | {prov['simulator']} |")


def _misses(results: list[dict], which: str = "misses") -> str:
    """The cells that miss (or whose miss is shown), each with the goals it
    misses: 'x2 20 ms 0.5 BDP (share)'."""
    return "; ".join(f"{r['cell'].name.split(' ', 1)[1]} "
                     f"({', '.join(m.split()[0] for m in r[which])})"
                     for r in results if r[which]) or "none"
