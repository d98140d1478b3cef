"""Bhatti & Bateman, "Effects of on-path buffering on TCP fairness" (seed 001):
a 100 Mbit/s dumbbell, base RTT 25-400 ms in 25 ms steps x on-path buffer
20-100% of the BDP in 20% steps; NewReno, BIC, CUBIC and Compound. Flow 1 starts
at 0 s, flow 2 at 60 s; 300 s runs measured from 120 s at 1 s intervals; 5
repetitions. Self-fairness runs (both flows of one variant) calibrate the NRU
weights (w = 1 / flow 2's mean throughput, eq. 7); the inter-flow runs put each
variant as flow 2 against NewReno as flow 1. Figures 3-5: flow 2's throughput
in the self-fairness runs, flow 2's flow-NRU, and the system-NRU, over the RTT x
buffer grid, with their minimum, mean, maximum and standard deviation.

Assumed where the text is silent (docs/studies/bhatti2009.md): NewReno flow 1's
weight comes from the NewReno self-fairness run's flow 2 (the same rule as
eq. 7); NewReno's own flow-NRU comes from separate NewReno-vs-NewReno runs with
seeds of their own (the paper's range for it, -3.14 to 1.55 dB, is not the
<= 0 that measuring it on its calibration run would give). Every flow runs the
linux-2.6.22 stack, the paper's Linux 2.6.22.6 out of the box (SACK, delayed
ACKs, growth counted per ACK, rate-halving, CUBIC 2.1; docs/stacks.md).
"""

from __future__ import annotations

from .._lazy import LazyModule
from . import protocol
from .protocol import Cell, Design

# Imported on first use (see LazyModule).
np = LazyModule("numpy")
pd = LazyModule("pandas")
metrics = LazyModule("tcpeval.metrics")

NAME = "bhatti2009"
TITLE = "Bhatti & Bateman 2009: on-path buffering and TCP fairness (NRU)"
SOURCE = "seed 001"
# The stack the paper ran: Linux 2.6.22.6 senders and receivers (seed 001, section 3).
# Every run's stack (Design.stack, issue 30).
PAPER_STACK = "linux-2.6.22"

VARIANTS = ("newreno", "bic", "cubic", "compound")
# The figures' values, and the columns that name a cell of the grid.
METRICS = ("self_flow2_mbps", "flow2_nru_db", "system_nru_db")
CELL = ("variant", "rtt_ms", "buffer_pct_bdp")
BASELINE = "newreno"
PROFILES = {
    # rtts (ms), buffers (% BDP), duration, flow-2 start, measure from, repetitions
    "smoke": {"rtts": [50, 200], "buffers": [60], "duration": 60, "start2": 12, "from": 24,
              "reps": 1},
    "quick": {"rtts": [25, 100, 200, 400], "buffers": [20, 60, 100], "duration": 300,
              "start2": 60, "from": 120, "reps": 1},
    "full": {"rtts": list(range(25, 401, 25)), "buffers": [20, 40, 60, 80, 100],
             "duration": 300, "start2": 60, "from": 120, "reps": 5},
}
# The paper's figure captions (min, mean, max and, for the NRU, the std per
# variant) are in data/bhatti2009/captions.csv. A throughput agrees within 10%;
# an NRU in dB within 0.41 dB, the same 10% as a ratio (10 log10 1.1).
STATS = ("min", "mean", "max", "std")
# NewReno against NewReno is fair when its flow-NRU averages within 0.5 dB of 0
# over the grid (about 12% in throughput; the paper's mean is -0.33 dB).
SELF_FAIR_DB = 0.5
# The NewReno-vs-NewReno runs draw their start jitter from seeds 101.. (the
# self-fairness runs use 1..): the same scenario, a separate run.
BASELINE_SEED_OFFSET = 100


def _doc(p: dict, flow1: str, flow2: str, rtt: int, buf: int) -> dict:
    return {
        "network": {"bottleneck": "100Mbps", "rtt": f"{rtt}ms", "buffer": f"{buf}%bdp"},
        # Each flow starts within one RTT of its nominal time, drawn from the
        # repetition's seed: without loss or background traffic nothing else is
        # random, and five repetitions would be five copies of one run.
        "flows": [{"cc": flow1, "start": "0s", "start_jitter": f"{rtt}ms"},
                  {"cc": flow2, "start": f"{p['start2']}s", "start_jitter": f"{rtt}ms"}],
        "run": {"duration": f"{p['duration']}s", "measure_from": f"{p['from']}s",
                "interval": "1s", "trace_interval": "1s"},
    }


