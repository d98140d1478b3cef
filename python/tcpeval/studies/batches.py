"""A study's long profile run in batches whose results outlive the machine
(issue 30: tengig's full profile is about 44 core-hours on a 2-core machine
that keeps nothing between sessions).

A batch runs some of the profile's remaining runs (`batch_order`: those
behind the paper's printed numbers first) into an ordinary result
store and keeps, of each finished run, only its record: what the study's
report is made from (`run_record`, protocol.records), a few numbers per run,
so the whole profile's records fit in the source tree. The archive is a
directory:

    archive.json                       the study, the profile and the engine's fingerprint
    batch-<UTC time>-<random>.parquet  one file per batch, rewritten whole (atomically)
                                       as its runs finish

Each record carries its run's key (runkey.py, from the resolved scenario), so
a record whose cell has changed since is refused, and the archive carries the
fingerprint of the engine that made it: the hash of the records of the study's
smoke profile, computed again before every batch; a batch refuses to add runs
when it differs (the engine's output changed: start a new archive). The report
made from an archive is the one the full store would give (a test compares
them), and says how many of the planned runs it holds.

    python -m tcpeval.studies.batches status NAME ARCHIVE
    python -m tcpeval.studies.batches run NAME ARCHIVE [--profile full]
        [--workers N] [--runs N] [--minutes M]
    python -m tcpeval.studies.batches report NAME ARCHIVE [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import secrets
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from .._lazy import LazyModule
from . import get
from .runner import plan_study, run_study, store_records, write_report

pd = LazyModule("pandas")

META = "archive.json"
FINGERPRINT_PROFILE = "smoke"


class BatchError(Exception):
    """An archive that cannot be used as asked; the message says why."""


def fingerprint(name: str, workers: int = 2) -> str:
    """The hash of the records of the study's smoke profile, run now: two
    engines that give the same fingerprint gave the same smoke results."""
    with tempfile.TemporaryDirectory(prefix="tcpeval-fingerprint-") as tmp:
        run_study(name, FINGERPRINT_PROFILE, tmp, workers=workers)
        _, recs = store_records(name, tmp)
    return records_hash(recs.drop(columns="key"))


def records_hash(recs: pd.DataFrame) -> str:
    """A hash of records' values (every float in full)."""
    text = json.dumps(recs.to_dict("records"), sort_keys=True, default=list)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_meta(archive: Path) -> dict | None:
    path = archive / META
    return json.loads(path.read_text()) if path.exists() else None


