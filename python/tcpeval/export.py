"""A run's tables in other formats (issue 31 item 5): one CSV per table, and the
per-interval series as JSON (what iperf3's -J calls "intervals")."""

from __future__ import annotations

import math
from pathlib import Path

from .store import TABLES, add_to_run

FORMATS = ("csv", "json")


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
