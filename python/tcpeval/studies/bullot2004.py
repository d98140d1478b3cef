"""Bullot, Cottrell & Hughes-Jones, "Evaluation of advanced TCP stacks on fast
long-distance production networks" (seed 000): iperf transfers from SLAC over
three production paths, a short one to Caltech (minimum RTT 10 ms, 622 Mbit/s
bottleneck), a medium one to UFL (70 ms, 467 Mbit/s) and a long one to
Manchester (170 ms, 622 Mbit/s at SLAC's OC12); three maximum windows per path
(256 KB/512 KB/1 MB, 1/4/8 MB, 4/8/12 MB: "size 1, 2, 3"); Reno, P-TCP (16 Reno
streams, the window per stream), Scalable, FAST, HighSpeed, HSTCP-LP, H-TCP and
BIC; 1200 s runs with 5 s iperf reports, each test run once. Reported: Table 1
(throughput mean and std over the 5 s reports), the stability index (std/mean)
without and with a sinusoidal UDP stream (periods 60 s and 30 s), Table 2
(intra-protocol Jain index of two flows), Table 3 (each stack's average
asymmetry against every other), Table 4 (throughput to UFL with 8 MB windows,
the first half of the run with 16 reverse P-TCP streams from UFL).

Modelled from what the paper tells, and assumed where it is silent
(docs/studies/bullot2004.md): a production path's cross traffic is unknown, so
each path carries long-lived Reno flows with the era's default 64 KB window,
as many as make up the load that leaves the bandwidth the paper's "optimal windows"
imply (500 KB, 3.5 MB, 10 MB over 10/70/170 ms: 410/419/493 Mbit/s); the
bottleneck buffer holds 190 ms on the short path (P-TCP raised its RTT from 10 to
200 ms) and 20 ms on the others (average RTTs differed by under 10 ms); senders
have Gigabit Ethernet NICs with txqueuelen 100 (2000 for Scalable, its default);
the UDP rate swings between 5% and 20% of the bottleneck; Tables 3 and 4 use
size 2 and size 3 windows (8 MB, as the text says); the reverse P-TCP streams
use the 8 MB windows of Table 4 too; the two flows of an intra-protocol run each
start within one RTT of 0 s (drawn from the seed, as the other studies jitter:
exact symmetry would make a fair split partly an artefact); the txqueuelen test
(section 4.3: 100, 2000 and 10000 packets, path and window not stated) runs each
stack alone to UFL with the near-optimal size 2 window (4 MB). Every flow runs
the linux-2.4 stack (the paper's 2.4.19-2.4.22 kernels; the algorithms' own
2.4 patches are not modelled: docs/stacks.md).
Reduced profiles: smoke (CI: 4 stacks, size 3, 6 s runs with 1 s reports) and
quick (120 s runs; UDP and intra-protocol runs at size 3 only).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from itertools import combinations

from .._lazy import LazyModule
from ..constants import MTU_BYTES
from . import protocol
from .protocol import Cell, Design

# Imported on first use (see LazyModule).
np = LazyModule("numpy")
pd = LazyModule("pandas")
metrics = LazyModule("tcpeval.metrics")

NAME = "bullot2004"
TITLE = "Bullot, Cottrell & Hughes-Jones 2004: advanced TCP stacks on production paths"
SOURCE = "seed 000"
# The stack the paper ran: vanilla Linux 2.4.19-2.4.22 with each stack's patch (seed 000,
# section 3).
# Every run's stack (Design.stack, issue 30).
PAPER_STACK = "linux-2.4"

# Table 1's column order; Tables 2 and 3 drop Reno; Table 4 drops Reno too.
STACKS = {"reno": "TCP Reno", "ptcp": "P-TCP", "scalable": "S-TCP", "fast": "Fast TCP",
          "highspeed": "HS-TCP", "bic": "Bic-TCP", "htcp": "H-TCP", "hstcplp": "HSTCP-LP"}
ADVANCED = tuple(s for s in STACKS if s != "reno")
PTCP_STREAMS = 16  # section 2.2
REPORT_S = 5  # iperf report interval (section 3)
NIC_RATE = "1Gbps"  # the senders' Intel Gigabit Ethernet interfaces (section 3)
TXQUEUELEN = 100  # section 4.3: the stacks' default, Scalable's is 2000
TXQUEUELEN_SCALABLE = 2000
# UDP: "the amplitude of the UDP stream varied from 5% to 20% of the bandwidth"
# read as a rate swinging between 5% and 20% of the bottleneck.
UDP_LOW, UDP_HIGH = 0.05, 0.20
UDP_PERIODS = (60, 30)
TXQUEUELENS = (100, 2000, 10000)  # section 4.3's three settings
TXQ_PATH, TXQ_SIZE = "medium", 2  # assumed: the text names neither
REVERSE_WINDOW = "8MiB"  # Table 4: "measured with 8 MByte windows" (both directions)
# Other users' traffic: long-lived flows with the era's default 64 KB window.
CROSS_WINDOW = 64 * 1024  # 16 x 256 KB ~ the UFL path's BDP (section 2.2's P-TCP rule)


@dataclass(frozen=True)
class Path:
    site: str
    rate_mbps: float
    rtt_ms: float
    windows: tuple[str, str, str]  # sizes 1, 2, 3 (iperf -w, binary units)
    optimal_window_bytes: float  # section 3's BDP-optimal window
    queue_ms: float  # bottleneck buffer in ms at the bottleneck rate (assumed, see docstring)

    @property
    def buffer_pkts(self) -> int:
        return math.ceil(self.rate_mbps * 1e6 * self.queue_ms / 1e3 / (8 * MTU_BYTES))

    @property
    def cross_load(self) -> float:
        """Background load leaving the bandwidth the optimal window implies."""
        available = self.optimal_window_bytes * 8 / (self.rtt_ms / 1e3) / 1e6
        return round(max(0.0, 1 - available / self.rate_mbps), 3)

    @property
    def cross_flows(self) -> int:
        """Window-limited background flows whose rates add up to the cross load."""
        per_flow_mbps = CROSS_WINDOW * 8 / (self.rtt_ms / 1e3) / 1e6
        return round(self.cross_load * self.rate_mbps / per_flow_mbps)


PATHS = {
    "short": Path("Caltech", 622, 10, ("256KiB", "512KiB", "1MiB"), 500 * 1024, 190),
    "medium": Path("UFL", 467, 70, ("1MiB", "4MiB", "8MiB"), 3.5 * 2**20, 20),
    "long": Path("Manchester", 622, 170, ("4MiB", "8MiB", "12MiB"), 10 * 2**20, 20),
}
SIZES = (1, 2, 3)
INTER_SIZE = 2  # Table 3's window is not stated: the near-optimal size 2
REVERSE = ("medium", 3)  # Table 4: to UFL with 8 MB windows

PROFILES = {
    "smoke": {"duration": 6, "report_s": 1, "stacks": ("ptcp", "fast", "highspeed", "bic"),
              "t1_sizes": (3,), "udp_sizes": (3,), "udp_periods": (30,), "intra_sizes": (3,),
              "txq_stacks": ("bic",), "txqueuelens": (100, 10000)},
    "quick": {"duration": 120, "report_s": REPORT_S, "stacks": tuple(STACKS), "t1_sizes": SIZES,
              "udp_sizes": (3,), "udp_periods": UDP_PERIODS, "intra_sizes": (3,),
              "txq_stacks": ADVANCED, "txqueuelens": TXQUEUELENS},
    "full": {"duration": 1200, "report_s": REPORT_S, "stacks": tuple(STACKS), "t1_sizes": SIZES,
             "udp_sizes": SIZES, "udp_periods": UDP_PERIODS, "intra_sizes": SIZES,
             "txq_stacks": ADVANCED, "txqueuelens": TXQUEUELENS},
}

# ----- published numbers ------------------------------------------------------------------

# In data/bullot2004/: table1.csv (mean and std Mbit/s per path, size and stack),
# table1_summary.csv (its averages per size over the paths, sizes 2 & 3),
# table2.csv and table2_summary.csv (intra-protocol Jain index), table3.csv (average
# asymmetry per path), table4.csv (with and without reverse traffic, +-) and
# stability.csv (section 4.6: stability index over all stacks and paths).
# Tolerances: a Jain index agrees within 0.03 (tengig's reasoning: 10% of an index
# in [1/2, 1] spans most of its range); an asymmetry in [-1, 1] within 0.1; a
# Table 4 throughput within the paper's own +-; anything else within 10%.
TOLERANCE = {"jain": "0.03", "asymmetry": "0.1"}


@functools.cache
def published_tables() -> dict[str, dict]:
    """The published numbers keyed as the tables are laid out: t1[(path, size)]
    [stack] = (mean, std); t1_summary[row][stack]; t2[(path, size)][stack];
    t2_summary[row][stack]; t3[path][stack]; t4[stack] = ((with, +-), (without,
    +-)); stability[(udp, size)] = (mean, std); source[table file]."""
    rows = {name: protocol.published(NAME, name) for name in (
        "table1", "table1_summary", "table2", "table2_summary", "table3", "table4",
        "stability")}
    out: dict[str, dict] = {k: {} for k in ("t1", "t1_summary", "t2", "t2_summary", "t3")}
    for r in rows["table1"]:
        out["t1"].setdefault((r["path"], r["size"]), {})[r["stack"]] = (r["mbps"], r["std_mbps"])
    for r in rows["table1_summary"]:
        out["t1_summary"].setdefault(r["row"], {})[r["stack"]] = r["mbps"]
    for r in rows["table2"]:
        out["t2"].setdefault((r["path"], r["size"]), {})[r["stack"]] = r["jain"]
    for r in rows["table2_summary"]:
        out["t2_summary"].setdefault(r["row"], {})[r["stack"]] = r["jain"]
    for r in rows["table3"]:
        out["t3"].setdefault(r["path"], {})[r["stack"]] = r["asymmetry"]
    out["t4"] = {r["stack"]: ((r["with_mbps"], r["with_std"]), (r["without_mbps"],
                                                                 r["without_std"]))
                 for r in rows["table4"]}
    out["stability"] = {(r["udp"], r["size"]): (r["mean"], r["std"]) for r in rows["stability"]}
    out["source"] = {name: r[0]["source"] for name, r in rows.items()}
    return out


def run_note(profile: str) -> str:
    p = PROFILES[profile]
    return (f"the paper ran each test once; {p['duration']} s runs with {p['report_s']} s "
            "reports; long-lived 64 KB-window cross traffic on every path")


# ----- scenarios -----------------------------------------------------------------------------


def _flow(stack: str, window: str, label: str | None = None, txqueuelen: int | None = None,
          jitter: str | None = None) -> dict:
    """One iperf sender; its txqueuelen is the stack's default unless given;
    `jitter`: its start is drawn within that much of 0 s from the run's seed."""
    default = TXQUEUELEN_SCALABLE if stack == "scalable" else TXQUEUELEN
    f = {"cc": "reno" if stack == "ptcp" else stack, "max_window": window,
         "txqueuelen": txqueuelen or default, "label": label or stack}
    if jitter:
        f["start_jitter"] = jitter
    if stack == "ptcp":
        f["streams"] = PTCP_STREAMS
    return f


