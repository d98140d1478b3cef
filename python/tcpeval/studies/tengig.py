"""10G evaluation of Reno, Scalable, HighSpeed, H-TCP, BIC and CUBIC (seed 002):
a physical 10 Gbit/s Ethernet dumbbell (9.5 Gbit/s of goodput without jumbo
frames), RTT 0.2/6.2/12.2/24.2 ms (0-4 fibre rings of 6 ms), random drop rate 0
or 1e-7..1e-2 from a NetFPGA, 15 min iperf3 runs, 5 repetitions. Criteria (after
Li, Leith & Shorten 2007): responsiveness (mean throughput against drop rate per
RTT, Figures 4a-7a), efficiency (quartiles of the throughput samples, box plots
4b-7b), fairness and link utilisation of two flows of one variant (8a, 10),
backward compatibility (the same with Reno as the second flow, 8b) and the
epsilon-convergence time of a newly started flow with its spread (Figure 9;
lambda 0.1, epsilon 0.8). The paper's Table II: 840 + 120 + 100 + 220 = 1,280 runs.

Modelled as (every choice the text leaves open is in docs/studies/tengig.md):
- the wire: 10 Gbit/s with 1538-byte frames on the wire (1500-byte IP packet plus
  38 bytes of Ethernet preamble, header, FCS and inter-frame gap) and a 1460-byte
  MSS (TCP timestamps off, as the paper set them), so the goodput ceiling is
  10 x 1460 / 1538 = 9.49 Gbit/s: the paper's 9.5 Gbit/s without jumbo frames;
- a DropTail bottleneck buffer of one BDP at each RTT (the text gives none);
- the NetFPGA's drop: Bernoulli per data packet at the bottleneck; on ring paths
  (RTT > 0.2 ms) the measured residual loss of the rings, 2.2e-8 per packet (15
  CRC retransmissions per 15 min at 10 Gbit/s), is added to it;
- every flow runs the linux-3.16 stack (the paper's Ubuntu 14.04.1 kernel,
  Table I's defaults; docs/stacks.md);
- every flow's host spends a random 0-0.3 us extra per packet (HOST_NOISE, the
  flows' send_overhead): the paper's hosts had timing noise, a deterministic
  simulation has none and phase-locks where they would not (Scalable and BIC
  alone at 12.2 ms, docs/model.md "Phase locking after a large overshoot");
- fairness and compatibility runs start both flows together ("both flows try to
  send at 10 Gbps" at the start); convergence runs start the second flow later
  (60 s in the full profile: the text gives no offset) and sample at 0.1 s.

Profiles. full: the paper's design (9.5 Gbit/s, 900 s runs, 5 repetitions, all
1,280 runs; about 6 x 10^11 packets, days of CPU). quick: the paper's rate, RTTs and
variants, one repetition, 10 s runs (second flow at 2 s), drop rates 0 and
1e-6..1e-2 (1e-7 drops fewer than one packet in 10 s at 9.5 Gbit/s). smoke: 1
Gbit/s line rate with the buffer kept at one BDP, RTT 0.2/6.2 ms, drop 0, 1e-4,
1e-2, 3 s runs: a pipeline check, not a result. The quick profile keeps the rate
because rate scaling moves each variant's loss response differently (the window
at a given drop rate is fixed in packets while the BDP in packets shrinks), and
scaling the RTT up to keep the BDP saves nothing (cost per RTT is the BDP in
packets).
"""

from __future__ import annotations

import math

from .._lazy import LazyModule
from ..sweep import derive_seed
from . import protocol
from .protocol import Cell, Design

# Imported on first use (see LazyModule).
np = LazyModule("numpy")
pd = LazyModule("pandas")
metrics = LazyModule("tcpeval.metrics")

NAME = "tengig"
TITLE = "10G evaluation of Reno, Scalable, HighSpeed, H-TCP, BIC and CUBIC"
SOURCE = "seed 002"
# The stack the paper ran: Ubuntu 14.04.1's Linux 3.16 (seed 002, section IV).
# Every run's stack (Design.stack, issue 30).
PAPER_STACK = "linux-3.16"
# Host timing noise on every flow (send_overhead: uniform 0 to this per packet,
# a quarter of a 1538-byte frame's 1.23 us at 10 Gbit/s). Any value from 0.15 us
# frees the phase lock; the headline numbers move by under 0.1% with it
# (docs/studies/tengig.md, case "no host noise").
HOST_NOISE = "0.3us"

