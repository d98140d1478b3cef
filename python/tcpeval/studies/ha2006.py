"""Ha, Kim, Le, Rhee & Xu, "A step toward realistic performance evaluation of
high-speed TCP variants" (seed 003): a 400 Mbit/s dumbbell whose DropTail buffer
is max(2 Mbytes, 20% of the BDP); two high-speed flows with base RTT 16, 42, 82,
162 or 324 ms, the first starting at 30 s and the second at 130 s of a 600 s run,
measured after 135 s; BIC, CUBIC, FAST, HSTCP, H-TCP, STCP and Reno; every
experiment with and without background traffic (long-lived and web-like TCP in
both directions, per-flow RTTs from a distribution). Figures 2-9: intra-protocol
fairness (Jain), convergence time, RTT fairness, TCP friendliness, link
utilisation, utilisation with the buffer fixed at 2 Mbytes, CoV of the total
bottleneck throughput, packet loss rate; each (a) without and (b) with background.

Assumed where the text is silent (docs/studies/ha2006.md): background = 4
long-lived Reno flows each way and web-like transfers offering 20% (forward) and
10% (reverse) of the link, all with 64 KB windows (the text's one number) and
RTTs lognormal (median 80 ms, sigma 0.8) standing in for the unprinted measured
distribution; RTT fairness: flow 1 fixed at 162 ms, flow 2 at each RTT, index =
Jain's index of the pair; TCP friendliness: the variant (30 s) against one Reno
flow (130 s) at the same RTT, index = Jain's index; convergence time = flow 2's
epsilon-convergence (EWMA lambda 0.1, epsilon 0.8, 1 s samples) to half the
pair's throughput; CoV and loss over 1 s bottleneck intervals after 135 s; the
buffer of a two-RTT run from the longer RTT; 2 Mbytes = 2 MiB (dummynet's
binary units); one run per cell. Stacks: the paper's Linux 2.6.13
(CUBIC 2.1), FAST on Linux 2.4 as the paper ran it; the paper's own SACK fix is
not modelled (the engine's RFC 6675 SACK).
"""

from __future__ import annotations

import math

from .._lazy import LazyModule
from . import protocol
from .protocol import Cell, Design

# Imported on first use (see LazyModule).
pd = LazyModule("pandas")
metrics = LazyModule("tcpeval.metrics")

NAME = "ha2006"
TITLE = "Ha, Kim, Le, Rhee & Xu 2006: high-speed TCP variants with and without background traffic"
SOURCE = "seed 003"
# The stack the paper ran: a modified Linux 2.6.13 (seed 003, section 3; FAST on 2.4).
# Every run's stack (Design.stack, issue 30).
PAPER_STACK = "linux-2.6.13"

PROTOCOLS = {"bic": "BIC", "cubic": "CUBIC", "fast": "FAST", "highspeed": "HSTCP",
             "htcp": "H-TCP", "scalable": "STCP", "reno": "Reno"}
BASELINE = "reno"
# Section 3.1: "FAST that has an implementation in Linux kernel 2.4 because FAST
# is not yet publicly available in Linux kernel 2.6". FAST's flows run the
# linux-2.4 stack (its era's switches around the engine's FAST code); every
# other flow the design's linux-2.6.13 (whose CUBIC is 2.1: beta 819/1024, no
# HyStart, docs/stacks.md).
FLOW_STACKS = {"fast": "linux-2.4"}
RATE_BPS = 400e6
BUFFER_FLOOR_BYTES = 2 * 1024 * 1024  # dummynet sizes are binary (ipfw(8))
BUFFER_BDP_SHARE = 0.2
RTTS_MS = (16, 42, 82, 162, 324)
RTT_FIXED_MS = 162
BACKGROUND_RTT = {"kind": "lognormal", "median": "80ms", "sigma": 0.8}
BACKGROUND_LONG_LIVED = 4  # per direction
BACKGROUND_WEB_LOAD = {"forward": 0.2, "reverse": 0.1}
SETTINGS = ("without", "with")
# The statements of section 4 with the number or bound each implies, and where
# the paper makes it, are in data/ha2006/claims.csv ("considerably", Figs. 4 and
# 5, is read as a mean change of Jain's index over the RTTs of at least 0.05:
# the text gives no number).

