"""Dalton & Isen, "A Study on High Speed TCP Protocols" (seed 004): standard,
HighSpeed and FAST TCP in ns-2 on a dumbbell; default 1 flow, 100 Mbit/s,
no channel errors, 50-packet DropTail buffer; varied: flows 1/2/4 (Table I),
bandwidth 1/100/1000 Mbit/s (II), error probability 0/1e-4/1e-2 (III),
buffer 10/50/100/500 packets with DropTail and RED (IV), half the flows reversed
(V). Reported: average bandwidth (all flows) and average cwnd (per flow).

Parameters the text does not give, and the values assumed (docs/studies/dalton2004.md):
the RTT (28 ms, settled from the paper's own numbers: at 1000 Mbit/s, where a
50-packet queue adds at most 0.4 ms, the average window over the average
bandwidth gives 27.4-28.1 ms; see `implied_rtt_ms`), the packet size (ns-2's
default 1000 B payload), the run length (100 s: the text mentions events
"around 40 seconds"), FAST's alpha (20 packets, below the 50-packet default
buffer), the RED parameters (tcpeval's defaults derived from the buffer) and
the sink (ns-2's plain TCPSink, an ACK per packet). The senders are the ns2
stack's (ns-2's own agents, docs/stacks.md).
"""

from __future__ import annotations

from .._lazy import LazyModule
from ..constants import HEADER_BYTES
from . import protocol
from .protocol import Cell, Design

# Imported on first use (see LazyModule).
pd = LazyModule("pandas")

NAME = "dalton2004"
TITLE = "Dalton & Isen 2004: standard, HighSpeed and FAST TCP in ns-2"
SOURCE = "seed 004"
# The stack the paper ran: ns-2's own TCP agents (seed 004, section III).
# Every run's stack (Design.stack, issue 30).
PAPER_STACK = "ns2"

PROTOCOLS = {"reno": "Standard TCP", "highspeed": "HighSpeed TCP", "fast": "Fast TCP"}
# The algorithm the paper's "standard TCP" runs (docs/studies/dalton2004.md).
STANDARD_AGENT = "tahoe"
PROFILES = {
    "smoke": {"duration": "8s", "measure_from": "2s"},
    "quick": {"duration": "40s", "measure_from": "5s"},
    "full": {"duration": "100s", "measure_from": "5s"},
}
FAST_ALPHA = 20
# The sink: ns-2's plain Agent/TCPSink ACKs every packet; a delayed-ACK sink
# (TCPSink/DelAck) must be asked for, and the paper names none. The ns2 stack's
# default sink delays ACKs (the cross-check's), so the flows switch it off.
DELAYED_ACK = False
# The base RTT the paper implies (implied_rtt_ms on Table II's 1000 Mbit/s rows:
# 28.0, 28.1 and 27.4 ms); 40 ms before issue 30.
RTT = "28ms"
MSS = 1000
# Figs. 2-8: the congestion window over time of each protocol in one cell each
# (the paper plots flow 0; Fig. 8 both flows of 1 forward + 1 reverse).
FIGURES = {
    "fig2": ("table1-1-{cc}", "Fig. 2. Flow 0 congestion window size for n = 1 flows"),
    "fig3": ("table1-4-{cc}", "Fig. 3. Flow 0 congestion window size for n = 4 flows"),
    "fig4": ("table2-1000-{cc}", "Fig. 4. Congestion window size for R = 1000 Mbps"),
    "fig5": ("table3-0.0001-{cc}", "Fig. 5. Congestion window size for p = 1e-4"),
    "fig6": ("table4-500-droptail-{cc}", "Fig. 6. Congestion window size with DropTail for "
             "B = 500"),
    "fig7": ("table4-500-red-{cc}", "Fig. 7. Congestion window size with RED for B = 500"),
    "fig8": ("table5-2-{cc}", "Fig. 8. Congestion window size with 1 forward and 1 reverse "
             "flow"),
}

