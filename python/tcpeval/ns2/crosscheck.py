"""The cross-check grid: the same dumbbell cells on tcpeval and on ns-2.35
TCP-Linux, several seeds each, compared per cell (docs/crosscheck.md).

A cell is one scenario; each seed runs it once on each simulator. Single flows
compare mean throughput (goal: within +-10%), pairs compare the first flow's
share of the pair's throughput (goal: within 0.05)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import subprocess
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from ..errors import ScenarioError
from .translate import BROKEN_IN_NS2, CC_MODULE, NATIVE_AGENTS

# The algorithms both simulators have (translate.CC_MODULE, one name each).
ALGORITHMS = ("reno", "highspeed", "bic", "htcp", "scalable", "cubic", "westwood", "vegas",
              "illinois", "yeah", "compound", "lp")
RATIO_TOLERANCE = 0.10   # single flows: tcpeval / ns-2 mean within 1 +- 0.10
SHARE_TOLERANCE = 0.05   # pairs: first flow's share within +-0.05
# A cell's ns-2 run is given up after this long (the slowest default cell, 10 M
# packets at 1 Gbit/s, takes about 35 s on an idle core) so one hung run cannot
# stall the grid; it becomes an error row.
NS2_TIMEOUT_S = 900
# ns-2.35's CUBIC is 2.6.22.6's v2.1: beta 819/1024 and no HyStart (tcp_cubic.c
# at 2.6.22.6); these tcpeval params ask for the same, the issue's CUBIC cell.
CUBIC_AS_2622 = {"beta": 0.7998046875, "hystart": False}
# Pairs' send jitter (ns-2's overhead_): two 1500-byte packet times at the
# bottleneck. Below about that, ns-2 stays phase-locked: its share is the same
# to 0.005 over seeds and over overhead_ from 1 ns to 60 us (docs/crosscheck.md,
# "Aggressive flows against Reno at 0.2 BDP: ns-2's phase lock").
PAIR_JITTER_BITS = 1500 * 8 * 2
# ns-2's side of a cell depends on nothing but its Tcl script (the seed and the
# starts tcpeval draws are written into it) and the ns binary, so its summary
# is kept here and reused: re-running the grid after an engine change costs
# only tcpeval's side. TCPEVAL_NS2_CACHE overrides the place; "off" disables.
NS2_CACHE = Path(os.environ.get("TCPEVAL_NS2_CACHE", ".cache/ns2-crosscheck"))


@dataclass(frozen=True)
class Cell:
    """One grid point. `kind` is "single" or "pair"; a pair's second flow runs
    `other` with RTT `other_rtt_ms`."""

    kind: str
    cc: str
    rate: str
    rtt_ms: int
    buffer_bdp: float
    loss: float = 0.0
    other: str | None = None
    other_rtt_ms: int | None = None
    params: dict = field(default_factory=dict, hash=False)
    duration_s: int = 120
    measure_from_s: int = 20
    stack: str | None = None
    agents: str = "linux"       # ns-2 side: TCP-Linux modules, or its native agents
    abc: int | None = None      # TCP-Linux's sysctl_tcp_abc; None: ns-2's default (1)
    # tcpeval's receivers ACK this many segments at once at the start (flows.quickacks;
    # ns-2's sinks: 1); None: the stack's.
    quickacks: int | None = None

    @property
    def name(self) -> str:
        base = f"{self.kind} {self.cc}"
        if self.params:
            base += "(" + ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                 for k, v in sorted(self.params.items())) + ")"
        if self.other:
            base += f" vs {self.other} {self.other_rtt_ms}ms"
        return (f"{base} {self.rate} {self.rtt_ms}ms {self.buffer_bdp:g}bdp"
                + (f" p={self.loss:g}" if self.loss else "")
                + (" [ns-2 native]" if self.agents == "native" else "")
                + (f" [abc={self.abc}]" if self.abc is not None else "")
                + (f" [quickacks={self.quickacks}]" if self.quickacks is not None else "")
                + (f" [{self.stack}]" if self.stack is not None else ""))


def scenario(cell: Cell) -> dict:
    """The cell as a tcpeval scenario (dict form)."""
    first = {"cc": cell.cc, "rtt": f"{cell.rtt_ms}ms", "params": dict(cell.params)}
    flows = [first]
    if cell.kind == "pair":
        # Starts spread over one RTT, drawn from the seed, so seeds differ in a
        # loss-free run (user guide: start_jitter); and ns-2's delayed send,
        # overhead_, on both sides (send_jitter), the remedy of Floyd and
        # Jacobson (1992) for the phase locking of deterministic DropTail
        # simulations (docs/crosscheck.md "Why the RTT-unfairness pairs differ").
        jitter = f"{PAIR_JITTER_BITS / _rate_bps(cell.rate) * 1e6:g}us"
        first.update(start_jitter=f"{cell.rtt_ms}ms", send_jitter=jitter)
        flows.append({"cc": cell.other, "rtt": f"{cell.other_rtt_ms}ms",
                      "start_jitter": f"{cell.rtt_ms}ms", "send_jitter": jitter})
    if cell.quickacks is not None:
        for f in flows:
            f["quickacks"] = cell.quickacks
    run = {"duration": f"{cell.duration_s}s", "measure_from": f"{cell.measure_from_s}s"}
    if cell.stack is not None:
        run["stack"] = cell.stack
    return {"network": {"bottleneck": cell.rate, "rtt": f"{cell.rtt_ms}ms",
                        "buffer": f"{cell.buffer_bdp:g}bdp", "loss": cell.loss},
            "flows": flows, "run": run}


def _rate_bps(rate: str) -> float:
    return {"100Mbps": 100e6, "1Gbps": 1e9}[rate]


def default_grid(stack: str | None = None) -> list[Cell]:
    """The full grid: 157 cells, about 290 M bottleneck packets per seed (most
    in the 1 Gbit/s pairs and 10 ms single flows). With 3 seeds, at ns-2's
    0.3-0.4 M packets per CPU second (docs/performance.md, "Against ns-2"),
    about 50 CPU minutes: 25-35 minutes on 2 idle cores (an estimate from the
    cells' throughputs, not a measured run)."""
    cells = []
    for cc in ALGORITHMS:
        for rate in ("100Mbps", "1Gbps"):
            for rtt in (10, 50, 100, 200):
                cells.append(Cell("single", cc, rate, rtt, 1.0, loss=1e-4))
        for buf in (0.2, 1.0):
            cells.append(Cell("pair", cc, "100Mbps", 50, buf, other="reno", other_rtt_ms=50))
            cells.append(Cell("pair", cc, "100Mbps", 50, buf, other=cc, other_rtt_ms=100))
        cells.append(Cell("pair", cc, "1Gbps", 50, 1.0, other="reno", other_rtt_ms=50))
    cells += issue_cells()
    return _unique([replace(c, stack=stack) for c in cells])


def issue_cells() -> list[Cell]:
    """The cells issue 28 names: 1 Gbit/s, 100 ms, 1 BDP, p = 1e-4 for BIC,
    Scalable, HighSpeed and CUBIC (also as 2.6.22's CUBIC); Vegas against Reno at
    100 Mbit/s, 50 ms, 1 BDP."""
    singles = [Cell("single", cc, "1Gbps", 100, 1.0, loss=1e-4)
               for cc in ("reno", "bic", "scalable", "highspeed", "cubic")]
    singles.append(Cell("single", "cubic", "1Gbps", 100, 1.0, loss=1e-4,
                        params=CUBIC_AS_2622))
    return singles + [Cell("pair", "vegas", "100Mbps", 50, 1.0, other="reno",
                           other_rtt_ms=50)]


def quick_grid(stack: str | None = None) -> list[Cell]:
    """The issue's cells plus one 100 Mbit/s single flow per algorithm."""
    cells = issue_cells() + [Cell("single", cc, "100Mbps", 100, 1.0, loss=1e-4)
                             for cc in ALGORITHMS]
    return _unique([replace(c, stack=stack) for c in cells])


def with_agents(cells: list[Cell], agents: str, abc: int | None = None) -> list[Cell]:
    """The cells for an ns-2 side: all of them on TCP-Linux (with its ABC
    setting); on ns-2's native agents, those whose algorithms have one (Reno,
    HighSpeed, Vegas), without tcpeval parameters (ns-2's agents keep their own
    defaults)."""
    if agents == "linux":
        return [replace(c, abc=abc) for c in cells]
    keep = [c for c in cells if c.cc in NATIVE_AGENTS and (c.other is None or c.other
                                                           in NATIVE_AGENTS) and not c.params]
    return [replace(c, agents=agents) for c in keep]


def _unique(cells: list[Cell]) -> list[Cell]:
    seen, out = set(), []
    for c in cells:
        if c.name not in seen:
            seen.add(c.name)
            out.append(c)
    return out


def _metric(cell: Cell, summary: dict) -> float:
    """Single: the flow's mean throughput (Mbit/s); pair: the first flow's share."""
    tputs = [f["throughput_mbps"] for f in summary["flows"]]
    if cell.kind == "single":
        return tputs[0]
    total = sum(tputs)
    return tputs[0] / total if total > 0 else math.nan


def run_one(task: tuple[Cell, int, str]) -> tuple[str, int, str, float | str, float]:
    """One seed of one cell on one simulator: (cell name, seed, simulator,
    metric or an error line, wall seconds)."""
    cell, seed, sim = task
    try:
        if sim == "ns2":
            summary = _ns2_summary(cell, seed)
        else:
            from ..run import run as tc_run

            summary = tc_run(scenario(cell), seed=seed).summary
    except (ScenarioError, RuntimeError, subprocess.TimeoutExpired) as e:
        return cell.name, seed, sim, f"{type(e).__name__}: {e}", 0.0
    return cell.name, seed, sim, _metric(cell, summary), summary["sim"]["wall_s"]


def _ns2_summary(cell: Cell, seed: int) -> dict:
    """The cell's ns-2 summary, from the cache when its script was run before."""
    from . import run_translated, script_for
    from .runner import ns_binary

    script, resolved = script_for(scenario(cell), seed=seed, agents=cell.agents, abc=cell.abc)
    run = partial(run_translated, script, resolved, cell.agents, cell.abc,
                  timeout_s=NS2_TIMEOUT_S)
    if str(NS2_CACHE) == "off":
        return run()
    binary = Path(ns_binary() or "ns")
    stamp = f"{binary.resolve()}:{binary.stat().st_mtime_ns if binary.exists() else 0}"
    key = hashlib.sha256((stamp + "\n" + script.tcl).encode()).hexdigest()[:32]
    path = NS2_CACHE / f"{key}.json"
    if path.exists():
        return json.loads(path.read_text())
    summary = run()
    NS2_CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(summary))
    os.replace(tmp, path)   # atomic: a reader never sees half a summary
    return summary