def _cell(kind: str, variant: str, rtt: int, buf: int) -> str:
    return f"{kind}-{variant}-{rtt}ms-{buf}pct"


def _run(kind: str, variant: str, rtt: int, buf: int, rep: int) -> str:
    return _cell(kind, variant, rtt, buf) + f"-r{rep}"


def design(profile: str) -> Design:
    """self: both flows of one variant (the NRU weights); vs: NewReno as flow 1,
    the variant as flow 2, NewReno too (the NRU of NewReno itself, a separate run
    from its calibration). Repetition r runs with seed 1 + r ("self-cubic-25ms-
    20pct-r0"), vs-newreno with seed 101 + r."""
    p = PROFILES[profile]
    seeds = tuple(range(1, p["reps"] + 1))
    own = tuple(s + BASELINE_SEED_OFFSET for s in seeds)
    cells = []
    for rtt in p["rtts"]:
        for buf in p["buffers"]:
            for v in VARIANTS:
                for kind, flow1 in (("self", v), ("vs", BASELINE)):
                    cells.append(Cell(_cell(kind, v, rtt, buf), _doc(p, flow1, v, rtt, buf),
                                      {"kind": kind, "variant": v, "rtt_ms": rtt,
                                       "buffer_pct_bdp": buf},
                                      seeds=own if kind == "vs" and v == BASELINE else None))
    return Design(cells, seeds=seeds, rep_name="-r{rep}", stack=PAPER_STACK)


def _series(flows: pd.DataFrame, flow: int, start: float) -> np.ndarray:
    rows = metrics.window(flows[flows["flow"] == flow], start)
    return rows["throughput_mbps"].to_numpy()


def report(results: dict[str, dict], profile: str, flows_of) -> dict:
    grid, stats, rep_means = grid_and_stats(results, profile, flows_of)
    agree = agreement(stats, rep_means)
    figures = {f"fig{n}_{col}": _heatmaps(grid, col, label)
               for n, col, label in ((3, "self_flow2_mbps", "flow 2 throughput, self (Mbit/s)"),
                                     (4, "flow2_nru_db", "flow-NRU of flow 2 (dB)"),
                                     (5, "system_nru_db", "system-NRU (dB)"))}
    return {"tables": {"grid": grid, "caption_stats": stats, "agreement": agree},
            "figures": figures,
            "notes": [__doc__.split("\n\n", 1)[0], protocol.agreement_note(agree)]}


def grid_and_stats(results: dict[str, dict], profile: str, flows_of):
    """The RTT x buffer grid (each repetition's throughput and NRUs, averaged),
    the captions' statistics over it, and each repetition's mean over the grid."""
    p = PROFILES[profile]
    rows = []
    for rtt in p["rtts"]:
        for buf in p["buffers"]:
            for rep in range(p["reps"]):
                cal = {}
                for v in VARIANTS:
                    name = _run("self", v, rtt, buf, rep)
                    if name in results:
                        cal[v] = float(_series(flows_of(name), 1, p["from"]).mean())
                for v in VARIANTS:
                    row = {"variant": v, "rtt_ms": rtt, "buffer_pct_bdp": buf, "rep": rep,
                           "self_flow2_mbps": cal.get(v)}
                    name = _run("vs", v, rtt, buf, rep)
                    if name in results and cal.get(v) and cal.get(BASELINE):
                        f = flows_of(name)
                        nru2 = metrics.flow_nru(_series(f, 1, p["from"]), cal[v])
                        nru1 = metrics.flow_nru(_series(f, 0, p["from"]), cal[BASELINE])
                        row.update({"flow2_nru_db": nru2,
                                    "system_nru_db": metrics.system_nru([nru1, nru2])})
                    rows.append(row)
    grid = _grid(pd.DataFrame(rows))
    return grid, _caption_stats(grid), _rep_means(pd.DataFrame(rows))


def _rep_means(rows: pd.DataFrame) -> dict[tuple[str, str], list[float]]:
    """(variant, metric) -> each repetition's mean over the grid: their mean is
    the caption's mean over the averaged grid (with every cell present), and
    their spread gives its confidence interval. The minimum, maximum and std of
    the averaged grid have no such decomposition: they get no interval."""
    rows = rows.reindex(columns=[*CELL, "rep", *METRICS]).astype({m: float for m in METRICS})
    means = rows.groupby(["variant", "rep"])[list(METRICS)].mean()
    return {(v, col): means.loc[v, col].dropna().tolist()
            for v in means.index.get_level_values(0).unique() for col in METRICS}