# The published numbers (Tables I-V: average bandwidth in Mbit/s and average
# cwnd in packets per cell) are in data/dalton2004/table1.csv ... table5.csv.
TABLES = ("table1", "table2", "table3", "table4", "table5")


def base(profile: str) -> dict:
    """The paper's default network: 1 flow, 100 Mbit/s, no errors, 50-packet DropTail."""
    p = PROFILES[profile]
    return {
        "network": {"bottleneck": "100Mbps", "rtt": RTT, "buffer": "50pkt", "queue": "droptail"},
        "flows": [{"cc": "reno", "count": 1, "mtu": MSS + HEADER_BYTES, "params": {}}],
        "run": {"duration": p["duration"], "measure_from": p["measure_from"],
                "trace_interval": "100ms"},
    }


def _flows(cc: str, count: int, reverse: int = 0) -> list[dict]:
    params = {"alpha": FAST_ALPHA} if cc == "fast" else {}
    flow = {"cc": cc, "mtu": MSS + HEADER_BYTES, "params": params, "delayed_ack": DELAYED_ACK}
    if cc == "reno":
        # "Standard TCP" was ns-2's default agent, Agent/TCP (Tahoe) with a plain
        # TCPSink: ns-2.35 gives the paper's Table I to 1% with it (the page).
        flow.update(cc=STANDARD_AGENT, sack=False)
    out = [{**flow, "count": count - reverse}]
    if reverse:
        out.append({**flow, "count": reverse, "direction": "reverse"})
    return out


def _doc(profile: str, cc: str, flows: int = 1, reverse: int = 0, **net) -> dict:
    d = base(profile)
    d["network"].update(net)
    if d["network"]["queue"] == "red":
        # ns-2's RED, the paper's simulator's (queue/red.cc; docs/traffic.md).
        d["network"]["red"] = {"variant": "ns2"}
    d["flows"] = _flows(cc, flows, reverse)
    return d


