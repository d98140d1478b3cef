"""Dalton & Isen, "A Study on High Speed TCP Protocols" (seed 004): standard,
HighSpeed and FAST TCP in ns-2 on a dumbbell; default 1 flow, 100 Mbit/s,
no channel errors, 50-packet DropTail buffer; varied: flows 1/2/4 (Table I),
bandwidth 1/100/1000 Mbit/s (II), error probability 0/1e-4/1e-2 (III),
buffer 10/50/100/500 packets with DropTail and RED (IV), half the flows reversed
(V). Reported: average bandwidth (all flows) and average cwnd (per flow).

Parameters the text does not give, and the values assumed (docs/studies/dalton2004.md):
the RTT (40 ms: the published average window and bandwidth imply 30-45 ms of
round trip with the queue), the packet size (ns-2's default 1000 B payload),
the run length (100 s: the text mentions events "around 40 seconds"), FAST's
alpha (20 packets, below the 50-packet default buffer) and the RED parameters
(tcpeval's defaults derived from the buffer).
"""

from __future__ import annotations

from .._lazy import LazyModule
from . import protocol
from .protocol import Cell, Design

# Imported on first use (see LazyModule).
pd = LazyModule("pandas")

NAME = "dalton2004"
TITLE = "Dalton & Isen 2004: standard, HighSpeed and FAST TCP in ns-2"
SOURCE = "seed 004"

PROTOCOLS = {"reno": "Standard TCP", "highspeed": "HighSpeed TCP", "fast": "Fast TCP"}
PROFILES = {
    "smoke": {"duration": "8s", "measure_from": "2s"},
    "quick": {"duration": "40s", "measure_from": "5s"},
    "full": {"duration": "100s", "measure_from": "5s"},
}
FAST_ALPHA = 20
RTT = "40ms"
MSS = 1000

# The published numbers (Tables I-V: average bandwidth in Mbit/s and average
# cwnd in packets per cell) are in data/dalton2004/table1.csv ... table5.csv.
TABLES = ("table1", "table2", "table3", "table4", "table5")


def base(profile: str) -> dict:
    """The paper's default network: 1 flow, 100 Mbit/s, no errors, 50-packet DropTail."""
    p = PROFILES[profile]
    return {
        "network": {"bottleneck": "100Mbps", "rtt": RTT, "buffer": "50pkt", "queue": "droptail"},
        "flows": [{"cc": "reno", "count": 1, "mtu": MSS + 52, "params": {}}],
        "run": {"duration": p["duration"], "measure_from": p["measure_from"],
                "trace_interval": "100ms"},
    }


def _flows(cc: str, count: int, reverse: int = 0) -> list[dict]:
    params = {"alpha": FAST_ALPHA} if cc == "fast" else {}
    out = [{"cc": cc, "count": count - reverse, "mtu": MSS + 52, "params": params}]
    if reverse:
        out.append({"cc": cc, "count": reverse, "mtu": MSS + 52, "params": params,
                     "direction": "reverse"})
    return out


def _doc(profile: str, cc: str, flows: int = 1, reverse: int = 0, **net) -> dict:
    d = base(profile)
    d["network"].update(net)
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
    return Design(cells)


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
    tables["agreement"] = protocol.agreement(compared)
    return {"tables": tables, "figures": {"table1_bandwidth": _bars(tables["table1"])},
            "notes": [__doc__.split("\n\n", 1)[1],
                      protocol.agreement_note(tables["agreement"])]}


def _bars(df: pd.DataFrame):
    """Average bandwidth per protocol and flow count: paper and ours side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.2))
    labels = [f"{r.protocol.split()[0]}\n{r.flows} flow(s)" for r in df.itertuples()]
    x = range(len(df))
    ax.bar([i - 0.2 for i in x], df["paper_bw_mbps"], width=0.4, label="paper (ns-2)")
    ax.bar([i + 0.2 for i in x], df["ours_bw_mbps"].fillna(0), width=0.4, label="tcpeval")
    ax.set_xticks(list(x), labels, fontsize=7)
    ax.set_ylabel("average bandwidth (Mbit/s)")
    ax.set_title("Table I: performance under various numbers of flows")
    ax.legend(fontsize=8)
    return fig