def newreno_is_fair_to_itself(stats: pd.DataFrame) -> bool:
    """NewReno's mean flow-NRU against NewReno (caption_stats) within SELF_FAIR_DB
    of 0: the check the paper's NewReno row passes (-0.33 dB)."""
    row = stats.set_index(["variant", "metric"]).loc[(BASELINE, "flow2_nru_db")]
    return bool(abs(row["mean"]) < SELF_FAIR_DB)


def _grid(rows: pd.DataFrame) -> pd.DataFrame:
    """Per cell of the RTT x buffer grid: each metric's mean over the repetitions
    present (the paper averages five), how many NRU repetitions there were, and
    each metric's spread over them (sample std, NaN with fewer than two)."""
    rows = rows.reindex(columns=[*CELL, "rep", *METRICS]).astype({m: float for m in METRICS})
    by_cell = rows.groupby(list(CELL))[list(METRICS)]
    counts = by_cell.count()
    grid = by_cell.mean().join(by_cell.std(ddof=1).where(counts > 1).add_suffix("_rep_std"))
    grid["reps"] = counts["flow2_nru_db"]
    return grid.reset_index()


def _captions() -> dict[tuple[str, str], dict]:
    return {(r["variant"], r["metric"]): r for r in protocol.published(NAME, "captions")}


def _caption_stats(grid: pd.DataFrame) -> pd.DataFrame:
    """Min, mean, max and std of each figure's values per variant (the captions),
    and rep_std: the typical spread of one cell over its repetitions (the mean of
    the cells' std over repetitions), to read the differences against."""
    pub = _captions()
    out = []
    for v, g in grid.groupby("variant"):
        for col in METRICS:
            x = g[col].dropna()
            if len(x):
                paper = pub[(v, col)]
                out.append({"variant": v, "metric": col, "min": x.min(), "mean": x.mean(),
                            "max": x.max(), "std": x.std(ddof=0),
                            "rep_std": g[f"{col}_rep_std"].mean(),
                            **{f"paper_{s}": paper[s] for s in STATS}})
    return pd.DataFrame(out)


def agreement(stats: pd.DataFrame, rep_means: dict | None = None) -> pd.DataFrame:
    """Every caption number beside ours (the same statistic over our grid); a
    mean is the mean of the repetitions' means, with their t-interval."""
    ours = stats.set_index(["variant", "metric"]) if len(stats) else None
    rows = []
    for (v, col), paper in _captions().items():
        have = ours is not None and (v, col) in ours.index
        for stat in STATS:
            if paper[stat] is None:
                continue
            what = (f"{col} {v}: {stat} over the grid", paper["source"], paper[stat])
            if stat == "mean" and rep_means and rep_means.get((v, col)):
                rows.append(protocol.compare(*what, tolerance=paper["tolerance"],
                                             samples=rep_means[(v, col)]))
            else:
                rows.append(protocol.compare(
                    *what, ours.loc[(v, col), stat] if have else None, paper["tolerance"]))
    return protocol.agreement(rows)


def _heatmaps(grid: pd.DataFrame, col: str, label: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(VARIANTS), figsize=(3.2 * len(VARIANTS), 3), squeeze=False)
    for ax, v in zip(axes[0], VARIANTS, strict=True):
        g = grid[grid["variant"] == v].pivot(index="buffer_pct_bdp", columns="rtt_ms", values=col)
        if g.empty or g.isna().all().all():
            ax.set_axis_off()
            continue
        im = ax.imshow(g.to_numpy(dtype=float), aspect="auto", origin="lower", cmap="viridis")
        ax.set_xticks(range(len(g.columns)), g.columns, fontsize=6, rotation=90)
        ax.set_yticks(range(len(g.index)), g.index, fontsize=7)
        ax.set_xlabel("RTT (ms)", fontsize=7)
        ax.set_ylabel("buffer (% BDP)", fontsize=7)
        vals = g.to_numpy(dtype=float)
        finite = vals[np.isfinite(vals)]
        stats = (f"min {finite.min():.2f} mean {finite.mean():.2f} max {finite.max():.2f}"
                 if len(finite) else "")
        ax.set_title(f"{v}\n{stats}", fontsize=7)
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle(label, fontsize=9)
    fig.tight_layout()
    return fig