def _doc(profile: str, path: str, flows: list[dict], udp_period: int | None = None) -> dict:
    p, net = PROFILES[profile], PATHS[path]
    doc = {
        "network": {"bottleneck": f"{net.rate_mbps}Mbps", "rtt": f"{net.rtt_ms}ms",
                    "buffer": f"{net.buffer_pkts}pkt", "access_rate": NIC_RATE},
        "flows": flows,
        "background": {"long_lived": [{"count": net.cross_flows, "window": f"{CROSS_WINDOW}B",
                                       "rtt": {"kind": "fixed", "value": f"{net.rtt_ms}ms"}}]},
        "run": {"duration": f"{p['duration']}s", "interval": f"{p['report_s']}s",
                "trace_interval": f"{p['report_s']}s", "measure_from": "0s"},
    }
    if udp_period:
        mid, amp = (UDP_HIGH + UDP_LOW) / 2, (UDP_HIGH - UDP_LOW) / 2
        doc["udp"] = [{"rate": f"{100 * mid:g}%", "amplitude": f"{100 * amp:g}%",
                       "period": f"{udp_period}s"}]
    return doc


def _window(path: str, size: int) -> str:
    return PATHS[path].windows[size - 1]


def _reverse_doc(profile: str, stack: str) -> dict:
    path, size = REVERSE
    half = PROFILES[profile]["duration"] / 2
    rev = _flow("ptcp", REVERSE_WINDOW, label="reverse-ptcp")
    rev.update(direction="reverse", stop=f"{half:g}s")
    return _doc(profile, path, [_flow(stack, _window(path, size)), rev])