_ALL = tuple(PROTOCOLS)
PROFILES = {
    # protocols, RTTs (ms), RTT fairness's fixed RTT, run length, flow starts,
    # measurement start (s)
    "smoke": {"protocols": ("cubic", "reno"), "rtts": (16, 42), "rtt_fixed": 42,
              "duration": 40, "start1": 5, "start2": 15, "from": 17},
    "quick": {"protocols": _ALL, "rtts": (16, 82, 324), "rtt_fixed": 82,
              "duration": 300, "start1": 30, "start2": 130, "from": 135},
    "full": {"protocols": _ALL, "rtts": RTTS_MS, "rtt_fixed": RTT_FIXED_MS,
             "duration": 600, "start1": 30, "start2": 130, "from": 135},
}


# ----- the experiments --------------------------------------------------------------------


def buffer_bytes(rtt_ms: float) -> int:
    """Section 3.1: the larger of 2 Mbytes and 20% of the bandwidth-delay product."""
    bdp = RATE_BPS * rtt_ms / 1e3 / 8
    # Round away float noise first (0.2 x BDP is often a whole number of bytes).
    return max(BUFFER_FLOOR_BYTES, math.ceil(round(BUFFER_BDP_SHARE * bdp, 6)))


def background() -> dict:
    """Long-lived and web-like Reno traffic in both directions (section 3.3)."""
    return {
        "long_lived": [{"count": BACKGROUND_LONG_LIVED, "direction": d, "rtt": BACKGROUND_RTT}
                       for d in BACKGROUND_WEB_LOAD],
        "web": [{"load": load, "direction": d, "rtt": BACKGROUND_RTT}
                for d, load in BACKGROUND_WEB_LOAD.items()],
    }


def _flow(cc: str, start: float, rtt_ms: float) -> dict:
    f = {"cc": cc, "start": f"{start}s", "rtt": f"{rtt_ms}ms"}
    if cc in FLOW_STACKS:
        f["stack"] = FLOW_STACKS[cc]
    return f


def _doc(p: dict, ccs: tuple[str, str], rtts: tuple[float, float], setting: str,
         buffer: int | None = None) -> dict:
    longest = max(rtts)
    doc = {
        "network": {"bottleneck": f"{RATE_BPS / 1e6:g}Mbps", "rtt": f"{longest}ms",
                    "buffer": f"{buffer or buffer_bytes(longest)}B"},
        "flows": [_flow(ccs[0], p["start1"], rtts[0]), _flow(ccs[1], p["start2"], rtts[1])],
        "run": {"duration": f"{p['duration']}s", "measure_from": f"{p['from']}s",
                "interval": "1s", "trace_interval": "1s"},
    }
    if setting == "with":
        doc["background"] = background()
    return doc


def cell(kind: str, cc: str, rtt: float, setting: str) -> str:
    return f"{kind}-{cc}-{rtt}ms-{setting}"


def source(kind: str, cc: str, rtt: float, p: dict) -> str:
    """The kind of run that holds a cell: the RTT-fairness run at the fixed RTT and
    the 2 Mbyte run where the default buffer is 2 Mbytes are the intra runs."""
    if (kind == "rtt" and rtt == p["rtt_fixed"]) or \
            (kind == "buffer2mb" and buffer_bytes(rtt) == BUFFER_FLOOR_BYTES):
        return "intra"
    return kind


def design(profile: str) -> Design:
    """intra: two flows of one protocol at one RTT (Figs 2, 3, 6, 8, 9); rtt: flow 1
    at the fixed RTT, flow 2 at each RTT (Fig 4); friendly: the variant then a Reno
    flow (Fig 5); buffer2mb: the intra runs with a 2 Mbyte buffer (Fig 7). Each
    distinct run once (see `source`), with seed 1."""
    p = PROFILES[profile]
    designs = {
        "intra": lambda cc, rtt, s: _doc(p, (cc, cc), (rtt, rtt), s),
        "rtt": lambda cc, rtt, s: _doc(p, (cc, cc), (p["rtt_fixed"], rtt), s),
        "buffer2mb": lambda cc, rtt, s: _doc(p, (cc, cc), (rtt, rtt), s, BUFFER_FLOOR_BYTES),
        "friendly": lambda cc, rtt, s: _doc(p, (cc, BASELINE), (rtt, rtt), s),
    }
    cells = []
    for setting in SETTINGS:
        for cc in p["protocols"]:
            for rtt in p["rtts"]:
                for kind, doc in designs.items():
                    if source(kind, cc, rtt, p) == kind and \
                            not (kind == "friendly" and cc == BASELINE):
                        cells.append(Cell(cell(kind, cc, rtt, setting), doc(cc, rtt, setting),
                                          {"kind": kind, "protocol": cc, "rtt_ms": rtt,
                                           "background": setting}))
    return Design(cells, stack=PAPER_STACK)


