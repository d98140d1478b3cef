"""A run's tables in other formats (issue 31 item 5): one CSV per table, the
per-interval series as JSON (what iperf3's -J calls "intervals"), and Flent's
data file (.flent.gz), which `flent -i FILE -p PLOT` opens and plots."""

from __future__ import annotations

import math
from pathlib import Path

from .store import TABLES, add_to_run

FORMATS = ("csv", "json", "flent")


def write_csv(run_dir: str | Path) -> list[Path]:
    """<table>.csv beside each <table>.parquet of a run directory (recorded in
    its marker, so tcpeval replaces them but never a file it did not write)."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    run_dir = Path(run_dir)
    written = []
    for name in TABLES:
        source = run_dir / f"{name}.parquet"
        if source.exists():
            table = pq.read_table(source)
            written.append(add_to_run(run_dir, f"{name}.csv",
                                      lambda path, t=table: pcsv.write_csv(t, path)))
    return written


def intervals(result) -> dict[str, dict[str, list]]:
    """Every table of a run as {column: values} (one value per row: per flow
    and interval, per link and sample...). NaN becomes None (JSON has no NaN)."""
    out = {}
    for name, table in result.stored_tables().items():
        columns = table.columns if hasattr(table, "to_arrow") else {
            c: table[c].to_numpy() for c in table.columns}
        out[name] = {c: [_plain(v) for v in col.tolist()] for c, col in columns.items()}
    return out


def _plain(v):
    return None if isinstance(v, float) and math.isnan(v) else v


# ----- Flent ------------------------------------------------------------------------------
# Flent's data file, as flent/resultset.py (flent 2.3.0) writes and reads it:
# gzipped JSON {"metadata", "version": 4, "x_values", "results": {series:
# [value or null per x]}, "raw_values": {series: [{"t": epoch s, "val"}]}}.
# The series are named as in Flent's tcp_nup test (flent/tests/tcp_nup.conf),
# so its plots (totals, upload, ping...) draw a tcpeval run: "TCP upload::<n>"
# per flow, "TCP upload sum"/"avg" over the flows, "Ping (ms) ICMP" for the RTT.
FLENT_FILE_VERSION = 4
FLENT_TEST = "tcp_nup"
FLENT_SUFFIX = ".flent.gz"
UPLOAD = "TCP upload::{}"
PING = "Ping (ms) ICMP"


def flent_data(result, time) -> dict:
    """A run as Flent's data: one x per report interval (its end, s); goodput
    per flow (streams summed, Mbit/s) with its sum and mean; as "ping", the
    flows' smoothed RTT samples inside each interval averaged (ms; a run has
    no ICMP ping, and an RTT of 0 before the first sample is left out).
    `time` is the run's start (a UTC datetime)."""
    ids = [f["id"] for f in result.summary["flows"]]
    per_flow = result.flows.pivot_table(index="t_s", columns="flow", values="throughput_mbps",
                                        aggfunc="sum").reindex(columns=ids)  # NaN: no row
    x = per_flow.index.to_numpy(float)
    results = {UPLOAD.format(n + 1): _flent_values(per_flow[i]) for n, i in enumerate(ids)}
    results["TCP upload sum"] = _flent_values(per_flow.sum(axis=1, min_count=1))
    results["TCP upload avg"] = _flent_values(per_flow.mean(axis=1))
    results[PING] = _flent_values(_interval_rtt(result, x))
    t0 = time.timestamp()
    units = {name: "ms" if name == PING else "Mbits/s" for name in results}
    return {
        "version": FLENT_FILE_VERSION,
        "x_values": x.tolist(),
        "results": results,
        "raw_values": {name: [{"t": t0 + t, "val": v} for t, v in zip(x, vals, strict=True)
                              if v is not None] for name, vals in results.items()},
        "metadata": _flent_metadata(result, time, x, results, units),
    }


def _flent_values(column) -> list:
    """Floats, NaN as None (Flent's missing value)."""
    return [_plain(float(v)) for v in column.to_numpy()]


def _interval_rtt(result, x):
    """Mean smoothed RTT (ms) of the trace samples in each report interval
    (x[i-1], x[i]] (the first from x[0] - interval), samples of 0 left out."""
    import numpy as np
    import pandas as pd

    trace = result.trace[result.trace["srtt_ms"] > 0]
    interval = result.scenario["interval_ns"] / 1e9
    edges = np.concatenate([[x[0] - interval], x]) if len(x) else np.array([0.0])
    which = pd.cut(trace["t_s"], edges, right=True, labels=False)
    return trace["srtt_ms"].groupby(which).mean().reindex(range(len(x)))


def _flent_metadata(result, time, x, results: dict, units: dict) -> dict:
    from .version import version

    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # flent.util.format_date(utc=True)
    interval = result.scenario["interval_ns"] / 1e9
    length = result.scenario["duration_ns"] / 1e9
    means = {name: [v for v in vals if v is not None] for name, vals in results.items()}
    return {
        "NAME": FLENT_TEST, "TITLE": f"tcpeval {result.summary['backend']} run",
        "NOTE": f"written by tcpeval {version()}; {PING} is the flows' smoothed RTT",
        "TIME": stamp, "T0": stamp, "LENGTH": length, "TOTAL_LENGTH": length,
        "STEP_SIZE": interval, "HOST": "tcpeval", "HOSTS": ["tcpeval"],
        "LOCAL_HOST": "tcpeval", "IP_VERSION": 4, "FLENT_VERSION": None,
        "TEST_PARAMETERS": {"upload_streams": str(len(result.summary["flows"]))},
        "SERIES_META": {name: {"UNITS": units[name],
                               "MEAN_VALUE": sum(v) / len(v) if v else None}
                        for name, v in means.items()},
    }


def write_flent(run_dir: str | Path) -> Path:
    """<run directory's name>.flent.gz in the run directory (recorded in its
    marker); its time is when the run's summary was written."""
    import gzip
    import json
    from datetime import UTC, datetime

    from .run import load_run

    run_dir = Path(run_dir)
    time = datetime.fromtimestamp((run_dir / "summary.json").stat().st_mtime, UTC)
    data = flent_data(load_run(run_dir), time)

    def write(path: Path) -> None:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump(data, f)

    return add_to_run(run_dir, f"{run_dir.resolve().name}{FLENT_SUFFIX}", write)