def _cells(profile: str):
    """(table, its axes, scenario) of every cell, table by table."""
    for cc in PROTOCOLS:
        for n in (1, 2, 4):
            yield "table1", {"flows": n, "cc": cc}, _doc(profile, cc, flows=n)
        for rate in (1, 100, 1000):
            yield "table2", {"rate_mbps": rate, "cc": cc}, _doc(profile, cc,
                                                                bottleneck=f"{rate}Mbps")
        for p in (0.0, 1e-4, 1e-2):
            yield "table3", {"p": p, "cc": cc}, _doc(profile, cc, loss=p)
        for b in (10, 50, 100, 500):
            for q in ("droptail", "red"):
                yield "table4", {"buffer_pkts": b, "queue": q, "cc": cc}, _doc(
                    profile, cc, buffer=f"{b}pkt", queue=q)
        for n in (2, 4):
            yield "table5", {"flows": n, "cc": cc}, _doc(profile, cc, flows=n, reverse=n // 2)


def design(profile: str) -> Design:
    """Every table's cells, one run each (seed 1), named after the table and the
    cell's axes ("table4-10-red-fast")."""
    cells = [Cell(f"{table}-{'-'.join(map(str, axes.values()))}", doc, {"table": table, **axes})
             for table, axes, doc in sorted(_cells(profile), key=lambda c: TABLES.index(c[0]))]
    return Design(cells, stack=PAPER_STACK)


def implied_rtt_ms(row: dict, header_bytes: int = 0) -> float:
    """The round trip a published row implies: its average window (packets of
    MSS bytes plus `header_bytes`) sent once per round trip at its average
    bandwidth, RTT = cwnd x bytes x 8 / bandwidth. It includes the queueing
    delay, which at 1000 Mbit/s is at most 50 x 1040 x 8 / 1e9 = 0.4 ms."""
    return row["cwnd"] * (MSS + header_bytes) * 8 / (row["bw_mbps"] * 1e6) * 1e3


def _cell_row(summary) -> dict:
    flows = summary["flows"]
    bw = sum(f["throughput_mbps"] for f in flows)
    cwnd = sum(f["mean_cwnd_pkts"] or 0 for f in flows) / len(flows)
    return {"avg_bw_mbps": bw, "avg_cwnd": cwnd}


def _published() -> dict[tuple, dict]:
    """(table, axis values...) -> the published row."""
    out = {}
    for table in TABLES:
        for row in protocol.published(NAME, table):
            keys = list(row)[:list(row).index("bw_mbps")]
            out[(table, *(row[k] for k in keys))] = row
    return out


def report(results: dict[str, dict], profile: str, flows_of=None) -> dict:
    """Tables laid out like the paper's, ours beside the published values, and
    the agreement of every published number. `results` maps a cell name to its
    run summary."""
    pub = _published()
    rows: dict[str, list] = {t: [] for t in TABLES}
    compared = []
    for cell in design(profile).cells:
        axes = dict(cell.axes)
        table = axes.pop("table")
        summary = results.get(cell.name)
        ours = _cell_row(summary) if summary else {"avg_bw_mbps": None, "avg_cwnd": None}
        paper = pub.get((table, *axes.values()), {"bw_mbps": None, "cwnd": None, "source": ""})
        label = PROTOCOLS[axes["cc"]]
        rows[table].append({**axes, "protocol": label, "paper_bw_mbps": paper["bw_mbps"],
                            "ours_bw_mbps": ours["avg_bw_mbps"], "paper_cwnd": paper["cwnd"],
                            "ours_cwnd": ours["avg_cwnd"]})
        where = ", ".join(f"{k} {v}" for k, v in axes.items() if k != "cc")
        for what, col, mine in (("average bandwidth (Mbit/s)", "bw_mbps", "avg_bw_mbps"),
                                ("average cwnd (packets)", "cwnd", "avg_cwnd")):
            if paper[col] is not None:
                compared.append(protocol.compare(
                    f"{table}: {label}, {where}: {what}", paper["source"], paper[col],
                    ours[mine], runs=1 if summary else None))
    tables = {t: pd.DataFrame(r).drop(columns=["cc"]) for t, r in rows.items()}
    traces = _traces(results, profile, flows_of)
    compared.append(erratic_row(traces.get("fig8", {}), profile))
    tables["agreement"] = protocol.agreement(compared)
    figures = {"tables_bandwidth": _bars(tables)}
    figures |= {f"{fig}_cwnd": _cwnd_figure(fig, traces.get(fig, {})) for fig in FIGURES}
    return {"tables": tables, "figures": figures,
            "notes": [__doc__.split("\n\n", 1)[1],
                      protocol.agreement_note(tables["agreement"])]}


TABLE_TITLES = {"table1": "Table I: number of flows", "table2": "Table II: bottleneck bandwidth",
                "table3": "Table III: error probability", "table4": "Table IV: buffer and queue",
                "table5": "Table V: reverse flows"}


def _bars(tables: dict[str, pd.DataFrame]):
    """Average bandwidth of every cell of Tables I-V, the paper's (ns-2) beside
    ours, one panel per table (bars: the paper gives tables, not plots)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(TABLES), 1, figsize=(9, 2.3 * len(TABLES)))
    for ax, table in zip(axes, TABLES, strict=True):
        df = tables[table]
        axis_cols = list(df.columns[:list(df.columns).index("protocol")])
        labels = [f"{r['protocol'].split()[0]}\n" + " ".join(_axis_label(r[c]) for c in axis_cols)
                  for r in df.to_dict("records")]
        x = range(len(df))
        ax.bar([i - 0.2 for i in x], df["paper_bw_mbps"], width=0.4, label="paper (ns-2)")
        ax.bar([i + 0.2 for i in x], df["ours_bw_mbps"].fillna(0), width=0.4, label="tcpeval")
        ax.set_xticks(list(x), labels, fontsize=6)
        ax.set_ylabel("Mbit/s", fontsize=8)
        if table == "table2":  # 1 to 1000 Mbit/s
            ax.set_yscale("log")
        ax.set_title(f"{TABLE_TITLES[table]} ({', '.join(axis_cols)})", fontsize=8)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def _axis_label(x) -> str:
    """A cell's axis value as the paper writes it (1e-4, DropTail)."""
    if isinstance(x, float):
        return protocol.short(x) if 0 < x < 0.1 else f"{x:g}"
    return {"droptail": "DT", "red": "RED"}.get(x, str(x))


def _traces(results: dict, profile: str, flows_of) -> dict[str, dict[str, pd.DataFrame]]:
    """fig -> protocol -> the cell's cwnd trace (t_s, flow, cwnd_pkts), for the
    cells of Figs. 2-8 that ran."""
    out: dict[str, dict] = {}
    for fig, (pattern, _) in FIGURES.items():
        for cc in PROTOCOLS:
            name = pattern.format(cc=cc)
            if name in results and flows_of is not None:
                out.setdefault(fig, {})[cc] = flows_of(name, "trace")[["t_s", "flow",
                                                                       "cwnd_pkts"]]
    return out


def cwnd_cov(trace: pd.DataFrame, start_s: float) -> float:
    """How erratic a run's windows are: each flow's coefficient of variation of
    cwnd over time from `start_s` (std / mean of the trace samples), averaged
    over the flows."""
    late = trace[trace["t_s"] >= start_s]
    by_flow = late.groupby("flow")["cwnd_pkts"]
    return float((by_flow.std(ddof=0) / by_flow.mean()).mean())


def erratic_row(traces: dict[str, pd.DataFrame], profile: str) -> dict:
    """Section V-E, Fig. 8: with reverse traffic "Fast TCP behaves the most
    erratically": FAST's cwnd CoV over the larger of standard and HighSpeed TCP's
    in the 1 forward + 1 reverse cell (> 1: FAST the most erratic)."""
    start = float(PROFILES[profile]["measure_from"].rstrip("s"))
    covs = {cc: cwnd_cov(t, start) for cc, t in traces.items()}
    ours = covs["fast"] / max(covs["reno"], covs["highspeed"]) \
        if len(covs) == len(PROTOCOLS) else None
    return protocol.compare(
        "table5: Fast TCP's cwnd is the most erratic with reverse traffic (its cwnd CoV over "
        "the larger of Standard and HighSpeed TCP's)", "Section V-E, Fig. 8 and conclusions",
        "> 1", ours, "0", runs=len(PROTOCOLS) if ours is not None else None,
        kind="distinctive")


def _cwnd_figure(fig_id: str, traces: dict[str, pd.DataFrame]):
    """One panel per protocol: the cwnd of the figure's cell over time (flow 0;
    both flows in Fig. 8, where flow 1 is the reverse one), as the paper plots."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    both = fig_id == "fig8"
    fig, axes = plt.subplots(1, len(PROTOCOLS), figsize=(9, 2.6), squeeze=False, sharey=True)
    for ax, (cc, label) in zip(axes[0], PROTOCOLS.items(), strict=True):
        t = traces.get(cc)
        if t is None:
            ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes)
        else:
            for flow in (0, 1) if both else (0,):
                f = t[t["flow"] == flow]
                ax.plot(f["t_s"], f["cwnd_pkts"], lw=0.8,
                        label=("reverse" if flow else "forward") if both else None)
            if both:
                ax.legend(fontsize=7)
        ax.set_title(label, fontsize=8)
        ax.set_xlabel("time (s)", fontsize=8)
    axes[0][0].set_ylabel("cwnd (packets)", fontsize=8)
    fig.suptitle(FIGURES[fig_id][1], fontsize=9)
    fig.tight_layout()
    return fig