def run_grid(cells: list[Cell], seeds: list[int], workers: int, progress=None) -> dict:
    """Every (cell, seed, simulator) on a process pool; results by cell name."""
    tasks = [(c, s, sim) for c in cells for s in seeds for sim in ("tcpeval", "ns2")]
    # Long tasks first so the pool does not end on one straggler.
    tasks.sort(key=lambda t: -_cost(t[0]))
    out: dict[str, dict] = {c.name: {"tcpeval": {}, "ns2": {}, "wall": 0.0} for c in cells}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for name, seed, sim, value, wall in pool.map(run_one, tasks):
            out[name][sim][seed] = value
            out[name]["wall"] += wall
            if progress:
                progress(f"{name} seed {seed} {sim}: {value}")
    return out


def _cost(cell: Cell) -> float:
    rate = _rate_bps(cell.rate)
    return rate * cell.duration_s * (2 if cell.kind == "pair" else 1)


def verdict(cell: Cell, tc: list[float], ns: list[float]) -> tuple[float | None, str]:
    """The cell's comparison value (ratio or share difference) and its verdict:
    ok when the value is within the tolerance; miss when it is outside and so is
    its whole 95% confidence interval (the gap is larger than the seeds' noise);
    unresolved when it is outside but the interval reaches the tolerance band
    (more seeds would decide: `run_adaptive` adds them)."""
    value = _value(cell, tc, ns)
    if CC_MODULE[cell.cc] in BROKEN_IN_NS2 or (cell.other and CC_MODULE[cell.other]
                                                 in BROKEN_IN_NS2):
        return value, "ns-2 module broken"
    if value is None:
        return None, "no data"
    centre, tol = (1.0, RATIO_TOLERANCE) if cell.kind == "single" else (0.0, SHARE_TOLERANCE)
    if abs(value - centre) <= tol:
        return value, "ok"
    lo, hi = interval(cell, tc, ns)
    beyond = lo > centre + tol or hi < centre - tol
    return value, "miss" if beyond else "unresolved"