# ----- analysis ---------------------------------------------------------------------------


def convergence(flows: pd.DataFrame, start2: float, end: float) -> float:
    """Seconds from flow 2's start until its short-term average reaches 0.8 of the
    fair share, half the pair's mean throughput after its start (Li, Leith &
    Shorten's epsilon-convergence, metrics.convergence_time). NaN if never."""
    after = flows[(flows["t_s"] > start2) & (flows["t_s"] <= end)]
    if after.empty:
        return math.nan
    fair = after.groupby("t_s")["throughput_mbps"].sum().mean() / 2
    f2 = after[after["flow"] == 1]
    return metrics.convergence_time(f2["t_s"], f2["throughput_mbps"], start2, reference=fair)


def total_cov(links: pd.DataFrame, start: float) -> float:
    """CoV of the bottleneck's total transmitted rate per interval after `start`
    (section 4.5: the whole link, background included)."""
    rows = metrics.window(links[links["link"] == "bottleneck"], start)
    return metrics.stability_index(rows["tx_bytes"].to_numpy())


def _pair(summary: dict) -> tuple[float, float]:
    return summary["flows"][0]["throughput_mbps"], summary["flows"][1]["throughput_mbps"]


def _intra_row(s: dict, name: str, p: dict, flows_of) -> dict:
    x1, x2 = _pair(s)
    conv = convergence(flows_of(name), p["start2"], p["duration"])
    return {"flow1_mbps": x1, "flow2_mbps": x2, "jain": metrics.jain_index([x1, x2]),
            "convergence_s": conv, "converged": float(not math.isnan(conv)),
            "utilization": s["bottleneck"]["utilization"],
            "loss_rate": s["bottleneck"]["window_loss_rate"],
            "cov_total": total_cov(flows_of(name, "links"), p["from"])}


def _rows(results: dict, p: dict, kind: str, protocols, build) -> pd.DataFrame:
    rows = []
    for setting in SETTINGS:
        for cc in protocols:
            for rtt in p["rtts"]:
                name = cell(source(kind, cc, rtt, p), cc, rtt, setting)
                if name in results:
                    rows.append({"protocol": cc, "rtt_ms": rtt, "background": setting,
                                 **build(results[name], name, cc, rtt, setting)})
    return pd.DataFrame(rows)


def report(results: dict[str, dict], profile: str, flows_of=None) -> dict:
    p = PROFILES[profile]
    protos = p["protocols"]
    intra = _rows(results, p, "intra", protos, lambda s, n, *_: _intra_row(s, n, p, flows_of))

    def rtt_row(s, n, cc, rtt, setting):
        x1, x2 = _pair(s)
        short, long_ = (x1, x2) if p["rtt_fixed"] <= rtt else (x2, x1)
        return {"rtt1_ms": p["rtt_fixed"], "flow1_mbps": x1, "flow2_mbps": x2,
                "jain": metrics.jain_index([x1, x2]),
                "short_long_ratio": metrics.rtt_fairness(short, long_)["ratio"]}

    reno_alone = {(r.rtt_ms, r.background): r.flow2_mbps for r in intra.itertuples()
                  if r.protocol == BASELINE} if len(intra) else {}

    def friendly_row(s, n, cc, rtt, setting):
        x1, x2 = _pair(s)
        ref = reno_alone.get((rtt, setting), math.nan)
        return {"variant_mbps": x1, "reno_mbps": x2, "jain": metrics.jain_index([x1, x2]),
                "reno_vs_reno": metrics.tcp_friendliness(x2, ref) if ref == ref else math.nan}

    def buffer_row(s, n, cc, rtt, setting):
        return {"buffer_bytes": BUFFER_FLOOR_BYTES, "utilization": s["bottleneck"]["utilization"],
                "loss_rate": s["bottleneck"]["window_loss_rate"]}

    tables = {
        "intra_protocol": intra,
        "rtt_fairness": _rows(results, p, "rtt", protos, rtt_row),
        "tcp_friendliness": _rows(results, p, "friendly",
                                  [c for c in protos if c != BASELINE], friendly_row),
        "utilization_2mb": _rows(results, p, "buffer2mb", protos, buffer_row),
    }
    tables["agreement"] = claims_table(tables, p)
    return {"tables": tables, "figures": figures(tables, p),
            "notes": [__doc__.split("\n\n", 1)[0], protocol.agreement_note(tables["agreement"]),
                      "Convergence times that never converged are NaN in the table and drawn "
                      "at the top of Figure 3 as open markers."]}


