"""The protocol every study follows (docs/studies/README.md).

- `design(profile) -> Design`: the study's cells, each a name, a scenario
  document and the values of its design axes, and the seed of each repetition.
  The sweep machinery (`sweep.plan` with `seeds`) expands a cell into one run
  per repetition; `Design.runs()` names them.
- The paper's published values live in CSV files beside the study
  (`studies/data/<study>/<table>.csv`), each row with its source in the paper;
  `published(study, table)` reads them.
- `compare(paper, ours, tolerance)` judges one published value against ours,
  and `agreement(rows)` lays every study's comparisons out in the same columns;
  `agreement_note` counts them from that table.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from importlib import resources

from .._lazy import LazyModule

pd = LazyModule("pandas")
metrics = LazyModule("tcpeval.metrics")

# The agreement table's columns, the same in every study: what is compared, its
# kind (below), where the paper gives it, the paper's value (a number, a range or a
# bound), ours (the mean over repetitions) with its 95% Student-t interval (empty
# with one run), how far ours lies outside the paper's value, the tolerance, the
# rule that gives the verdict, the verdict, and how many runs back ours.
AGREEMENT_COLUMNS = ("quantity", "kind", "source", "paper", "ours", "ci_low", "ci_high",
                     "difference", "tolerance", "rule", "agrees", "runs")
# A distinctive row is a number or an ordering the paper argues from; a bound row
# checks saturation or an at-most/at-least limit that many designs would meet.
KINDS = ("distinctive", "bound")
CONFIDENCE = 0.95
# Ours agrees with a published number when within 10% of it (of the nearer end of
# a range or bound) unless the study's data give another tolerance.
DEFAULT_TOLERANCE = "10%"


@dataclass(frozen=True)
class Cell:
    """One design point: its name, its scenario document (no seed: the design's
    seeds give each repetition its own) and the values of its design axes.
    `seeds`, when given, replaces the design's seeds for this cell (as many):
    a cell whose scenario equals another's but must be a separate draw."""

    name: str
    scenario: dict
    axes: dict = field(default_factory=dict)
    seeds: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Design:
    """A study's cells and the seed of each repetition. A run is named after its
    cell, with `rep_name` (formatted with the repetition) appended."""

    cells: list[Cell]
    seeds: tuple[int, ...] = (1,)
    rep_name: str = ""
    # The TCP stack of every run (the scenario's `run.stack`, docs/stacks.md):
    # each study's is its paper's (the module's PAPER_STACK, issue 30). A flow
    # that names its own stack keeps it (ha2006's FAST ran on a 2.4 kernel).
    # None: the engine's default, today's Linux.
    stack: str | None = None

    def sweep(self, cell: Cell) -> dict:
        """The cell as a sweep document: its scenario (with the design's stack
        as the run's, when set), one run per seed."""
        seeds = self.seeds if cell.seeds is None else cell.seeds
        if len(seeds) != len(self.seeds):
            raise ValueError(f"cell {cell.name}: {len(seeds)} seeds for {len(self.seeds)} "
                             "repetitions")
        doc = {**cell.scenario, "sweep": {"seeds": list(seeds)}}
        if self.stack is not None:
            doc["run"] = {**doc.get("run", {}), "stack": self.stack}
        return doc

    def run_name(self, cell: Cell, rep: int) -> str:
        return cell.name + self.rep_name.format(rep=rep)

    def runs(self) -> list[tuple[str, Cell, int]]:
        """(run name, cell, repetition) of every run, cell by cell."""
        return [(self.run_name(c, r), c, r) for c in self.cells for r in range(len(self.seeds))]


def records(design: Design, results: dict[str, dict], flows_of, record) -> pd.DataFrame:
    """One row per finished run, in design order: its name, its repetition and
    what `record(cell, summary, flows)` keeps of it (`flows()` reads the run's
    interval table). A study whose report is made from such rows can be run in
    batches that keep only them (batches.py)."""
    rows = [{"run": name, "rep": rep,
             **record(cell, results[name], lambda name=name: flows_of(name))}
            for name, cell, rep in design.runs() if name in results]
    return pd.DataFrame(rows)


# ----- the paper's values -----------------------------------------------------------------


def _value(text: str):
    """A CSV field: an int, a float, a string, or None when empty."""
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def published(study: str, table: str) -> list[dict]:
    """The rows of studies/data/<study>/<table>.csv, numbers parsed; every row
    names its source in the paper."""
    path = resources.files(__package__) / "data" / study / f"{table}.csv"
    with path.open(newline="") as f:
        rows = [{k: _value(v) for k, v in row.items()} for row in csv.DictReader(f)]
    missing = [i for i, r in enumerate(rows) if not r.get("source")]
    if missing:
        raise ValueError(f"{path}: row {missing[0] + 1} has no source")
    return rows


def short(x: float) -> str:
    """A small number as papers print it: 1e-4, 2.5e-3 (not 0.000)."""
    mantissa, exponent = f"{x:.1e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


# ----- comparison -------------------------------------------------------------------------


@dataclass(frozen=True)
class Published:
    """A published value as an interval: a number is [x, x], "a..b" a range,
    "<= x" or "> x" a bound (strict bounds exclude their end)."""

    low: float
    high: float
    low_open: bool = False
    high_open: bool = False

    @classmethod
    def parse(cls, text) -> Published:
        if isinstance(text, int | float):
            return cls(float(text), float(text))
        s = str(text).strip()
        for op in ("<=", ">=", "<", ">"):
            if s.startswith(op):
                x = float(s[len(op):])
                return cls(x, math.inf, low_open=op == ">") if op[0] == ">" else \
                    cls(-math.inf, x, high_open=op == "<")
        if ".." in s:
            low, high = (float(x) for x in s.split(".."))
            return cls(low, high)
        return cls(float(s), float(s))

    def nearest(self, x: float) -> float:
        return min(max(x, self.low), self.high)