def design(profile: str) -> Design:
    """Every cell of every table, one run each (seed 1): t1 (Table 1), udp<period>
    (with sinusoidal UDP), intra (two flows of a stack, Table 2), inter (two
    stacks, Table 3), rev (Table 4)."""
    p = PROFILES[profile]
    stacks = p["stacks"]
    advanced = [s for s in stacks if s != "reno"]
    cells = []

    def add(name: str, doc: dict, **axes) -> None:
        cells.append(Cell(name, doc, {"kind": name.split("-")[0], **axes}))

    for path in PATHS:
        for size in SIZES:
            w = _window(path, size)
            for s in stacks:
                where = {"path": path, "size": size, "stack": s}
                if size in p["t1_sizes"]:
                    add(f"t1-{path}-s{size}-{s}", _doc(profile, path, [_flow(s, w)]), **where)
                for period in p["udp_periods"] if size in p["udp_sizes"] else ():
                    add(f"udp{period}-{path}-s{size}-{s}", _doc(
                        profile, path, [_flow(s, w)], udp_period=period), period=period,
                        **where)
                if size in p["intra_sizes"] and s != "reno":
                    rtt = f"{PATHS[path].rtt_ms:g}ms"
                    add(f"intra-{path}-s{size}-{s}", _doc(
                        profile, path, [_flow(s, w, f"{s}-1", jitter=rtt),
                                        _flow(s, w, f"{s}-2", jitter=rtt)]), **where)
        for a, b in combinations(advanced, 2):
            w = _window(path, INTER_SIZE)
            add(f"inter-{path}-{a}-{b}", _doc(profile, path, [_flow(a, w), _flow(b, w)]),
                path=path, stack_1=a, stack_2=b)
    for s in advanced:
        add(f"rev-{s}", _reverse_doc(profile, s), stack=s)
    for s in p["txq_stacks"]:
        for q in p["txqueuelens"]:
            add(f"txq-{s}-q{q}", _doc(profile, TXQ_PATH, [
                _flow(s, _window(TXQ_PATH, TXQ_SIZE), txqueuelen=q)]), stack=s, txqueuelen=q)
    return Design(cells, stack=PAPER_STACK)


# ----- analysis (pure functions over numbers) ---------------------------------------------


def table1_summary(t1: pd.DataFrame) -> pd.DataFrame:
    """Table 1's summary rows from per-cell means (columns path, size, stack,
    mbps): the average over paths per size, and the mean and sample std of the
    six size-2 and size-3 cells (the paper's "avg/std size 2 & 3")."""
    rows = []
    for stack, g in t1.groupby("stack", sort=False):
        row = {"stack": stack}
        for size in SIZES:
            x = g[g["size"] == size]["mbps"].dropna()
            row[f"avg size {size}"] = x.mean() if len(x) else math.nan
        big = g[g["size"].isin((2, 3))]["mbps"].dropna()
        row["avg sizes 2&3"] = big.mean() if len(big) else math.nan
        row["std sizes 2&3"] = big.std(ddof=1) if len(big) > 1 else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def average_asymmetry(pairs: dict[tuple[str, str], float], path: str,
                      stacks=ADVANCED) -> dict[str, float]:
    """Each stack's mean asymmetry against the others on one path, from
    A(a, b) = (x_a - x_b) / (x_a + x_b) per pair (A(b, a) = -A(a, b)). As section
    5.2 does, the other stacks' averages leave out P-TCP on the short path and
    HSTCP-LP on the medium and long paths; that stack's own average keeps all."""
    left_out = "ptcp" if path == "short" else "hstcplp"
    out = {}
    for s in stacks:
        vals = []
        for (a, b), value in pairs.items():
            if s not in (a, b) or (s != left_out and left_out in (a, b)):
                continue
            vals.append(value if s == a else -value)
        out[s] = float(np.mean(vals)) if vals else math.nan
    return out


def mean_std(values) -> tuple[float, float]:
    """Mean and sample std over cells (metrics.aggregate; None and NaN skipped)."""
    a = metrics.aggregate(values)
    return a["mean"], a["std"]


# ----- report ---------------------------------------------------------------------------------


def _flow_mean(summary: dict, i: int, key: str = "throughput_mbps"):
    flows = summary["flows"]
    return flows[i].get(key) if i < len(flows) else None


def _t1_table(results: dict) -> pd.DataFrame:
    rows = []
    for path in PATHS:
        for size in SIZES:
            for s in STACKS:
                r = results.get(f"t1-{path}-s{size}-{s}")
                pub = published_tables()["t1"][(path, size)][s]
                rows.append({"path": path, "site": PATHS[path].site, "size": size,
                             "window": _window(path, size), "stack": STACKS[s],
                             "paper_mbps": pub[0], "paper_std_mbps": pub[1],
                             "mbps": _flow_mean(r, 0) if r else None,
                             "std_mbps": _flow_mean(r, 0, "throughput_std_mbps") if r else None,
                             "stability": _flow_mean(r, 0, "stability_index") if r else None,
                             "srtt_ms": _flow_mean(r, 0, "mean_srtt_ms") if r else None})
    return pd.DataFrame(rows)


def _t1_summary_table(t1: pd.DataFrame) -> pd.DataFrame:
    ours = table1_summary(t1).set_index("stack")
    rows = []
    for name, pub in published_tables()["t1_summary"].items():
        row = {"row": name}
        for s, label in STACKS.items():
            row[f"paper {label}"] = pub[s]
            row[f"ours {label}"] = ours.loc[label, name] if label in ours.index else None
        rows.append(row)
    return pd.DataFrame(rows)


def _stability_tables(results: dict, t1: pd.DataFrame):
    """Per cell stability index without UDP (Table 1 runs) and with each UDP
    period; the per-size averages over stacks and paths (section 4.6) and the
    per-stack averages over sizes 2 and 3 and paths (Figures 3 and 4)."""
    rows = [{"udp": "none", "path": r.path, "size": r.size, "stack": r.stack,
             "stability": r.stability} for r in t1.itertuples()]
    for period in UDP_PERIODS:
        for path in PATHS:
            for size in SIZES:
                for s, label in STACKS.items():
                    r = results.get(f"udp{period}-{path}-s{size}-{s}")
                    rows.append({"udp": f"{period}s", "path": path, "size": size, "stack": label,
                                 "stability": _flow_mean(r, 0, "stability_index") if r else None})
    cellwise = pd.DataFrame(rows)
    by_size = []
    for (kind, size), pub in published_tables()["stability"].items():
        sel = cellwise[(cellwise["size"] == size) &
                       ((cellwise["udp"] == "none") == (kind == "none"))]
        m, sd = mean_std(sel["stability"].tolist())
        by_size.append({"udp": kind, "size": size, "paper_mean": pub[0], "paper_std": pub[1],
                        "mean": m, "std": sd})
    big = cellwise[cellwise["size"].isin((2, 3))]
    by_stack = big.groupby(["stack", "udp"], sort=False)["stability"].mean().unstack("udp")
    by_stack = by_stack.reindex(list(STACKS.values())).reset_index()
    per_path = big[big["udp"] == "none"].groupby(["stack", "path"], sort=False)[
        "stability"].mean().unstack("path").reindex(list(STACKS.values())).reset_index()
    return cellwise, pd.DataFrame(by_size), by_stack, per_path


