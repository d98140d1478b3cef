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

import copy

from .._lazy import LazyModule

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

# Published numbers (Tables I-V): (average bandwidth Mbit/s, average cwnd).
PUBLISHED = {
    "table1": {(1, "reno"): (63.8687, 227.944), (1, "highspeed"): (84.3331, 305.051),
               (1, "fast"): (73.4996, 264.939), (2, "reno"): (76.1065, 137.59),
               (2, "highspeed"): (82.9526, 156.471), (2, "fast"): (75.421, 140.412),
               (4, "reno"): (74.5453, 69.0467), (4, "highspeed"): (81.182, 79.9547),
               (4, "fast"): (75.4806, 70.8203)},
    "table2": {(1, "reno"): (0.962132, 39.5112), (1, "highspeed"): (0.967863, 41.5263),
               (1, "fast"): (0.964731, 47.2552), (100, "reno"): (63.8687, 227.944),
               (100, "highspeed"): (84.3331, 305.051), (100, "fast"): (73.4996, 264.939),
               (1000, "reno"): (425.292, 1489), (1000, "highspeed"): (783.266, 2748.68),
               (1000, "fast"): (250.648, 858.913)},
    "table3": {(0.0, "reno"): (63.8687, 227.944), (0.0, "highspeed"): (84.3331, 305.051),
               (0.0, "fast"): (73.4996, 264.939), (1e-4, "reno"): (32.8905, 115.032),
               (1e-4, "highspeed"): (84.2535, 304.665), (1e-4, "fast"): (71.9742, 259.745),
               (1e-2, "reno"): (2.58479, 8.97549), (1e-2, "highspeed"): (3.69619, None),
               (1e-2, "fast"): (5.6098, 20.2149)},
    "table4": {
        (10, "droptail", "reno"): (43.0001, 152.279),
        (10, "red", "reno"): (50.336, 176.965),
        (10, "droptail", "highspeed"): (76.0341, 268.394),
        (10, "red", "highspeed"): (76.0968, 268.785),
        (10, "droptail", "fast"): (67.8116, 240.32),
        (10, "red", "fast"): (67.6661, 240.147),
        (50, "droptail", "reno"): (63.8687, 227.944),
        (50, "red", "reno"): (64.0865, 229.075),
        (50, "droptail", "highspeed"): (84.3331, 305.051),
        (50, "red", "highspeed"): (85.2966, 308.919),
        (50, "droptail", "fast"): (73.4996, 264.939),
        (50, "red", "fast"): (73.8282, 267.08),
        (100, "droptail", "reno"): (84.3251, 319.54),
        (100, "red", "reno"): (84.4709, 320.818),
        (100, "droptail", "highspeed"): (91.3422, 351.197),
        (100, "red", "highspeed"): (91.4583, 352.326),
        (100, "droptail", "fast"): (84.3043, 320.565),
        (100, "red", "fast"): (81.586, 307.142),
        (500, "droptail", "reno"): (94.7585, 630.356),
        (500, "red", "reno"): (85.6263, 331.991),
        (500, "droptail", "highspeed"): (95.9727, 690.53),
        (500, "red", "highspeed"): (71.5531, 377.017),
        (500, "droptail", "fast"): (69.4632, 498.665),
        (500, "red", "fast"): (65.5129, 370.366),
    },
    "table5": {(2, "reno"): (85.6852, 156.0924), (2, "highspeed"): (93.4708, 171.5883),
               (2, "fast"): (83.7556, 153.7652), (4, "reno"): (83.9058, 77.4082),
               (4, "highspeed"): (91.9685, 84.6614), (4, "fast"): (84.2136, 77.8559)},
}


def base(profile: str) -> dict:
    """The paper's default network: 1 flow, 100 Mbit/s, no errors, 50-packet DropTail."""
    p = PROFILES[profile]
    return {
        "network": {"bottleneck": "100Mbps", "rtt": RTT, "buffer": "50pkt", "queue": "droptail"},
        "flows": [{"cc": "reno", "count": 1, "mtu": MSS + 52, "params": {}}],
        "run": {"duration": p["duration"], "measure_from": p["measure_from"],
                "trace_interval": "100ms", "seed": 1},
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


def runs(profile: str) -> dict[str, list[tuple[tuple, dict]]]:
    """Every table's cells: (cell key, scenario)."""
    cells: dict[str, list[tuple[tuple, dict]]] = {}
    for cc in PROTOCOLS:
        for n in (1, 2, 4):
            cells.setdefault("table1", []).append(((n, cc), _doc(profile, cc, flows=n)))
        for rate in (1, 100, 1000):
            cells.setdefault("table2", []).append(((rate, cc),
                                                   _doc(profile, cc, bottleneck=f"{rate}Mbps")))
        for p in (0.0, 1e-4, 1e-2):
            cells.setdefault("table3", []).append(((p, cc), _doc(profile, cc, loss=p)))
        for b in (10, 50, 100, 500):
            for q in ("droptail", "red"):
                cells.setdefault("table4", []).append(
                    ((b, q, cc), _doc(profile, cc, buffer=f"{b}pkt", queue=q)))
        for n in (2, 4):
            cells.setdefault("table5", []).append(((n, cc), _doc(profile, cc, flows=n,
                                                                 reverse=n // 2)))
    return cells


def sweeps(profile: str) -> list[tuple[str, dict]]:
    """Each cell as a one-point sweep document (the study runs them all)."""
    return [(f"{table}-{'-'.join(map(str, key))}", copy.deepcopy(doc))
            for table, cells in runs(profile).items() for key, doc in cells]


def _cell_row(key, summary) -> dict:
    flows = summary["flows"]
    bw = sum(f["throughput_mbps"] for f in flows)
    cwnd = sum(f["mean_cwnd_pkts"] or 0 for f in flows) / len(flows)
    return {"avg_bw_mbps": bw, "avg_cwnd": cwnd}


def report(results: dict[str, dict], profile: str, flows_of=None) -> dict:
    """Tables laid out like the paper's, ours beside the published values.
    `results` maps a cell name to its run summary."""
    tables = {}
    for table, cells in runs(profile).items():
        rows = []
        for key, _ in cells:
            name = f"{table}-{'-'.join(map(str, key))}"
            summary = results.get(name)
            ours = _cell_row(key, summary) if summary else {"avg_bw_mbps": None, "avg_cwnd": None}
            pub = PUBLISHED[table].get(key, (None, None))
            row = dict(zip(_key_names(table), key, strict=True))
            row["protocol"] = PROTOCOLS[key[-1]]
            row.update({"paper_bw_mbps": pub[0], "ours_bw_mbps": ours["avg_bw_mbps"],
                        "paper_cwnd": pub[1], "ours_cwnd": ours["avg_cwnd"]})
            rows.append(row)
        tables[table] = pd.DataFrame(rows).drop(columns=["cc"])
    return {"tables": tables, "figures": {"table1_bandwidth": _bars(tables["table1"])},
            "notes": [__doc__.split("\n\n", 1)[1]]}


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


def _key_names(table: str) -> list[str]:
    return {"table1": ["flows", "cc"], "table2": ["rate_mbps", "cc"], "table3": ["p", "cc"],
            "table4": ["buffer_pkts", "queue", "cc"], "table5": ["flows", "cc"]}[table]