def interval(cell: Cell, tc: list[float], ns: list[float]) -> tuple[float, float]:
    """95% confidence interval of the comparison value: Welch's interval of the
    difference of means for pairs; for single flows the ratio of means with its
    standard error by the delta method. Infinite with fewer than two seeds on
    either side."""
    if len(tc) < 2 or len(ns) < 2:
        return -math.inf, math.inf
    a, b = statistics.fmean(tc), statistics.fmean(ns)
    va, vb = statistics.variance(tc) / len(tc), statistics.variance(ns) / len(ns)
    # Welch-Satterthwaite degrees of freedom; both sides exact: no spread.
    df = (va + vb) ** 2 / ((va ** 2 / (len(tc) - 1)) + (vb ** 2 / (len(ns) - 1))) \
        if va + vb > 0 else math.inf
    t = _t975(df)
    if cell.kind == "pair":
        half = t * math.sqrt(va + vb)
        return a - b - half, a - b + half
    if b <= 0:
        return -math.inf, math.inf
    ratio = a / b
    half = t * ratio * math.sqrt(va / a ** 2 + vb / b ** 2) if a > 0 else math.inf
    return ratio - half, ratio + half


def _t975(df: float) -> float:
    """The 97.5% quantile of Student's t; Welch's fractional degrees of freedom
    rounded down (the wider, safer interval)."""
    if math.isinf(df):
        return 1.959964
    from ..metrics import t_quantile

    return t_quantile(0.975, max(1, math.floor(df)))