# ----- the paper's statements (section 4) beside ours -------------------------------------


def _pivot(t: pd.DataFrame, cc: str, col: str) -> pd.DataFrame:
    rows = t[t["protocol"] == cc] if len(t) else t
    if rows.empty:
        return pd.DataFrame(columns=list(SETTINGS))
    return rows.pivot_table(index="rtt_ms", columns="background", values=col,
                            dropna=False).reindex(columns=list(SETTINGS))


def change_with_background(t: pd.DataFrame, cc: str, col: str) -> float:
    """Mean over RTTs of (with background - without) for one protocol."""
    w = _pivot(t, cc, col)
    return float((w["with"] - w["without"]).mean()) if len(w) else math.nan


def rank_from_top(t: pd.DataFrame, setting: str, col: str, cc: str) -> float:
    """1 for the protocol with the highest mean over RTTs of `col`, 2 next, ..."""
    rows = t[t["background"] == setting] if len(t) else t
    if rows.empty or cc not in set(rows["protocol"]):
        return math.nan
    means = rows.groupby("protocol")[col].mean().sort_values(ascending=False)
    return float(list(means.index).index(cc) + 1)


def _at(t: pd.DataFrame, setting: str, col: str, which) -> pd.Series:
    """Per protocol, `col` at the shortest (which=min) or longest (max) RTT."""
    rows = t[t["background"] == setting] if len(t) else t
    if rows.empty:
        return pd.Series(dtype=float)
    rtt = which(rows["rtt_ms"])
    return rows[rows["rtt_ms"] == rtt].set_index("protocol")[col]


def _fraction(x: pd.Series) -> float:
    return float(x.mean()) if len(x) else math.nan


def _convergence_filled(t: pd.DataFrame, p: dict) -> pd.DataFrame:
    """Runs that never converged count as the whole time flow 2 was running."""
    if t.empty:
        return t
    return t.assign(convergence_s=t["convergence_s"].fillna(p["duration"] - p["start2"]))


def measures(p: dict) -> dict[str, tuple[str, object]]:
    """Claim id (data/ha2006/claims.csv) -> (the table it reads, ours(table))."""
    conv = lambda t: _convergence_filled(t, p)  # noqa: E731
    nan = math.nan
    return {
        "fast_fairness_bg": ("intra_protocol",
                             lambda t: change_with_background(t, "fast", "jain")),
        "hstcp_fairness_bg": ("intra_protocol",
                              lambda t: change_with_background(t, "highspeed", "jain")),
        "hstcp_convergence_bg": ("intra_protocol", lambda t: change_with_background(
            conv(t), "highspeed", "convergence_s")),
        "reno_convergence_bg": ("intra_protocol", lambda t: change_with_background(
            conv(t), "reno", "convergence_s")),
        "fast_rtt_fair": ("rtt_fairness", lambda t: _pivot(t, "fast", "jain")["without"].mean()),
        "fast_rtt_fair_bg": ("rtt_fairness", lambda t: change_with_background(t, "fast", "jain")),
        "rtt_fair_improves_bg": ("rtt_fairness", lambda t: _fraction(
            _at(t, "with", "jain", max) > _at(t, "with", "jain", min))),
        "fast_friendly_bg": ("tcp_friendliness",
                             lambda t: change_with_background(t, "fast", "jain")),
        "less_friendly_long_rtt": ("tcp_friendliness", lambda t: _fraction(
            _at(t, "without", "jain", max) < _at(t, "without", "jain", min))),
        "reno_util_short_rtt": ("intra_protocol", lambda t: _pivot(t, "reno", "utilization")[
            "without"].loc[lambda s: s.index < 100].min()),
        "util_bg": ("intra_protocol", lambda t: t[t["background"] == "with"][
            "utilization"].min() if len(t) else nan),
        "util_long_rtt": ("intra_protocol", lambda t: _fraction(
            (_at(t, "without", "utilization", max) < _at(t, "without", "utilization", min))
            .reindex(["htcp", "scalable", "fast", "reno"]).dropna())),
        "htcp_util_2mb": ("utilization_2mb",
                          lambda t: _at(t, "with", "utilization", max).get("htcp", nan)),
        "fast_cov_bg": ("intra_protocol",
                        lambda t: change_with_background(t, "fast", "cov_total")),
        "htcp_cov": ("intra_protocol", lambda t: rank_from_top(t, "without", "cov_total", "htcp")),
        "htcp_cov_bg": ("intra_protocol", lambda t: rank_from_top(t, "with", "cov_total", "htcp")),
        "loss_highest": ("intra_protocol", lambda t: max(
            rank_from_top(t, "without", "loss_rate", c) for c in ("htcp", "scalable"))),
        "loss_highest_bg": ("intra_protocol", lambda t: max(
            rank_from_top(t, "with", "loss_rate", c) for c in ("htcp", "scalable"))),
    }


