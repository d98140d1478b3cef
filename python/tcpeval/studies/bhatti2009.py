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
eq. 7); Linux-style senders (SACK, delayed ACKs) as the testbed's Linux hosts.
"""

from __future__ import annotations

from .._lazy import LazyModule

# Imported on first use (see LazyModule).
np = LazyModule("numpy")
pd = LazyModule("pandas")
metrics = LazyModule("tcpeval.metrics")

NAME = "bhatti2009"
TITLE = "Bhatti & Bateman 2009: on-path buffering and TCP fairness (NRU)"
SOURCE = "seed 001"

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
# The paper's figure captions: (min, mean, max, stddev or None) per variant.
PUBLISHED = {
    "self_flow2_mbps": {"newreno": (8.1, 25.7, 49.4, None), "bic": (8.6, 31.5, 50.1, None),
                        "cubic": (8.6, 31.8, 53.1, None), "compound": (7.1, 31.6, 50.9, None)},
    "flow2_nru_db": {"newreno": (-3.14, -0.36, 1.55, 0.75), "bic": (-1.50, 1.55, 2.58, 0.88),
                     "cubic": (-1.00, 1.63, 2.56, 0.70), "compound": (-1.28, 1.66, 2.60, 0.75)},
    "system_nru_db": {"newreno": (-0.73, -0.16, 0.18, 0.14), "bic": (-2.91, -0.91, 0.89, 0.90),
                      "cubic": (-2.77, -0.70, 0.91, 0.81),
                      "compound": (-2.98, -0.74, 0.99, 0.86)},
}


def run_note(profile: str) -> str:
    reps = PROFILES[profile]["reps"]
    return f"{reps} repetition(s) per cell, seeds 1-{reps}" if reps > 1 else \
        "one repetition per cell, seed 1"


def _doc(p: dict, flow1: str, flow2: str, rtt: int, buf: int, rep: int) -> dict:
    return {
        "network": {"bottleneck": "100Mbps", "rtt": f"{rtt}ms", "buffer": f"{buf}%bdp"},
        # Each flow starts within one RTT of its nominal time, drawn from the
        # repetition's seed: without loss or background traffic nothing else is
        # random, and five repetitions would be five copies of one run.
        "flows": [{"cc": flow1, "start": "0s", "start_jitter": f"{rtt}ms"},
                  {"cc": flow2, "start": f"{p['start2']}s", "start_jitter": f"{rtt}ms"}],
        "run": {"duration": f"{p['duration']}s", "measure_from": f"{p['from']}s",
                "interval": "1s", "trace_interval": "1s", "seed": 1 + rep},
    }


def _cell(kind: str, variant: str, rtt: int, buf: int, rep: int) -> str:
    return f"{kind}-{variant}-{rtt}ms-{buf}pct-r{rep}"


def sweeps(profile: str) -> list[tuple[str, dict]]:
    p = PROFILES[profile]
    out = []
    for rtt in p["rtts"]:
        for buf in p["buffers"]:
            for rep in range(p["reps"]):
                for v in VARIANTS:
                    out.append((_cell("self", v, rtt, buf, rep), _doc(p, v, v, rtt, buf, rep)))
                    if v != BASELINE:
                        out.append((_cell("vs", v, rtt, buf, rep),
                                    _doc(p, BASELINE, v, rtt, buf, rep)))
    return out


def _series(flows: pd.DataFrame, flow: int, start: float) -> np.ndarray:
    rows = metrics.window(flows[flows["flow"] == flow], start)
    return rows["throughput_mbps"].to_numpy()


def report(results: dict[str, dict], profile: str, flows_of) -> dict:
    p = PROFILES[profile]
    rows = []
    for rtt in p["rtts"]:
        for buf in p["buffers"]:
            for rep in range(p["reps"]):
                cal = {}
                for v in VARIANTS:
                    name = _cell("self", v, rtt, buf, rep)
                    if name in results:
                        cal[v] = float(_series(flows_of(name), 1, p["from"]).mean())
                for v in VARIANTS:
                    row = {"variant": v, "rtt_ms": rtt, "buffer_pct_bdp": buf, "rep": rep,
                           "self_flow2_mbps": cal.get(v)}
                    name = _cell("vs", v, rtt, buf, rep) if v != BASELINE else \
                        _cell("self", v, rtt, buf, rep)
                    if name in results and cal.get(v) and cal.get(BASELINE):
                        f = flows_of(name)
                        nru2 = metrics.flow_nru(_series(f, 1, p["from"]), cal[v])
                        nru1 = metrics.flow_nru(_series(f, 0, p["from"]), cal[BASELINE])
                        row.update({"flow2_nru_db": nru2,
                                    "system_nru_db": metrics.system_nru([nru1, nru2])})
                    rows.append(row)
    grid = _grid(pd.DataFrame(rows))
    stats = _caption_stats(grid)
    figures = {f"fig{n}_{col}": _heatmaps(grid, col, label)
               for n, col, label in ((3, "self_flow2_mbps", "flow 2 throughput, self (Mbit/s)"),
                                     (4, "flow2_nru_db", "flow-NRU of flow 2 (dB)"),
                                     (5, "system_nru_db", "system-NRU (dB)"))}
    return {"tables": {"grid": grid, "caption_stats": stats}, "figures": figures,
            "notes": [__doc__.split("\n\n", 1)[0]]}


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


def _caption_stats(grid: pd.DataFrame) -> pd.DataFrame:
    """Min, mean, max and std of each figure's values per variant (the captions),
    and rep_std: the typical spread of one cell over its repetitions (the mean of
    the cells' std over repetitions), to read the differences against."""
    out = []
    for v, g in grid.groupby("variant"):
        for col in METRICS:
            x = g[col].dropna()
            if len(x):
                pub = PUBLISHED[col][v]
                out.append({"variant": v, "metric": col, "min": x.min(), "mean": x.mean(),
                            "max": x.max(), "std": x.std(ddof=0),
                            "rep_std": g[f"{col}_rep_std"].mean(), "paper_min": pub[0],
                            "paper_mean": pub[1], "paper_max": pub[2], "paper_std": pub[3]})
    return pd.DataFrame(out)


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

