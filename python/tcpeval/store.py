"""Writing run results: summary.json plus Parquet tables, atomically."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from .run import Result


def write_run(result: Result, out_dir: str | Path) -> Path:
    """Write `summary.json`, `scenario.json` and one Parquet file per table into
    `out_dir`. Everything goes to a temporary directory beside it first and is
    renamed into place, so a reader never sees a half-written run, and an error
    leaves any previous output untouched."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        (tmp / "summary.json").write_text(json.dumps(result.summary, indent=2) + "\n")
        (tmp / "scenario.json").write_text(json.dumps(result.scenario, indent=2) + "\n")
        for name, df in result.tables().items():
            df.to_parquet(tmp / f"{name}.parquet", index=False)
        _swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _swap_into_place(new: Path, out: Path) -> None:
    if not out.exists():
        os.rename(new, out)
        return
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    os.rename(out, old)
    try:
        os.rename(new, out)
    except BaseException:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)