def claims() -> list[dict]:
    """The statements of section 4 (data/ha2006/claims.csv)."""
    return protocol.published(NAME, "claims")


def claims_table(tables: dict[str, pd.DataFrame], p: dict) -> pd.DataFrame:
    """Each statement's number in our tables, judged by the studies' comparison
    routine against the bound the statement implies."""
    rows, ours = [], measures(p)
    for claim in claims():
        table, measure = ours[claim["id"]]
        try:
            value = float(measure(tables[table]))
        except (KeyError, ValueError, IndexError):
            value = math.nan  # the profile lacks the protocols or runs the claim needs
        rows.append(protocol.compare(claim["claim"], claim["source"], claim["paper"], value,
                                     claim["tolerance"], kind=claim["kind"]))
    return protocol.agreement(rows)


# ----- figures ----------------------------------------------------------------------------

FIGURES = (
    ("fig2_intra_fairness", "intra_protocol", "jain", "rtt_ms", "fairness index"),
    ("fig3_convergence_time", "intra_protocol", "convergence_s", "rtt_ms", "convergence time (s)"),
    ("fig4_rtt_fairness", "rtt_fairness", "jain", "rtt_ms", "RTT fairness index"),
    ("fig5_tcp_friendliness", "tcp_friendliness", "jain", "rtt_ms", "TCP fairness index"),
    ("fig6_utilization", "intra_protocol", "utilization", "rtt_ms", "link utilisation"),
    ("fig7_utilization_2mb", "utilization_2mb", "utilization", "rtt_ms",
     "link utilisation (2 MB buffer)"),
    ("fig8_cov", "intra_protocol", "cov_total", "rtt_ms", "CoV of total throughput"),
    ("fig9_loss_rate", "intra_protocol", "loss_rate", "rtt_ms", "packet loss rate"),
)


def figures(tables: dict[str, pd.DataFrame], p: dict) -> dict:
    out = {}
    for name, table, col, x, label in FIGURES:
        t = tables[table]
        xlabel = (f"RTT of flow 2 (ms); flow 1 at {p['rtt_fixed']} ms" if table == "rtt_fairness"
                  else "RTT (ms)")
        if col == "convergence_s" and len(t):
            t = t.assign(censored=t["convergence_s"].isna())
            t = _convergence_filled(t, p)
        out[name] = _panels(t, col, x, xlabel, label)
    return out


def _panels(t: pd.DataFrame, col: str, x: str, xlabel: str, label: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, setting in zip(axes, SETTINGS, strict=True):
        rows = t[t["background"] == setting] if len(t) else t
        for cc, g in (rows.groupby("protocol", sort=False) if len(rows) else ()):
            g = g.sort_values(x)
            line, = ax.plot(g[x], g[col], marker="o", label=PROTOCOLS[cc],
                            color=f"C{list(PROTOCOLS).index(cc)}")
            if "censored" in g:
                c = g[g["censored"]]
                ax.plot(c[x], c[col], "o", mfc="white", color=line.get_color())
        ax.set_xscale("log")
        ax.set_xticks(sorted(set(rows[x])) if len(rows) else [])
        ax.set_xticks([], minor=True)
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel(xlabel)
        ax.set_title(f"({'ab'[SETTINGS.index(setting)]}) {setting.capitalize()} background "
                     "traffic", fontsize=9)
        ax.grid(alpha=0.3)
        if len(rows):
            ax.legend(fontsize=7)
    axes[0].set_ylabel(label)
    fig.tight_layout()
    return fig