def _t2_table(results: dict) -> pd.DataFrame:
    rows = []
    for path in PATHS:
        for size in SIZES:
            for s in ADVANCED:
                r = results.get(f"intra-{path}-s{size}-{s}")
                x = [_flow_mean(r, 0), _flow_mean(r, 1)] if r else None
                rows.append({"path": path, "size": size, "window": _window(path, size),
                             "stack": STACKS[s],
                             "paper_jain": published_tables()["t2"][(path, size)][s],
                             "jain": metrics.jain_index(x) if x else None})
    cellwise = pd.DataFrame(rows)
    for what in ("avg", "std"):
        for s in ADVANCED:
            m, sd = mean_std(cellwise[cellwise["stack"] == STACKS[s]]["jain"].tolist())
            rows.append({"path": what, "size": None, "window": None, "stack": STACKS[s],
                         "paper_jain": published_tables()["t2_summary"][what][s],
                         "jain": m if what == "avg" else sd})
    df = pd.DataFrame(rows)
    df["size"] = df["size"].astype("Int64")
    return df


def _t3_tables(results: dict):
    pairs_rows, avg_rows, per_path = [], [], {}
    for path in PATHS:
        pairs = {}
        for a, b in combinations(ADVANCED, 2):
            r = results.get(f"inter-{path}-{a}-{b}")
            if r:
                pairs[(a, b)] = metrics.asymmetry(_flow_mean(r, 0), _flow_mean(r, 1))
                pairs_rows.append({"path": path, "stack_1": STACKS[a], "stack_2": STACKS[b],
                                   "mbps_1": _flow_mean(r, 0), "mbps_2": _flow_mean(r, 1),
                                   "asymmetry": pairs[(a, b)]})
        per_path[path] = average_asymmetry(pairs, path)
    for path in (*PATHS, "avg"):
        row = {"path": path}
        for s in ADVANCED:
            ours = per_path[path][s] if path != "avg" else \
                mean_std([per_path[p][s] for p in PATHS])[0]
            row[f"paper {STACKS[s]}"] = published_tables()["t3"][path][s]
            row[f"ours {STACKS[s]}"] = ours
        avg_rows.append(row)
    return pd.DataFrame(pairs_rows), pd.DataFrame(avg_rows)


def _t4_table(results: dict, profile: str, flows_of) -> pd.DataFrame:
    half = PROFILES[profile]["duration"] / 2
    rows = []
    for s, ((pw, pws), (pn, pns)) in published_tables()["t4"].items():
        row = {"stack": STACKS[s], "paper_with_mbps": pw, "paper_with_std": pws,
               "paper_without_mbps": pn, "paper_without_std": pns}
        if f"rev-{s}" in results and flows_of:
            f = flows_of(f"rev-{s}")
            f = f[f["flow"] == 0]
            for key, lo, hi in (("with", 0.0, half), ("without", half, math.inf)):
                x = metrics.window(f, lo, hi)["throughput_mbps"].to_numpy()
                stats = metrics.interval_stats(x)
                row[f"{key}_mbps"], row[f"{key}_std"] = (stats.mean, stats.std) if len(x) else \
                    (None, None)
        rows.append(row)
    return pd.DataFrame(rows)


def _txq_table(results: dict) -> pd.DataFrame:
    """Section 4.3: each stack's throughput and stability index (std/mean of its
    reports) per txqueuelen, alone to UFL."""
    rows = []
    for s in ADVANCED:
        for q in TXQUEUELENS:
            r = results.get(f"txq-{s}-q{q}")
            if r:
                rows.append({"stack": STACKS[s], "txqueuelen": q, "mbps": _flow_mean(r, 0),
                             "stability": _flow_mean(r, 0, "stability_index")})
    return pd.DataFrame(rows, columns=["stack", "txqueuelen", "mbps", "stability"])


def txq_claims(txq: pd.DataFrame) -> list[tuple[str, str, float | None]]:
    """Section 4.3's three statements as (claim, the paper's bound, ours):
    the share of stacks other than S-TCP faster at 100 than at 2000 and 10000
    ("in general ... better with 100": a majority, our reading), S-TCP's
    throughput at 2000 over at 100 (> 1), and the share of stacks less stable
    (higher stability index) at 10000 than at 100 (a majority). None where
    the runs are missing."""
    by = {(r.stack, r.txqueuelen): r for r in txq.itertuples()}

    def share(stacks, better) -> float | None:
        judged = [better(s) for s in stacks if all((s, q) in by for q in TXQUEUELENS)]
        return sum(judged) / len(judged) if judged else None

    others = [STACKS[s] for s in ADVANCED if s != "scalable"]
    faster = share(others, lambda s: by[(s, 100)].mbps > max(by[(s, q)].mbps
                                                             for q in TXQUEUELENS[1:]))
    stcp = STACKS["scalable"]
    gain = by[(stcp, 2000)].mbps / by[(stcp, 100)].mbps if (stcp, 100) in by and \
        (stcp, 2000) in by and by[(stcp, 100)].mbps else None
    shaky = share([STACKS[s] for s in ADVANCED],
                  lambda s: by[(s, 10000)].stability > by[(s, 100)].stability)
    return [("share of stacks other than S-TCP faster with txqueuelen 100 than 2000 and 10000",
             "> 0.5", faster),
            ("S-TCP throughput with txqueuelen 2000 over with 100", "> 1", gain),
            ("share of stacks less stable with txqueuelen 10000 than 100", "> 0.5", shaky)]


def report(results: dict[str, dict], profile: str, flows_of=None) -> dict:
    t1 = _t1_table(results)
    cellwise, by_size, by_stack, per_path = _stability_tables(results, t1)
    pairs, t3 = _t3_tables(results)
    tables = {"table1_throughput": t1.drop(columns=["stability"]),
              "table1_summary": _t1_summary_table(t1),
              "stability_by_size": by_size, "stability_by_stack": by_stack,
              "stability_by_path": per_path, "stability_cells": cellwise,
              "table2_intra_jain": _t2_table(results),
              "table3_asymmetry": t3, "asymmetry_pairs": pairs,
              "table4_reverse": _t4_table(results, profile, flows_of),
              "txqueuelen": _txq_table(results)}
    tables = {k: v for k, v in tables.items() if len(v)}
    tables["agreement"] = agreement(tables)
    figures = {"fig1_throughput": _fig_throughput(t1),
               "fig2_bic_sinusoidal_udp": _fig_udp(profile, flows_of, results),
               "fig3_stability_by_path": _fig_bars(per_path, list(PATHS),
                                                   "Stability index without UDP, sizes 2 & 3"),
               "fig4_stability_udp": _fig_bars(by_stack, ["none", *(f"{p}s" for p in UDP_PERIODS)],
                                               "Stability index by UDP period, sizes 2 & 3"),
               "fig5_intra_ufl": _fig_intra(flows_of, results)}
    return {"tables": tables, "figures": figures,
            "notes": [__doc__.split("\n\n", 1)[1], protocol.agreement_note(tables["agreement"])]}


def _value(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def agreement(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every published number beside ours (the report's tables), through the
    studies' comparison routine."""
    src = published_tables()["source"]
    rows = []

    def add(quantity, source, paper, ours, tolerance=None, cell=False, kind=None):
        """cell: ours is one run's (a Table 1, 2 or 4 cell), else an average."""
        ours = _value(ours)
        rows.append(protocol.compare(quantity, source, paper, ours, tolerance,
                                     runs=1 if cell and ours is not None else None, kind=kind))

    for r in tables["table1_throughput"].itertuples():
        add(f"Table 1: {r.stack} to {r.site}, window {r.window}: mean Mbit/s",
            src["table1"], r.paper_mbps, r.mbps, cell=True)
    for r in tables["table1_summary"].to_dict("records"):
        for label in STACKS.values():
            add(f"Table 1: {label}, {r['row']} (Mbit/s)", src["table1_summary"],
                r[f"paper {label}"], r[f"ours {label}"])
    for r in tables["stability_by_size"].itertuples():
        add(f"stability index, size {r.size}, UDP {r.udp}: mean over stacks and paths",
            src["stability"], r.paper_mean, r.mean)
    for r in tables["table2_intra_jain"].itertuples():
        where = f"{r.path}, size {r.size}" if r.size is not pd.NA else r.path
        add(f"Table 2: {r.stack}, {where}: Jain index", src["table2" if r.size is not pd.NA
                                                           else "table2_summary"],
            r.paper_jain, r.jain, TOLERANCE["jain"], cell=r.size is not pd.NA)
    for r in tables["table3_asymmetry"].to_dict("records"):
        for s in ADVANCED:
            add(f"Table 3: {STACKS[s]}, {r['path']}: average asymmetry", src["table3"],
                r[f"paper {STACKS[s]}"], r[f"ours {STACKS[s]}"], TOLERANCE["asymmetry"])
    for r in tables["table4_reverse"].to_dict("records"):
        for key in ("with", "without"):
            add(f"Table 4: {r['stack']} to UFL, {key} reverse traffic (Mbit/s)", src["table4"],
                r[f"paper_{key}_mbps"], r.get(f"{key}_mbps"), r[f"paper_{key}_std"], cell=True)
    for claim, bound, ours in txq_claims(tables.get("txqueuelen", _txq_table({}))):
        add(f"section 4.3: {claim}", "section 4.3", bound, ours, "0", kind="distinctive")
    return protocol.agreement(rows)


# ----- figures --------------------------------------------------------------------------------


# ----- the page's full-profile tables (studies.fulltables) ---------------------------------

# The report's tables the page's full-profile sections are made from.
PAGE_TABLE_FILES = ("table1_throughput.csv", "table1_summary.csv", "stability_by_size.csv",
                    "stability_by_stack.csv", "stability_by_path.csv",
                    "table2_intra_jain.csv", "table3_asymmetry.csv", "table4_reverse.csv")


def page_tables(report) -> dict[str, str]:
    """The full-profile sections of docs/studies/bullot2004.md, paper / ours,
    from a report directory's CSVs: "results" (Tables 1, 3, 4 and the stability
    index) and "table2"."""
    t = {f.removesuffix(".csv"): pd.read_csv(report / f) for f in PAGE_TABLE_FILES}
    results = [*_page_t1(t["table1_throughput"], t["table1_summary"]),
               *_page_stability(t["stability_by_size"], t["stability_by_stack"],
                                t["stability_by_path"]),
               *_page_t3(t["table3_asymmetry"]), *_page_t4(t["table4_reverse"])]
    return {"results": "\n".join(results).strip(), "table2": "\n".join(_page_t2(
        t["table2_intra_jain"])).strip()}


def _md(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(r) + " |" for r in rows), ""]


def _num(x, digits: int = 0) -> str:
    """A number as the page prints it; "-" where the run has none."""
    return "-" if x is None or pd.isna(x) else f"{x:.{digits}f}"


def _pm(mean, std, digits: int = 0) -> str:
    return "-" if pd.isna(mean) else f"{_num(mean, digits)}±{_num(std, digits)}"


def _page_t1(t1, summary) -> list[str]:
    labels = list(STACKS.values())
    grid = [[f"{site} {window}", *(
        f"{_pm(r.paper_mbps, r.paper_std_mbps)} / {_pm(r.mbps, r.std_mbps)}"
        for r in cell.set_index("stack").loc[labels].itertuples())]
        for (_, site, window), cell in t1.groupby(["path", "site", "window"], sort=False)]
    rows = [[r["row"], *(f"{_num(r[f'paper {s}'])} / {_num(r[f'ours {s}'])}" for s in labels)]
            for r in summary.to_dict("records")]
    rtt = [[path, *map(_num, cell.set_index("stack").loc[labels, "srtt_ms"])]
           for path, cell in t1[t1["size"] == 3].groupby("path", sort=False)]
    return ["#### Table 1: throughput, Mbit/s (mean ± std over the reports), paper / ours", "",
            *_md(["path, window", *labels], grid), "Summary rows (paper / ours):", "",
            *_md(["row", *labels], rows),
            "RTT (mean smoothed RTT of the flow, ms), size 3:", "",
            *_md(["path", *labels], rtt)]


def _page_stability(by_size, by_stack, by_path) -> list[str]:
    udp = {"none": "none", "udp": "UDP, both periods"}
    sizes = [[udp[r["udp"]], str(r["size"]), f"{_num(r['paper_mean'], 2)} ± "
              f"{_num(r['paper_std'], 2)}", f"{_num(r['mean'], 2)} ± {_num(r['std'], 2)}"]
             for r in by_size.to_dict("records")]
    stacks = [[r["stack"], *(_num(r[c], 2) for c in ("none", "60s", "30s"))]
              for r in by_stack.to_dict("records")]
    paths = [[r["stack"], *(_num(r[c], 2) for c in PATHS)] for r in by_path.to_dict("records")]
    return ["#### Stability index by window size (mean ± std over stacks and paths)", "",
            *_md(["UDP", "size", "paper", "ours"], sizes),
            "Per stack over sizes 2 and 3 and the three paths:", "",
            *_md(["stack", "no UDP", "UDP 60 s", "UDP 30 s"], stacks),
            "Without UDP, per path (Figure 3):", "", *_md(["stack", *PATHS], paths)]


def _page_t3(t3) -> list[str]:
    labels = [STACKS[s] for s in ADVANCED]
    rows = [[r["path"], *(f"{_num(r[f'paper {s}'], 2)} / {_num(r[f'ours {s}'], 2)}"
                          for s in labels)]
            for r in t3.to_dict("records")]
    return ["#### Table 3: average asymmetry against all others, paper / ours", "",
            *_md(["path", *labels], rows)]


T4_COLUMNS = ["stack", *(f"{who}{k}_{x}" for k in ("with", "without") for who in ("paper_", "")
                         for x in ("mbps", "std"))]


def _page_t4(t4) -> list[str]:
    rows = [[r["stack"], *(f"{_pm(r[f'paper_{k}_mbps'], r[f'paper_{k}_std'])} / "
                           f"{_pm(r[f'{k}_mbps'], r[f'{k}_std'])}" for k in ("with", "without"))]
            for r in t4.reindex(columns=T4_COLUMNS).to_dict("records")]
    return ["#### Table 4: to UFL, 8 MB, with and without reverse traffic (Mbit/s), "
            "paper / ours", "", *_md(["stack", "with reverse traffic", "without"], rows)]


def _page_t2(t2) -> list[str]:
    labels = [STACKS[s] for s in ADVANCED]
    rows = []
    for (path, window), cell in t2.groupby(["path", "window"], sort=False, dropna=False):
        label = path if pd.isna(window) else f"{path} {window}"
        by = cell.set_index("stack").loc[labels]
        rows.append([label, *(f"{_num(p, 2)} / {_num(o, 2)}"
                              for p, o in zip(by["paper_jain"], by["jain"], strict=True))])
    return _md(["path, window", *labels], rows)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _fig_throughput(t1: pd.DataFrame):
    """Figure 1: average of sizes 2 and 3 per path and stack, ours as bars and
    the paper's as markers."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(PATHS), figsize=(11, 3.4), sharey=True)
    big = t1[t1["size"].isin((2, 3))]
    for ax, path in zip(axes, PATHS, strict=True):
        g = big[big["path"] == path].groupby("stack", sort=False)[["mbps", "paper_mbps"]].mean()
        x = np.arange(len(g))
        ax.bar(x, g["mbps"].fillna(0), color="tab:blue", label="tcpeval")
        ax.plot(x, g["paper_mbps"], "o", color="tab:red", label="paper")
        ax.set_xticks(x, g.index, rotation=60, fontsize=7)
        ax.set_title(f"{PATHS[path].site} ({PATHS[path].rtt_ms:g} ms)", fontsize=9)
    axes[0].set_ylabel("throughput (Mbit/s)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def _no_data(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"{what}: not in this profile", ha="center", va="center",
            transform=ax.transAxes)


def _fig_udp(profile: str, flows_of, results: dict):
    """Figure 2: BIC to UFL with 8 MB windows beside the sinusoidal UDP stream
    (its offered rate, as set in the scenario)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 3.2))
    p = PROFILES[profile]
    period = p["udp_periods"][0]
    name = f"udp{period}-medium-s3-bic"
    if name in results and flows_of:
        f = flows_of(name)
        f = f[f["flow"] == 0]
        rate = PATHS["medium"].rate_mbps
        t = np.linspace(0, p["duration"], 400)
        udp = rate * ((UDP_HIGH + UDP_LOW) / 2 + (UDP_HIGH - UDP_LOW) / 2 *
                      np.sin(2 * np.pi * t / period))
        ax.plot(f["t_s"], f["throughput_mbps"], label="Bic-TCP")
        ax.plot(t, udp, label=f"UDP offered (period {period} s)")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("Mbit/s")
        ax.legend(fontsize=7)
    else:
        _no_data(ax, "Bic-TCP with UDP to UFL, 8 MB")
    ax.set_title("Bic-TCP with sinusoidal UDP, UFL, 8 MB window", fontsize=9)
    fig.tight_layout()
    return fig


def _fig_bars(df: pd.DataFrame, columns: list[str], title: str):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 3.2))
    cols = [c for c in columns if c in df.columns]
    x = np.arange(len(df))
    width = 0.8 / max(1, len(cols))
    for i, c in enumerate(cols):
        ax.bar(x + (i - (len(cols) - 1) / 2) * width, df[c].astype(float).fillna(0), width,
               label=str(c))
    ax.set_xticks(x, df["stack"], rotation=30, fontsize=7)
    ax.set_ylabel("stability index (std / mean)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _fig_intra(flows_of, results: dict):
    """Figure 5: two FAST flows and two HS-TCP flows to UFL with 8 MB windows."""
    plt = _plt()
    fig, axes = plt.subplots(2, 1, figsize=(8, 4.6), sharex=True)
    for ax, s in zip(axes, ("fast", "highspeed"), strict=True):
        name = f"intra-medium-s3-{s}"
        if name in results and flows_of:
            f = flows_of(name)
            for flow, style in ((0, "-"), (1, ":")):
                g = f[f["flow"] == flow]
                ax.plot(g["t_s"], g["throughput_mbps"], style, label=f"{STACKS[s]} {flow + 1}")
            total = f.groupby("t_s")["throughput_mbps"].sum()
            ax.plot(total.index, total.to_numpy(), "-", color="grey", label="sum")
            ax.set_ylabel("Mbit/s")
            ax.legend(fontsize=7)
        else:
            _no_data(ax, f"{STACKS[s]} intra, UFL 8 MB")
        ax.set_title(f"{STACKS[s]} vs {STACKS[s]}, UFL, 8 MB", fontsize=9)
    axes[-1].set_xlabel("time (s)")
    fig.tight_layout()
    return fig