def run_adaptive(cells: list[Cell], seeds: list[int], max_seeds: int, workers: int,
                 progress=None) -> dict:
    """Run every cell on `seeds`, then add seeds three at a time to the cells
    whose verdict is unresolved, up to `max_seeds` seeds per cell."""
    results = run_grid(cells, seeds, workers, progress)
    used = list(seeds)
    while len(used) < max_seeds:
        open_cells = [c for c in cells if verdict(c, *_values(results[c.name]))[1] == "unresolved"]
        if not open_cells:
            break
        start = max(used) + 1
        extra = list(range(start, start + min(3, max_seeds - len(used))))
        used += extra
        more = run_grid(open_cells, extra, workers, progress)
        for name, r in more.items():
            for sim in ("tcpeval", "ns2"):
                results[name][sim].update(r[sim])
            results[name]["wall"] += r["wall"]
    return results


def _values(r: dict) -> tuple[list[float], list[float]]:
    """A cell's finite values: tcpeval's and ns-2's, in seed order."""
    return tuple([v for _, v in sorted(r[sim].items()) if isinstance(v, float)
                  and not math.isnan(v)] for sim in ("tcpeval", "ns2"))


def _value(cell: Cell, tc: list[float], ns: list[float]) -> float | None:
    if not tc or not ns:
        return None
    a, b = statistics.fmean(tc), statistics.fmean(ns)
    if cell.kind == "single":
        return a / b if b > 0 else None
    return a - b


def _fmt(xs: list[float], digits: int) -> str:
    if not xs:
        return "-"
    mean = statistics.fmean(xs)
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def table(cells: list[Cell], results: dict) -> tuple[list[str], dict[str, int]]:
    """Markdown rows (one per cell) and the count of each verdict."""
    rows = ["| cell | stack | seeds | tcpeval | ns-2 | ratio / diff | 95% CI | verdict |",
            "|---|---|---|---|---|---|---|---|"]
    counts: dict[str, int] = {}
    for c in cells:
        r = results[c.name]
        tc, ns = _values(r)
        value, word = verdict(c, tc, ns)
        errors = sorted({v for sim in ("tcpeval", "ns2") for v in r[sim].values()
                         if isinstance(v, str)})
        if errors:
            word = "error: " + errors[0]
        counts[word.split(":")[0]] = counts.get(word.split(":")[0], 0) + 1
        digits = 1 if c.kind == "single" else 3
        shown = "-" if value is None else (f"{value:.3f}" if c.kind == "single"
                                          else f"{value:+.3f}")
        rows.append(f"| {c.name} | {c.stack or 'tcpeval default'} | {min(len(tc), len(ns))} | "
                    f"{_fmt(tc, digits)} | {_fmt(ns, digits)} | {shown} | "
                    f"{_fmt_interval(c, tc, ns)} | {word} |")
    return rows, counts


def _fmt_interval(cell: Cell, tc: list[float], ns: list[float]) -> str:
    lo, hi = interval(cell, tc, ns)
    if math.isinf(lo) or math.isinf(hi):
        return "-"
    return f"{lo:.3f} to {hi:.3f}" if cell.kind == "single" else f"{lo:+.3f} to {hi:+.3f}"


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))