VARIANTS = ("reno", "scalable", "highspeed", "bic", "cubic", "htcp")
LEGACY = "reno"
RTTS_MS = (0.2, 6.2, 12.2, 24.2)
DROP_RATES = (0.0, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
WIRE_BYTES = 1538      # 1500-byte IP packet + 38 bytes of Ethernet framing on the wire
MSS = 1460             # 1500 - 20 (IP) - 20 (TCP), timestamps off (paper section IV)
RING_LOSS = 2.2e-8     # measured residual loss on the rings (paper section IV)
BUFFER_BDP = 1.0       # bottleneck buffer in BDPs (assumed: the text gives none)
LAMBDA, EPSILON = 0.1, 0.8   # convergence metric (paper section V; Li et al.'s epsilon)
SEED_BASE = 1

PROFILES = {
    "smoke": {"line_gbps": 1.0, "rtts": (0.2, 6.2), "drops": (0.0, 1e-4, 1e-2),
              "duration": 3, "start2": 1, "reps": 1},
    "quick": {"line_gbps": 10.0, "rtts": RTTS_MS, "drops": (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2),
              "duration": 10, "start2": 2, "reps": 1},
    "full": {"line_gbps": 10.0, "rtts": RTTS_MS, "drops": DROP_RATES,
             "duration": 900, "start2": 60, "reps": 5},
}
INTERVAL_S = 1.0       # iperf3's default report interval: the efficiency samples
CONV_INTERVAL_S = 0.1  # delta of the short-term average (assumed)

# Numbers the text states (its figures are not in the copy) are in
# data/tengig/published.csv: per (table, variant, RTT, drop rate, metric) the
# paper's value, range or bound (throughput in Gbit/s), the tolerance ours is
# judged with and the source. A value agrees within 10% (of the nearer end of a
# range or bound). Jain's index lives in [1/n, 1], so 10% of it spans most of the
# two-flow range (0.891 would "agree" with 0.96): it agrees within 0.03 instead,
# as one 900 s two-flow run's index moved by 0.03 with the flows' start offsets
# (docs/studies/tengig.md, full-length cells at 12.2 ms).


def run_note(profile: str) -> str:
    p = PROFILES[profile]
    return f"{p['duration']} s runs at {p['line_gbps']:g} Gbit/s line rate"


def seeds(profile: str) -> tuple[int, ...]:
    """Repetition r's seed is the sweep's derived seed for r (also with one
    repetition, as the runs were made), the same in every cell."""
    return tuple(derive_seed(SEED_BASE, r) for r in range(PROFILES[profile]["reps"]))


def buffer_pkts(line_gbps: float, rtt_ms: float) -> int:
    """One BDP (times BUFFER_BDP) in wire frames at the line rate."""
    return math.ceil(BUFFER_BDP * line_gbps * 1e9 * rtt_ms / 1e3 / (8 * WIRE_BYTES))


def path_loss(rtt_ms: float, drop: float) -> float:
    """Induced drop rate combined with the rings' residual loss (ring paths only)."""
    residual = RING_LOSS if rtt_ms > 0.2 else 0.0
    return drop + residual - drop * residual   # 1 - (1 - drop)(1 - residual)


def _doc(p: dict, ccs: list[str], rtt: float, drop: float, start2=0.0,
         interval=INTERVAL_S) -> dict:
    flows = [{"cc": cc, "mtu": WIRE_BYTES, "mss": MSS, "start": f"{start2 if i else 0:g}s",
              "send_overhead": HOST_NOISE} for i, cc in enumerate(ccs)]
    if len(flows) > 1:
        # Two flows start within one RTT of their nominal times, drawn from the
        # repetition's seed: on the loss-free 0.2 ms path nothing else is random,
        # and the five repetitions would be copies of one run.
        for f in flows:
            f["start_jitter"] = f"{rtt}ms"
    return {
        "network": {"bottleneck": f"{p['line_gbps']:g}Gbps", "rtt": f"{rtt}ms",
                    "buffer": f"{buffer_pkts(p['line_gbps'], rtt)}pkt",
                    "loss": path_loss(rtt, drop)},
        "flows": flows,
        "run": {"duration": f"{p['duration']}s", "interval": f"{interval:g}s",
                "trace_interval": f"{interval:g}s"},
    }


def pairs() -> list[tuple[str, str]]:
    """Convergence pairs: each variant against itself and, if not Reno, Reno as
    the new flow (Table II: 'same as first variant or Reno')."""
    return [(v, v) for v in VARIANTS] + [(v, LEGACY) for v in VARIANTS if v != LEGACY]


def _cell(kind: str, doc: dict, **axes) -> Cell:
    return Cell(cell_name(kind, tuple(axes.values())), doc, {"kind": kind, **axes})


def design(profile: str) -> Design:
    """single: one variant per RTT and drop rate; fair: two flows of a variant;
    compat: the variant and Reno; conv: the second flow started later. A run is
    named after its cell and its repetition ("single-reno-0.2-0-3")."""
    p = PROFILES[profile]
    cells = []
    for rtt in p["rtts"]:
        for v in VARIANTS:
            cells += [_cell("single", _doc(p, [v], rtt, drop), variant=v, rtt_ms=rtt,
                            drop_rate=drop) for drop in p["drops"]]
            cells.append(_cell("fair", _doc(p, [v, v], rtt, 0.0), variant=v, rtt_ms=rtt))
            if v != LEGACY:
                cells.append(_cell("compat", _doc(p, [v, LEGACY], rtt, 0.0), variant=v,
                                   rtt_ms=rtt))
        for first, second in pairs():
            cells.append(_cell("conv", _doc(p, [first, second], rtt, 0.0, p["start2"],
                                            CONV_INTERVAL_S),
                               first=first, second=second, rtt_ms=rtt))
    return Design(cells, seeds(profile), rep_name="-{rep}", stack=PAPER_STACK)


def backs_published(cell: Cell) -> bool:
    """Whether the cell's runs give one of the numbers the paper prints
    (published.csv): the single-flow cells of the responsiveness, efficiency and
    ratio rows, the two-flow cells of the fairness rows. A long profile run in
    batches runs these first (studies/batches.py)."""
    a = cell.axes
    if a["kind"] == "single":
        return (a["variant"], a["rtt_ms"], a["drop_rate"]) in _published_cells()["single"]
    return a["kind"] == "fair" and (a["variant"], a["rtt_ms"]) in _published_cells()["fair"]


def _published_cells() -> dict[str, set[tuple]]:
    out: dict[str, set[tuple]] = {"single": set(), "fair": set()}
    for r in protocol.published(NAME, "published"):
        for v in r["variant"].split("/"):
            if r["table"] == "fairness":
                out["fair"].add((v, r["rtt_ms"]))
            else:
                out["single"].add((v, r["rtt_ms"], r["drop_rate"]))
    return out


def cell_name(kind: str, key: tuple) -> str:
    return "-".join([kind, *(f"{k:g}" if isinstance(k, float) else str(k) for k in key)])


# ----- analysis ------------------------------------------------------------------------


def convergence(t_s, gbps, start_s: float) -> tuple[float, float]:
    """epsilon-convergence time (s) of a flow started at start_s and its spread
    (Gbit/s) from then on (seed 002 section III-B; metrics.py)."""
    t, x = np.asarray(t_s, dtype=float), np.asarray(gbps, dtype=float)
    keep = t > start_s + 1e-9
    t, x = t[keep], x[keep]
    tc = metrics.convergence_time(t, x, start_s, lam=LAMBDA, epsilon=EPSILON)
    if math.isnan(tc):
        return math.nan, math.nan
    index = int(np.argmin(np.abs(t - start_s - tc)))
    return tc, metrics.spread(x, index, lam=LAMBDA)


def _series(flows: pd.DataFrame, flow: int) -> pd.DataFrame:
    return flows[flows["flow"] == flow].sort_values("t_s")


def _gbps(summary: dict, flow: int) -> float:
    return summary["flows"][flow]["throughput_mbps"] / 1e3


# ----- per-run records ---------------------------------------------------------------
# What the report keeps of each run: a single run's mean and interval samples, a
# pair's values, a convergence run's time and spread. The full profile's 1,280
# records are small enough to keep in the tree between sessions (batches.py).

RECORD_AXES = ("kind", "variant", "rtt_ms", "drop_rate", "first", "second")


def run_record(cell: Cell, summary: dict, flows, profile: str) -> dict:
    """One finished run's record; `flows()` reads its interval table."""
    kind = cell.axes["kind"]
    rec = {k: cell.axes.get(k) for k in RECORD_AXES}
    if kind == "single":
        rec["gbps"] = _gbps(summary, 0)
        rec["samples_gbps"] = (_series(flows(), 0)["throughput_mbps"].to_numpy() / 1e3).tolist()
    elif kind in ("fair", "compat"):
        rec.update(pair_row(summary))
    else:
        s = _series(flows(), 1)
        rec["tc_s"], rec["spread_gbps"] = convergence(
            s["t_s"], s["throughput_mbps"] / 1e3, PROFILES[profile]["start2"])
    return rec


def _single_rows(records: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each single run's mean, and every interval sample of it, in design order."""
    cols = ["variant", "rtt_ms", "drop_rate", "gbps", "rep"]
    single = records[records["kind"] == "single"] if len(records) else records
    if not len(single):
        empty = pd.DataFrame(columns=cols).astype({"gbps": float})
        return empty, empty.copy()
    means = single[cols].astype({"gbps": float}).reset_index(drop=True)
    counts = single["samples_gbps"].map(len).to_numpy()
    samples = single.loc[single.index.repeat(counts), cols].reset_index(drop=True)
    samples["gbps"] = np.concatenate([np.asarray(x, dtype=float)
                                      for x in single["samples_gbps"]] or [[]])
    return means, samples.astype({"gbps": float})


def _per_group(df: pd.DataFrame, by: list[str], row) -> pd.DataFrame:
    """One row per group of `by` (in order of appearance): its keys and row(group)."""
    out = [{**dict(zip(by, keys, strict=True)), **row(g)}
           for keys, g in df.groupby(by, sort=False)]
    return pd.DataFrame(out, columns=[*by, *row(df.iloc[:0]).keys()])


def responsiveness(means: pd.DataFrame) -> pd.DataFrame:
    """Mean throughput over the repetitions' run averages, per variant, RTT, drop,
    with its sample std and the number of runs (metrics.aggregate)."""
    def row(g):
        a = metrics.aggregate(g["gbps"].to_numpy())
        return {"mean_gbps": a["mean"], "std_gbps": a["std"], "runs": a["n"]}
    return _per_group(means, ["variant", "rtt_ms", "drop_rate"], row)


def efficiency(samples: pd.DataFrame) -> pd.DataFrame:
    """Quartiles (metrics.interval_stats), minimum and maximum of the pooled
    interval samples (box plots), and how many runs (repetitions) they come from."""
    def row(g):
        x = g["gbps"].dropna().to_numpy()
        q = metrics.interval_stats(x)
        return {"min_gbps": x.min() if len(x) else math.nan, "q25_gbps": q.q25,
                "q50_gbps": q.q50, "q75_gbps": q.q75,
                "max_gbps": x.max() if len(x) else math.nan, "samples": len(x),
                "runs": g["rep"].nunique()}
    return _per_group(samples, ["variant", "rtt_ms", "drop_rate"], row)


def pair_row(summary: dict) -> dict:
    """Jain index, both flows' throughput, their difference and the total."""
    x1, x2 = _gbps(summary, 0), _gbps(summary, 1)
    return {"jain": metrics.jain_index([x1, x2]), "flow1_gbps": x1, "flow2_gbps": x2,
            "max_diff_gbps": abs(x1 - x2), "total_gbps": x1 + x2,
            "link_utilization": summary["bottleneck"]["utilization"]}


PAIR_VALUES = ("jain", "flow1_gbps", "flow2_gbps", "max_diff_gbps", "total_gbps",
               "link_utilization")


def _of_kind(records: pd.DataFrame, kind: str, cols: list[str]) -> pd.DataFrame:
    if not len(records):
        return pd.DataFrame(columns=cols)
    # a kind with no finished run has no record columns of its own
    return records.loc[records["kind"] == kind].reindex(columns=cols).reset_index(drop=True)


def _pairs_table(kind: str, records: pd.DataFrame) -> pd.DataFrame:
    """Per variant and RTT, each pair value's mean over the finished repetitions
    (metrics.aggregate) and how many there are."""
    df = _of_kind(records, kind, ["variant", "rtt_ms", *PAIR_VALUES]).astype(
        {c: float for c in PAIR_VALUES})

    def row(g):
        return {**{c: metrics.aggregate(g[c].to_numpy())["mean"] for c in PAIR_VALUES},
                "runs": len(g)}
    df = _per_group(df, ["variant", "rtt_ms"], row)
    if kind == "compat":
        df["variant_share"] = df["flow1_gbps"] / df["total_gbps"]
    return df


def _convergence_table(records: pd.DataFrame) -> pd.DataFrame:
    df = _of_kind(records, "conv", ["first", "second", "rtt_ms", "tc_s", "spread_gbps"]).astype(
        {"tc_s": float, "spread_gbps": float})

    def row(g):
        tc, sp = (metrics.aggregate(g[c].to_numpy()) for c in ("tc_s", "spread_gbps"))
        return {"tc_mean_s": tc["mean"], "tc_std_s": tc["std"], "spread_mean_gbps": sp["mean"],
                "spread_std_gbps": sp["std"], "converged": tc["n"], "runs": len(g)}
    return _per_group(df, ["first", "second", "rtt_ms"], row)


def _ours(tables: dict, table: str, variant: str, rtt: float, drop, column: str) -> float:
    """A published row's value in our tables; a ratio divides two variants' means.
    With column "runs", how many runs back it (a ratio: the fewer of its two)."""
    if table == "ratio":
        a, b = (_ours(tables, "responsiveness", x, rtt, drop,
                      "runs" if column == "runs" else "mean_gbps") for x in variant.split("/"))
        return min(a, b) if column == "runs" else a / b
    df = tables[table]
    sel = (df["variant"] == variant) & np.isclose(df["rtt_ms"], rtt)
    if drop is not None:
        sel &= np.isclose(df["drop_rate"], drop, rtol=1e-9, atol=0)
    vals = df.loc[sel, column]
    return float(vals.iloc[0]) if len(vals) else math.nan


def agreement(tables: dict) -> pd.DataFrame:
    """Every published number (data/tengig/published.csv) beside ours, through
    the studies' comparison routine."""
    rows = []
    for r in protocol.published(NAME, "published"):
        where = (r["table"], r["variant"], r["rtt_ms"], r["drop_rate"])
        runs = _ours(tables, *where, "runs")
        drop = "" if r["drop_rate"] is None else f", drop {r['drop_rate']:g}"
        # a mean over repetitions carries its std: a t-interval (the other
        # quantities are pooled or per-pair values without one)
        has_std = r["table"] == "responsiveness" and "std_gbps" in tables["responsiveness"]
        std = _ours(tables, *where, "std_gbps") if has_std else None
        rows.append(protocol.compare(
            f"{r['table']}: {r['variant']} {r['metric']}, {r['rtt_ms']:g} ms{drop}",
            r["source"], r["paper"], _ours(tables, *where, r["metric"]), r["tolerance"],
            None if math.isnan(runs) else int(runs), kind=r["kind"],
            spread=None if std is None or math.isnan(std) else std))
    return protocol.agreement(rows)


def report(results: dict[str, dict], profile: str, flows_of) -> dict:
    return report_records(protocol.records(design(profile), results, flows_of,
                                           lambda cell, summary, flows:
                                           run_record(cell, summary, flows, profile)),
                          profile)


def report_records(records: pd.DataFrame, profile: str) -> dict:
    """The report from the finished runs' records (protocol.records), in design order."""
    means, samples = _single_rows(records)
    tables = {"responsiveness": responsiveness(means), "efficiency": efficiency(samples),
              "fairness": _pairs_table("fair", records),
              "compatibility": _pairs_table("compat", records),
              "convergence": _convergence_table(records)}
    agree = agreement(tables)
    tables["agreement"] = agree[agree["ours"].notna()].reset_index(drop=True)
    p = PROFILES[profile]
    figures = {"fig4-7a_responsiveness": _responsiveness_plot(tables["responsiveness"], p),
               **{f"fig{4 + RTTS_MS.index(rtt)}b_efficiency_{rtt:g}ms":
                  _box_plots(samples, rtt, p["drops"]) for rtt in p["rtts"]},
               "fig8_link_utilization": _pair_bars(tables, "total_gbps",
                                                   "total throughput of the two flows (Gbit/s)"),
               "fig10_fairness": _pair_bars(tables, "jain", "Jain's fairness index"),
               "fig9_convergence": _convergence_plot(tables["convergence"])}
    notes = [__doc__.split("\n\n", 1)[0], protocol.agreement_note(tables["agreement"])]
    if PROFILES[profile]["line_gbps"] != 10.0:
        notes.append(f"Profile {profile} runs at {PROFILES[profile]['line_gbps']:g} Gbit/s: "
                     "its throughputs are not comparable with the paper's 9.5 Gbit/s numbers.")
    return {"tables": tables, "figures": figures, "notes": notes}


# ----- figures -------------------------------------------------------------------------


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _drop_label(p: float) -> str:
    return "0" if p == 0 else f"1e{round(math.log10(p))}"


def _responsiveness_plot(df: pd.DataFrame, p: dict):
    """Figures 4a-7a: mean throughput against drop rate, one panel per RTT (drop
    rate 0 drawn at the left end of the log axis)."""
    plt = _plt()
    rtts, drops = p["rtts"], p["drops"]
    fig, axes = plt.subplots(1, len(rtts), figsize=(3.2 * len(rtts), 3), squeeze=False)
    pos = {p: i for i, p in enumerate(drops)}
    for ax, rtt in zip(axes[0], rtts, strict=True):
        for v in VARIANTS:
            g = df[(df["variant"] == v) & (df["rtt_ms"] == rtt)]
            ax.errorbar([pos[p] for p in g["drop_rate"]], g["mean_gbps"],
                        yerr=g["std_gbps"].fillna(0), marker="o", ms=3, label=v)
        ax.set_xticks(range(len(drops)), [_drop_label(p) for p in drops], fontsize=7)
        ax.set_xlabel("drop rate", fontsize=8)
        ax.set_ylabel("mean throughput (Gbit/s)", fontsize=8)
        ax.set_title(f"RTT {rtt:g} ms", fontsize=9)
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    return fig


def _box_plots(samples: pd.DataFrame, rtt: float, drops):
    """Figures 4b-7b: quartile boxes (whiskers at minimum and maximum) of the
    interval throughputs, one panel per drop rate."""
    plt = _plt()
    s = samples[samples["rtt_ms"] == rtt]
    fig, axes = plt.subplots(1, len(drops), figsize=(2.2 * len(drops), 3), squeeze=False,
                             sharey=True)
    for ax, p in zip(axes[0], drops, strict=True):
        data = [s[(s["variant"] == v) & (s["drop_rate"] == p)]["gbps"].to_numpy()
                for v in VARIANTS]
        ax.boxplot([d if len(d) else [np.nan] for d in data], whis=(0, 100))
        ax.set_xticks(range(1, len(VARIANTS) + 1), VARIANTS, rotation=90, fontsize=7)
        ax.set_title(f"drop {_drop_label(p)}", fontsize=8)
    axes[0][0].set_ylabel("throughput per interval (Gbit/s)", fontsize=8)
    fig.suptitle(f"efficiency at RTT {rtt:g} ms", fontsize=9)
    fig.tight_layout()
    return fig


def _pair_bars(tables: dict, col: str, label: str):
    """Figures 8 and 10: per variant and RTT, two flows of the variant (left) and
    the variant against Reno (right)."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3), sharey=True)
    for ax, kind, title in zip(axes, ("fairness", "compatibility"),
                               ("same variant", "against Reno"), strict=True):
        df = tables[kind]
        rtts = sorted(set(df["rtt_ms"]))
        width = 0.8 / max(len(rtts), 1)
        for j, rtt in enumerate(rtts):
            g = df[df["rtt_ms"] == rtt].set_index("variant").reindex(list(VARIANTS))
            ax.bar(np.arange(len(VARIANTS)) + j * width, g[col].fillna(0), width,
                   label=f"{rtt:g} ms")
        ax.set_xticks(np.arange(len(VARIANTS)) + 0.4 - width / 2, VARIANTS, fontsize=7)
        ax.set_title(title, fontsize=9)
    axes[0].set_ylabel(label, fontsize=8)
    if axes[0].get_legend_handles_labels()[0]:  # a partly run store may lack its cells
        axes[0].legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    return fig


def _convergence_plot(df: pd.DataFrame):
    """Figure 9: convergence time (bars) and spread (dots, right axis) of the new
    flow, per pair and RTT."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(10, 3.2))
    twin = ax.twinx()
    labels = [f"{a}+{b}" for a, b in pairs()]
    rtts = sorted(set(df["rtt_ms"]))
    width = 0.8 / max(len(rtts), 1)
    for j, rtt in enumerate(rtts):
        g = df[df["rtt_ms"] == rtt].set_index(["first", "second"]).reindex(pairs())
        x = np.arange(len(labels)) + j * width
        ax.bar(x, g["tc_mean_s"].fillna(0), width, label=f"{rtt:g} ms")
        twin.plot(x, g["spread_mean_gbps"], "k.", ms=5)
    ax.set_xticks(np.arange(len(labels)) + 0.4 - width / 2, labels, rotation=45, fontsize=7)
    ax.set_ylabel("convergence time (s)", fontsize=8)
    twin.set_ylabel("spread (Gbit/s, dots)", fontsize=8)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig
