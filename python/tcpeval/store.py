"""Writing run results: summary.json plus Parquet tables, atomically."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from .run import Result


def write_run(result: Result, out_dir: str | Path, extra: dict | None = None) -> Path:
    """Write `summary.json`, `scenario.json` and one Parquet file per table into
    `out_dir`. Everything goes to a temporary directory beside it first and is
    renamed into place, so a reader never sees a half-written run, and an error
    leaves any previous output untouched."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-{os.getpid()}-", dir=out.parent))
    try:
        (tmp / "summary.json").write_text(json.dumps(result.summary, indent=2) + "\n")
        (tmp / "scenario.json").write_text(json.dumps(result.scenario, indent=2) + "\n")
        (tmp / "engine.json").write_text(json.dumps(result.engine_summary()) + "\n")
        for name, df in result.tables().items():
            df.to_parquet(tmp / f"{name}.parquet", index=False)
        for name, doc in (extra or {}).items():
            (tmp / name).write_text(json.dumps(doc, indent=2) + "\n")
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


# ----- the result store of sweeps ---------------------------------------------------------

INDEX_METRICS = ("throughput_mbps", "retransmits", "timeouts", "mean_cwnd_pkts", "mean_srtt_ms")


class Store:
    """A directory of runs keyed by the hash of their resolved scenario:

    runs/<key>/      summary.json, scenario.json, params.json and the Parquet tables
    failed/<key>.json  the error of a failed run (removed when it later succeeds)
    sweeps/<name>.json the sweep's axes and run keys
    index.parquet    one row per run: status, axis values, seed, summary metrics

    Runs are written atomically (write_run); the index is derived from the run
    directories and rewritten atomically under a lock, so concurrent sweeps into
    one store can never leave it corrupt.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        for sub in ("runs", "failed", "sweeps"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self._remove_abandoned_writes()

    def _remove_abandoned_writes(self) -> None:
        """Delete temporary run directories whose writer process is gone (a sweep
        killed mid-write); live writers' ones are left alone."""
        for tmp in (self.root / "runs").glob(".*.tmp-*"):
            pid = _writer_pid(tmp.name)
            if pid is not None and not _alive(pid):
                shutil.rmtree(tmp, ignore_errors=True)

    def has(self, key: str) -> bool:
        return (self.root / "runs" / key / "summary.json").exists()

    def write(self, spec, result) -> None:
        write_run(result, self.root / "runs" / spec.key, extra={"params.json": _params(spec)})
        (self.root / "failed" / f"{spec.key}.json").unlink(missing_ok=True)

    def write_failure(self, spec, error: str) -> None:
        record = {**_params(spec), "error": error}
        _atomic_text(self.root / "failed" / f"{spec.key}.json", json.dumps(record, indent=2))

    def record_sweep(self, plan) -> None:
        doc = {"name": plan.name, "axes": plan.axes, "repetitions": plan.repetitions,
               "runs": [r.key for r in plan.runs]}
        _atomic_text(self.root / "sweeps" / f"{plan.name}.json", json.dumps(doc, indent=2))

    def rebuild_index(self) -> Path:
        import fcntl

        with open(self.root / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            df = self._collect()
            tmp = self.root / f".index.parquet.tmp-{os.getpid()}"
            df.to_parquet(tmp, index=False)
            os.replace(tmp, self.root / "index.parquet")
        return self.root / "index.parquet"

    def index(self):
        import pandas as pd

        path = self.root / "index.parquet"
        return pd.read_parquet(path) if path.exists() else self._collect()

    def _collect(self):
        import pandas as pd

        rows = []
        # Hidden directories are writes in progress (or left by a killed writer).
        run_files = (p for p in (self.root / "runs").glob("*/params.json")
                     if not p.parent.name.startswith("."))
        for params in sorted(run_files):
            summary = json.loads((params.parent / "summary.json").read_text())
            rows.append({**_flat_params(json.loads(params.read_text())), "status": "ok",
                         **_flat_summary(summary)})
        for failed in sorted((self.root / "failed").glob("*.json")):
            record = json.loads(failed.read_text())
            if not self.has(record["key"]):
                rows.append({**_flat_params(record), "status": "failed",
                             "error": record["error"].splitlines()[0]})
        return pd.DataFrame(rows)


def _params(spec) -> dict:
    return {"key": spec.key, "params": spec.params, "repetition": spec.repetition,
            "seed": spec.seed}


def _flat_params(record: dict) -> dict:
    row = {"key": record["key"], "repetition": record["repetition"], "seed": record["seed"]}
    for k, v in record["params"].items():
        row[k] = v if isinstance(v, str | int | float | bool) else json.dumps(v)
    return row


def _flat_summary(s: dict) -> dict:
    b = s["bottleneck"]
    row = {"jain_index": s.get("jain_index"), "utilization": b["utilization"],
           "loss_rate": b["loss_rate"], "drops": b["drops"],
           "mean_queue_pkts": b["mean_queue_pkts"], "wall_s": s["sim"]["wall_s"]}
    for f in s["flows"]:
        for m in INDEX_METRICS:
            row[f"flow{f['id']}.{m}"] = f[m]
        row[f"flow{f['id']}.cc"] = f["cc"]
    return row


def _atomic_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text + "\n")
    os.replace(tmp, path)


def _writer_pid(name: str) -> int | None:
    """The pid in a temporary directory name `.<run>.tmp-<pid>-<random>`."""
    try:
        return int(name.rsplit(".tmp-", 1)[1].split("-", 1)[0])
    except (IndexError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