def records(name: str, archive: Path) -> tuple[dict, pd.DataFrame]:
    """The archive's metadata and every record in it, in design order, each
    checked against the current design: its run planned, its key unchanged,
    no run twice."""
    meta = read_meta(archive)
    if meta is None:
        raise BatchError(f"{archive}: no {META} (an archive starts with a batch run)")
    if meta["study"] != name:
        raise BatchError(f"{archive} holds study {meta['study']!r}, not {name!r}")
    _, keys = plan_study(name, meta["profile"])
    frames = []
    for path in sorted(archive.glob("batch-*.parquet")):
        df = pd.read_parquet(path)
        for run, key in zip(df["run"], df["key"], strict=True):
            if keys.get(run) != key:
                why = "is not in the design" if run not in keys else "has another key now"
                raise BatchError(f"{path.name}: run {run} {why} (its cell changed since it "
                                 "was recorded; start a new archive)")
        frames.append(df)
    if not frames:
        return meta, pd.DataFrame(columns=["run", "key"])
    recs = pd.concat(frames, ignore_index=True)
    twice = recs["run"][recs["run"].duplicated()]
    if len(twice):
        raise BatchError(f"{archive}: run {twice.iloc[0]} is recorded twice")
    order = {run: i for i, run in enumerate(keys)}
    return meta, recs.sort_values("run", key=lambda s: s.map(order)).reset_index(drop=True)


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=Path(__file__).parent, timeout=10)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _atomic_parquet(df: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        df.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _start(name: str, profile: str, archive: Path, fp: str) -> None:
    """Check the archive belongs to this study, profile and engine, or begin it."""
    meta = read_meta(archive)
    if meta is None:
        archive.mkdir(parents=True, exist_ok=True)
        meta = {"study": name, "profile": profile, "fingerprint": fp,
                "fingerprint_profile": FINGERPRINT_PROFILE, "commit": _commit()}
        (archive / META).write_text(json.dumps(meta, indent=2) + "\n")
    if (meta["study"], meta["profile"]) != (name, profile):
        raise BatchError(f"{archive} holds {meta['study']} {meta['profile']}, not {name} "
                         f"{profile}")
    if meta["fingerprint"] != fp:
        raise BatchError(f"{archive} was made by an engine with fingerprint "
                         f"{meta['fingerprint']} (commit {meta['commit']}); this one gives "
                         f"{fp}: its output changed, so its runs cannot join them (start a "
                         "new archive)")


def remaining(name: str, profile: str, done: set[str]) -> list[str]:
    """The runs not yet recorded, one per distinct scenario, in batch order."""
    _, keys = plan_study(name, profile)
    done_keys = {keys[r] for r in done}
    out, seen = [], set()
    for run in batch_order(name, profile):
        key = keys[run]
        if key not in done_keys and key not in seen:
            seen.add(key)
            out.append(run)
    return out


def batch_order(name: str, profile: str) -> list[str]:
    """Every run of the profile in the order batches take them: first the runs
    of the cells behind the paper's printed numbers (the study's
    `backs_published(cell)`, where it has one), so a partly run archive
    already answers them; within each part, every cell's first repetition,
    then every cell's second, and so on, each in design order."""
    design = get(name).design(profile)
    first = getattr(get(name), "backs_published", lambda cell: False)
    runs = design.runs()
    rank = {run: (not first(cell), rep, i) for i, (run, cell, rep) in enumerate(runs)}
    return sorted(rank, key=rank.__getitem__)


def run_batch(name: str, archive: Path, *, profile: str = "full", workers: int = 2,
              runs: int | None = None, minutes: float | None = None, say=print) -> int:
    """Run up to `runs` of the remaining runs (no new chunk of 2 x workers runs
    is started after `minutes`), recording each chunk's finished runs as a
    batch file; returns how many runs it recorded. The runs go into a new
    temporary store: one kept from an earlier batch may hold another engine's."""
    fp = fingerprint(name, workers)
    _start(name, profile, archive, fp)
    _, done = records(name, archive)
    todo = remaining(name, profile, set(done["run"]))[:runs]
    planned = len(remaining(name, profile, set()))
    say(f"{name} {profile}: {len(done)} runs recorded, {len(todo)} to run now "
        f"(fingerprint {fp})")
    path = archive / f"batch-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}.parquet"
    deadline = time.monotonic() + minutes * 60 if minutes is not None else math.inf
    with tempfile.TemporaryDirectory(prefix="tcpeval-batch-") as store_dir:
        mine = pd.DataFrame()
        for i in range(0, len(todo), 2 * workers):
            if time.monotonic() >= deadline:
                break
            run_study(name, profile, store_dir, workers=workers, cells=todo[i:i + 2 * workers])
            _, recs = store_records(name, store_dir)
            mine = recs[~recs["run"].isin(set(done["run"]))]
            _atomic_parquet(mine, path)
            say(f"{len(done) + len(mine)} of {planned} runs recorded ({path.name})")
    return len(mine)


def report(name: str, archive: Path, out: Path | None = None) -> Path:
    """The study's report from the archive's records."""
    meta, recs = records(name, archive)
    study = get(name)
    planned = len(remaining(name, meta["profile"], set()))
    rep = study.report_records(recs, meta["profile"])
    return write_report(name, meta["profile"], rep, recs["key"].nunique(), planned,
                        out or archive / "report")


def status(name: str, archive: Path) -> str:
    meta, recs = records(name, archive)
    planned = len(remaining(name, meta["profile"], set()))
    kinds = recs["kind"].value_counts().to_dict() if len(recs) else {}
    return (f"{name} {meta['profile']}: {recs['key'].nunique()} of {planned} runs recorded "
            f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items())) or 'none'}); "
            f"engine fingerprint {meta['fingerprint']} (commit {meta['commit']}); "
            f"{len(list(archive.glob('batch-*.parquet')))} batch files")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcpeval.studies.batches")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for cmd in ("status", "run", "report"):
        p = sub.add_parser(cmd)
        p.add_argument("name")
        p.add_argument("archive", type=Path)
        if cmd == "run":
            p.add_argument("--profile", default="full")
            p.add_argument("--workers", type=int, default=2)
            p.add_argument("--runs", type=int)
            p.add_argument("--minutes", type=float)
        if cmd == "report":
            p.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    try:
        get(a.name)
        if a.cmd == "status":
            print(status(a.name, a.archive))
        elif a.cmd == "run":
            run_batch(a.name, a.archive, profile=a.profile, workers=a.workers, runs=a.runs,
                      minutes=a.minutes)
        else:
            print(report(a.name, a.archive, a.out))
    except (BatchError, KeyError) as e:
        print(f"error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