def tolerance_of(text) -> tuple[float, float]:
    """(relative, absolute) from "10%" or an absolute number such as 0.03."""
    s = str(DEFAULT_TOLERANCE if text is None or text == "" else text).strip()
    return (float(s[:-1]) / 100, 0.0) if s.endswith("%") else (0.0, float(s))


def agrees(ours: float, paper: Published, tolerance=None) -> bool | None:
    """Whether ours lies within the published interval widened by the tolerance
    (relative: of the end it widens); None when ours is missing."""
    if ours is None or math.isnan(ours):
        return None
    rel, tol = tolerance_of(tolerance)
    lo = paper.low - tol - rel * abs(paper.low) if math.isfinite(paper.low) else -math.inf
    hi = paper.high + tol + rel * abs(paper.high) if math.isfinite(paper.high) else math.inf
    above = ours > lo if paper.low_open else ours >= lo
    below = ours < hi if paper.high_open else ours <= hi
    return bool(above and below)


def default_kind(paper) -> str:
    """A one-sided bound ("<= 1", "> 0.9") is a bound row, a number or a range
    distinctive; studies tag orderings ("< 0": lower with background) and
    saturation values themselves."""
    p = Published.parse(paper)
    return "bound" if math.isinf(p.low) or math.isinf(p.high) else "distinctive"


def rule(paper, tolerance=None) -> str:
    """The verdict's rule as the interval ours must lie in: the paper's value
    widened by the tolerance (relative: of the end it widens)."""
    p = Published.parse(paper)
    rel, tol = tolerance_of(tolerance)
    parts = []
    if math.isfinite(p.low):
        lo = p.low - tol - rel * abs(p.low)
        parts.append(f"{lo:.4g} {'<' if p.low_open else '<='} ")
    parts.append("ours")
    if math.isfinite(p.high):
        hi = p.high + tol + rel * abs(p.high)
        parts.append(f" {'<' if p.high_open else '<='} {hi:.4g}")
    return "".join(parts)


def compare(quantity: str, source: str, paper, ours=None, tolerance=None, runs=None, *,
            samples=None, spread: float | None = None, kind: str | None = None) -> dict:
    """One row of an agreement table: the paper's value (as written), ours, how far
    ours lies outside it (0 inside), the tolerance, the rule and the verdict.
    `samples`: ours per repetition; ours is then their mean with a 95% t-interval
    (none from a single run) and runs their count. `spread`: instead of the
    samples, the sample std of the `runs` repetitions whose mean ours is. `kind`:
    distinctive or bound (default_kind when None)."""
    low = high = math.nan
    if samples is not None:
        agg = metrics.aggregate(samples, CONFIDENCE)
        ours, runs = (agg["mean"] if agg["n"] else None), (agg["n"] or None)
        if agg["n"] > 1:
            low, high = agg["mean"] - agg["ci"], agg["mean"] + agg["ci"]
    elif spread is not None and runs and runs > 1 and ours is not None:
        half = metrics.t_quantile(0.5 + CONFIDENCE / 2, runs - 1) * spread / math.sqrt(runs)
        low, high = ours - half, ours + half
    kind = kind or default_kind(paper)
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} of {quantity!r}: allowed {', '.join(KINDS)}")
    value = math.nan if ours is None else float(ours)
    p = Published.parse(paper)
    return {"quantity": quantity, "kind": kind, "source": source, "paper": str(paper),
            "ours": value, "ci_low": low, "ci_high": high,
            "difference": value - p.nearest(value), "tolerance":
                str(DEFAULT_TOLERANCE if tolerance in (None, "") else tolerance),
            "rule": rule(paper, tolerance), "agrees": agrees(value, p, tolerance),
            "runs": runs}


def agreement(rows: list[dict]) -> pd.DataFrame:
    """The agreement table from `compare` rows (nullable verdicts and run counts)."""
    df = pd.DataFrame(rows, columns=list(AGREEMENT_COLUMNS))
    return df.astype({"ours": float, "ci_low": float, "ci_high": float,
                      "difference": float, "agrees": "boolean", "runs": "Int64"})


def counts(table: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """kind -> (rows ours agrees with, rows judged), from the table."""
    out = {}
    for kind in KINDS:
        verdicts = table.loc[table["kind"] == kind, "agrees"].dropna()
        out[kind] = (int(verdicts.sum()), len(verdicts))
    return out


def agreement_note(table: pd.DataFrame) -> str:
    """How many published values ours agrees with, distinctive and bound rows
    counted apart, from the table."""
    c = counts(table)
    judged = table["agrees"].notna()
    one_run = int(((table["runs"] == 1) & judged).sum())
    return (f"Agreement: distinctive rows (numbers or orderings the paper argues from) "
            f"{c['distinctive'][0]} of {c['distinctive'][1]}; bound rows (saturation, "
            f"at-most/at-least checks) {c['bound'][0]} of {c['bound'][1]} "
            f"({int(judged.sum())} judged of {len(table)} listed; rules and tolerances in "
            f"the agreement table; ours is the mean over repetitions with a 95% t-interval, "
            f"none for the {one_run} judged rows backed by one run).")
