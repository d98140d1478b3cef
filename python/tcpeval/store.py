"""Writing results: a run directory (summary.json, scenario.json, engine.json and
one Parquet file per table) and the result store of sweeps.

The guarantees (docs/user-guide.md, "Output directories and the result store"):
tcpeval deletes or replaces only files it wrote itself (a marker file in every
run directory lists them); every file and every stored run appears whole or not
at all; concurrent writers of one store cannot race; corrupt runs are moved
aside to corrupt/ and run again; the index always describes the runs on disk.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import json
import os
import re
import secrets
import shutil
import socket
import time
from datetime import datetime
from pathlib import Path

from .run import Result
from .runkey import KEY_VERSION, run_key
from .table import write_parquet

MARKER = ".tcpeval-run"  # in every run directory: the files tcpeval wrote there
FORMAT = "store.json"  # in a store: the rule its run keys follow (runkey.KEY_VERSION)
TABLES = ("flows", "trace", "queue", "links", "udp", "completions")
# What a run directory written before the marker existed can hold.
LEGACY_FILES = frozenset({"summary.json", "scenario.json", "engine.json", "report.html",
                          *(f"{t}.parquet" for t in TABLES)})
# The temporaries tcpeval makes in an output directory: staging and marker.
OUT_TEMPS = (".tcpeval.tmp-", f".{MARKER}.tmp-")
HOST = re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"
# A temporary of another host, or of a pid reused since, is abandoned after this.
STALE_S = 24 * 3600
# Errors that mean "this place cannot be written" rather than a bug.
UNWRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT)


class OutputError(Exception):
    """A result cannot be written where asked; the message is one line."""


# ----- output directories of single runs ---------------------------------------------------


def check_out_dir(out_dir: str | Path, *, force: bool = False) -> Path:
    """Check, before anything is computed, that a run may be written into
    `out_dir`, and return its absolute path. Allowed: a new directory, an empty
    one, an earlier tcpeval result, and (with `force`) any other directory,
    whose files are kept. Raises OutputError otherwise; nothing is written."""
    out = Path(os.path.abspath(out_dir))
    if out.is_dir():
        owned = owned_files(out)
        foreign = sorted(_foreign(out, owned or set()))
        if owned is None and foreign and not force:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise OutputError(f"{out_dir} holds files tcpeval did not write ({shown}); give a "
                              "new or empty directory, or --force to write the run beside "
                              "them (they are kept)")
        _refuse_clashes(out, owned or set(), LEGACY_FILES)
        _probe(out)
        return out
    if out.exists() or out.is_symlink():
        raise OutputError(f"{out_dir} is a file, not a directory")
    parent = out.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"{parent} is a file, not a directory")
    _probe(parent)
    return out


def write_run(result: Result, out_dir: str | Path, extra: dict | None = None, *,
              force: bool = False) -> Path:
    """Write a run into `out_dir` (rules of `check_out_dir`). Every file is
    written into a hidden directory inside it first and then renamed into place,
    so an error leaves the previous result whole; files tcpeval wrote for an
    earlier run and not now are removed; no other file is touched."""
    out = check_out_dir(out_dir, force=force)
    made = _make_dirs(out)
    for prefix in OUT_TEMPS:
        _remove_abandoned(out, prefix)
    staging = _make_temp_dir(out, "tcpeval")
    try:
        names = _write_files(result, staging, extra)
        _publish_files(staging, out, names)
        staging.rmdir()
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for d in reversed(made):  # a new directory that got nothing goes again
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    return out


def add_to_run(run_dir: str | Path, name: str, write) -> Path:
    """Add a file to a run directory tcpeval wrote (a report): `write(path)`
    writes it under a temporary name; it is renamed into place and recorded in
    the marker. Returns its path."""
    out = Path(run_dir)
    owned = owned_files(out)
    if owned is None:
        raise OutputError(f"{run_dir} is not a tcpeval run directory (no {MARKER})")
    _refuse_clashes(out, owned, {name})
    staging = _make_temp_dir(out, "tcpeval")
    try:
        write(staging / name)
        _write_marker(out, owned | {name})
        os.replace(staging / name, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out / name


def owned_files(run_dir: Path) -> set[str] | None:
    """The files tcpeval wrote into a directory (from its marker), or None when
    tcpeval did not make it. A run written before markers existed is recognised
    by holding nothing but run files."""
    try:
        doc = json.loads((run_dir / MARKER).read_bytes())
        return {n for n in doc["files"] if isinstance(n, str) and "/" not in n}
    except FileNotFoundError:
        pass
    except (ValueError, KeyError, TypeError):
        return set()  # a damaged marker: tcpeval's directory, files unknown
    names = {p.name for p in run_dir.iterdir() if not _out_temp(p.name)}
    legacy = names and names <= LEGACY_FILES and {"summary.json", "scenario.json"} <= names
    return names if legacy else None


def _foreign(out: Path, owned: set[str]) -> list[str]:
    return [p.name + ("/" if p.is_dir() else "") for p in out.iterdir()
            if p.name not in owned and p.name != MARKER and not _out_temp(p.name)]


def _out_temp(name: str) -> bool:
    """A temporary that write_run or add_to_run makes in an output directory."""
    return name.startswith(OUT_TEMPS) and _temp_owner(name) is not None


def _refuse_clashes(out: Path, owned: set[str], names) -> None:
    for name in sorted(names):
        path = out / name
        if name not in owned and (path.exists() or path.is_symlink()):
            raise OutputError(f"{path} was not written by tcpeval and would be replaced; "
                              "move it or give another directory")


def _probe(directory: Path) -> None:
    """Fail now, not after the simulation, when `directory` cannot be written."""
    try:
        _make_temp_dir(directory, "tcpeval").rmdir()
    except OSError as e:
        raise OutputError(f"cannot write in {directory}: {e.strerror or e}") from None


def _make_dirs(out: Path) -> list[Path]:
    """mkdir -p; returns the directories it created, outermost first."""
    missing = [p for p in (out, *out.parents) if not p.exists()][::-1]
    for p in missing:
        p.mkdir(exist_ok=True)
    return missing


def _write_files(result: Result, directory: Path, extra: dict | None) -> set[str]:
    docs = {"summary.json": result.summary, "scenario.json": result.scenario,
            **(extra or {})}
    for name, doc in docs.items():
        (directory / name).write_text(json.dumps(doc, indent=2) + "\n")
    (directory / "engine.json").write_text(json.dumps(result.engine_summary()) + "\n")
    tables = result.stored_tables()
    for name, table in tables.items():
        write_parquet(table, directory / f"{name}.parquet")
    pcaps = _write_pcaps(result, directory)
    return {*docs, "engine.json", *(f"{name}.parquet" for name in tables), *pcaps}


def _write_pcaps(result: Result, directory: Path) -> list[str]:
    """The run's packet capture as pcap files, if it has one."""
    if getattr(result, "capture", None) is None:
        return []
    from .pcap import write_captures
    from .scenario import engine_config

    return write_captures(result.capture, engine_config(result.scenario)["flows"], directory)


def _publish_files(staging: Path, out: Path, names: set[str]) -> None:
    """Move the files of a run from `staging` into `out`, one atomic rename each."""
    old = owned_files(out) or set()
    _refuse_clashes(out, old, names)
    # While files are swapped the marker lists the old and the new ones, so an
    # interruption never leaves a tcpeval file looking like someone else's.
    _write_marker(out, old | names)
    for name in sorted(names):
        os.replace(staging / name, out / name)
    _write_marker(out, names)
    for name in sorted(old - names):  # files of the earlier run that this one lacks
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            (out / name).unlink()


def _write_marker(out: Path, names: set[str]) -> None:
    _atomic_text(out / MARKER, json.dumps({"tcpeval": "run", "files": sorted(names)}))


# ----- the result store of sweeps ---------------------------------------------------------

INDEX_METRICS = ("throughput_mbps", "retransmits", "timeouts", "mean_cwnd_pkts", "mean_srtt_ms")
# A directory changed less than this before its mtime was read may change again
# within the same clock tick unseen: an index stamped then is not trusted.
STAMP_GUARD_NS = 2_000_000_000


class Store:
    """A directory of runs keyed by the hash of their resolved scenario:

    runs/<key>/        summary.json, scenario.json, params.json and the Parquet tables
    failed/<key>.json  the error of a failed run (removed when the run is published)
    sweeps/<name>.json the sweep's axes and run keys
    corrupt/<key>-<time>/  a damaged run moved aside, with reason.txt
    index.parquet      one row per run: status, axis values, seed, summary metrics
    store.json         the key rule of the runs' names (older stores are migrated)

    A run is published by one rename that never replaces: of two writers of a
    key (identical runs, the key being their content hash) the second discards
    its copy. The index is stamped with the modification times of runs/ and
    failed/ and rebuilt whenever they changed since.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.quarantined: list[tuple[str, str]] = []  # (key, reason) moved aside here
        self._lock_depth = 0
        subs = [self.root / sub for sub in ("runs", "failed", "sweeps")]
        if self.root.exists() and not self.root.is_dir():
            raise OutputError(f"{self.root} is a file, not a result store directory")
        if not all(sub.is_dir() for sub in subs):
            try:
                for sub in subs:
                    sub.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise OutputError(f"cannot create a result store in {self.root}: "
                                  f"{e.strerror or e}") from None
        self._remove_leftovers()
        # Run keys of a store written before the current key rule, for a store
        # that cannot be migrated (read-only): current key -> directory name.
        self._aliases: dict[str, str] = {}
        if self._key_version() < KEY_VERSION:
            self._migrate()
        elif not (self.root / FORMAT).exists():
            self._write_format()  # a new store

    def _write_format(self) -> None:
        try:
            _atomic_text(self.root / FORMAT, json.dumps(
                {"tcpeval": "store", "key_version": KEY_VERSION}))
        except OSError as e:
            if e.errno not in UNWRITABLE:
                raise

    def writable(self) -> bool:
        return all(os.access(self.root / sub, os.W_OK | os.X_OK)
                   for sub in ("runs", "failed", "sweeps"))

    def _remove_leftovers(self) -> None:
        _remove_abandoned(self.root, ".index.parquet.tmp-")
        for sub in ("runs", "failed", "sweeps"):
            _remove_abandoned(self.root / sub, ".")

    def has(self, key: str) -> bool:
        """Whether a whole run of `key` is stored. A damaged one is moved aside
        to corrupt/ (so it runs again) and does not count."""
        run = self.root / "runs" / self._aliases.get(key, key)
        if not run.exists():
            return False
        if run_problem(run, store_run=True) is None:
            return True
        self._quarantine(run.name)
        return False

    def _key_version(self) -> int:
        """The key rule the store's runs are named by: that of its format file,
        1 (the hash of the whole resolved dict) for a store without one."""
        try:
            return int(json.loads((self.root / FORMAT).read_bytes())["key_version"])
        except FileNotFoundError:
            return KEY_VERSION if not any(self._entries()) else 1
        except (ValueError, KeyError, TypeError):
            return 1  # damaged: migrating again is harmless (it is idempotent)

    def _entries(self):
        for sub in ("runs", "failed"):
            yield from (p for p in (self.root / sub).iterdir() if not p.name.startswith("."))

    def _migrate(self) -> None:
        """Rename the runs of an older key rule to their current keys (computed
        from their scenario.json), with the same no-replace publish as a new run;
        then record the rule in the format file. Idempotent, so an interrupted
        migration finishes on the next open. Failure records of rule 1 hold no
        scenario to recompute a key from: they go (the sweep retries those runs,
        as it retries every failed run). A store that cannot be written keeps
        its names and is read through aliases."""
        with self._lock():
            if self._key_version() >= KEY_VERSION:
                return  # another process migrated it meanwhile
            renamed = {}
            for run in sorted((self.root / "runs").iterdir()):
                if not run.name.startswith(".") and run.is_dir():
                    renamed.update(self._migrate_run(run))
            if self._aliases:
                return  # read-only: nothing written
            for failed in (self.root / "failed").glob("*.json"):
                _migrate_failure(failed)
            for sweep in (self.root / "sweeps").glob("*.json"):
                _migrate_sweep(sweep, renamed)
            self._write_format()

    def _migrate_run(self, run: Path) -> dict[str, str]:
        """{old key: new key} of one run, renamed; {} when it needs nothing or is
        damaged (left for has() and the index to move aside)."""
        try:
            params = json.loads((run / "params.json").read_bytes())
            key = run_key(json.loads((run / "scenario.json").read_bytes()))
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return {}
        if key == run.name and params.get("key_version") == KEY_VERSION:
            return {}
        try:
            _atomic_text(run / "params.json", json.dumps(
                {**params, "key": key, "key_version": KEY_VERSION}, indent=2))
            # A damaged run under the new key is moved aside; a whole one is
            # the same run, and this copy goes.
            if key != run.name and not self._publish(run, run.parent / key):
                shutil.rmtree(run)
        except OSError as e:
            if e.errno not in UNWRITABLE:
                raise
            self._aliases[key] = run.name
        return {run.name: key}

    def write(self, spec, result) -> None:
        """Publish a finished run; its failure record, if any, goes."""
        runs = self.root / "runs"
        try:
            staging = _make_temp_dir(runs, spec.key)
            try:
                names = _write_files(result, staging, {"params.json": _params(spec)})
                _write_marker(staging, names)
                if not self._publish(staging, runs / spec.key):
                    shutil.rmtree(staging)  # published by another writer: identical
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            (self.root / "failed" / f"{spec.key}.json").unlink(missing_ok=True)
        except OSError as e:
            raise _unwritable(self.root, e) from None

    def _publish(self, staging: Path, target: Path) -> bool:
        if _rename_noreplace(staging, target):
            return True
        # Taken: by a whole run (ours is a copy), or by a damaged one, which
        # has() moves aside so that ours can take its place.
        return not self.has(target.name) and _rename_noreplace(staging, target)

    def write_failure(self, spec, error: str) -> None:
        if (self.root / "runs" / spec.key).exists():
            return  # another writer published this run: it did not fail there
        # The scenario lets a later key rule recompute the record's key (a
        # record without one is dropped by that migration).
        record = {**_params(spec), "error": error,
                  "scenario": getattr(spec, "resolved", None)}
        try:
            _atomic_text(self.root / "failed" / f"{spec.key}.json", json.dumps(record, indent=2))
        except OSError as e:
            raise _unwritable(self.root, e) from None

    def record_sweep(self, plan) -> None:
        doc = {"name": plan.name, "axes": plan.axes, "repetitions": plan.repetitions,
               "runs": [r.key for r in plan.runs]}
        path = self.root / "sweeps" / f"{plan.name}.json"
        text = json.dumps(doc, indent=2)
        with contextlib.suppress(OSError):
            if path.read_text() == text + "\n":
                return  # nothing changed: a read-only store stays readable
        try:
            _atomic_text(path, text)
        except OSError as e:
            # Only a record of what was asked: a read-only store with nothing left
            # to run stays usable (writing a run would still fail).
            if e.errno not in UNWRITABLE:
                raise

    def axis_values(self) -> dict[str, list]:
        """Each swept axis with its values in the order the sweeps listed them
        (the union over sweeps/*.json, first listing first), as the index writes
        them (scalars as they are, anything else as JSON)."""
        axes: dict[str, list] = {}
        for path in sorted((self.root / "sweeps").glob("*.json")):
            try:
                doc_axes = json.loads(path.read_bytes())["axes"]
                items = list(doc_axes.items())
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue  # a damaged sweep record: its axes still sort naturally
            for name, values in items:
                known = axes.setdefault(name, [])
                known += [v for v in map(_index_value, values) if v not in known]
        return axes

    def rebuild_index(self) -> Path:
        """Bring index.parquet up to date (no write when it already is)."""
        self.index()
        return self.root / "index.parquet"

    def index(self):
        """The index as a DataFrame; rebuilt from the runs when they changed since
        it was written, or it is unreadable (in memory if the store is read-only)."""
        df = self._current_index()
        if df is not None:
            return df
        with self._lock():
            df = self._current_index()  # another process may just have rebuilt it
            if df is not None:
                return df
            stamp = self._stamp()  # before reading the runs: a later change shows
            df = self._collect()
            try:
                self._write_index(df, stamp)
            except OSError as e:
                if e.errno not in UNWRITABLE:
                    raise
        return df

    def _current_index(self):
        """index.parquet if it is readable and no run changed since it was written."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(self.root / "index.parquet")
        except (OSError, pa.ArrowException, ValueError):
            return None  # missing, truncated or garbage: rebuilt
        stamp = (table.schema.metadata or {}).get(b"tcpeval.stamp", b"").decode()
        if not stamp or stamp != self._stamp():
            return None
        return table.to_pandas()

    def _stamp(self) -> str:
        """The modification times of runs/ and failed/, or "" (no stamp) when one
        changed too recently to be sure no later change shares its clock tick."""
        times = [os.stat(self.root / sub).st_mtime_ns for sub in ("runs", "failed")]
        if time.time_ns() - max(times) < STAMP_GUARD_NS:
            return ""
        return " ".join(map(str, times))

    def _write_index(self, df, stamp: str) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(df, preserve_index=False)
        meta = {**(table.schema.metadata or {}), b"tcpeval.stamp": stamp.encode()}
        path = self.root / "index.parquet"
        tmp = path.with_name(_temp_name(path.name))
        try:
            pq.write_table(table.replace_schema_metadata(meta), tmp)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):  # gone once renamed
                tmp.unlink()

    def _collect(self):
        import pandas as pd

        rows, ok = [], set()
        for run in sorted((self.root / "runs").iterdir()):
            if run.name.startswith(".") or not run.is_dir():  # a write in progress, a stray file
                continue
            try:
                params, summary = _read_run(run, store_run=True)
            except _Damaged:
                self._quarantine(run.name)
                continue
            ok.add(run.name)
            rows.append({**_flat_params(params), "status": "ok", **_flat_summary(summary)})
        for failed in sorted((self.root / "failed").glob("*.json")):
            try:
                record = json.loads(failed.read_bytes())
                if record["key"] not in ok:
                    rows.append({**_flat_params(record), "status": "failed",
                                 "error": str(record["error"]).splitlines()[0]})
            except (ValueError, KeyError, TypeError, AttributeError, IndexError):
                continue  # a damaged failure record: the run is simply not done
        return pd.DataFrame(rows, columns=None if rows else ["key", "repetition", "seed",
                                                              "status"])

    def _quarantine(self, key: str) -> None:
        """Move a damaged run to corrupt/<key>-<time>/ with reason.txt. Checked
        again under the lock: another process may have moved it and published a
        whole copy meanwhile, which must stay."""
        run = self.root / "runs" / key
        with self._lock():
            problem = run_problem(run, store_run=True) if run.exists() else None
            if problem is None:
                return
            stamp = datetime.now().strftime("%Y%m%dT%H%M%S.%f")
            dest = self.root / "corrupt" / f"{key}-{stamp}"
            try:
                dest.parent.mkdir(exist_ok=True)
                os.rename(run, dest)
                (dest / "reason.txt").write_text(problem + "\n")
                problem += f"; moved to corrupt/{dest.name} (a sweep runs it again)"
            except OSError as e:
                problem += f"; could not move it aside: {e.strerror or e}"
            self.quarantined.append((key, problem))

    @contextlib.contextmanager
    def _lock(self):
        """The store's lock (re-entrant within this object). A read-only store
        without a lock file is used unlocked: nobody can write it."""
        import fcntl

        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        path = self.root / ".lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            fd = os.open(path, os.O_RDONLY) if path.exists() else None
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            self._lock_depth = 1
            yield
        finally:
            self._lock_depth = 0
            if fd is not None:
                os.close(fd)


def _unwritable(root: Path, e: OSError) -> Exception:
    if e.errno in UNWRITABLE:
        return OutputError(f"cannot write into the result store {root}: {e.strerror}")
    return e


class _Damaged(Exception):
    """A stored run that cannot be read whole; the message says what is wrong."""


def run_problem(run: Path, *, store_run: bool = False) -> str | None:
    """What is wrong with a run directory, or None when it is whole. Cheap: the
    JSON files are parsed, the Parquet files' ends checked (not read)."""
    try:
        _read_run(run, store_run=store_run)
    except _Damaged as e:
        return str(e)
    return None


def _read_run(run: Path, *, store_run: bool) -> tuple[dict | None, dict]:
    """(params, summary) of a run directory; raises _Damaged."""
    names = ["summary.json", "scenario.json", "engine.json"]
    docs = {}
    for name in names + ["params.json"] * store_run:
        try:
            docs[name] = json.loads((run / name).read_bytes())
        except (FileNotFoundError, NotADirectoryError):
            raise _Damaged(f"{name} is missing") from None
        except ValueError as e:
            raise _Damaged(f"{name} is not valid JSON ({e})") from None
    for name, check in (("summary.json", _flat_summary), ("params.json", _flat_params)):
        if name in docs:
            try:
                check(docs[name])
            except (KeyError, TypeError, AttributeError, IndexError) as e:
                raise _Damaged(f"{name} lacks what a run has ({type(e).__name__}: {e})") from None
    tables = [n for n in owned_files(run) or () if n.endswith(".parquet")]
    for name in tables or [f"{t}.parquet" for t in TABLES]:
        problem = _parquet_problem(run / name)
        if problem:
            raise _Damaged(f"{name} {problem}")
    return docs.get("params.json"), docs["summary.json"]


def _parquet_problem(path: Path) -> str | None:
    """A whole Parquet file starts and ends with PAR1, its footer length before
    the final PAR1; a truncated one does not."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(4)
            f.seek(max(size - 8, 0))
            tail = f.read(8)
    except FileNotFoundError:
        return "is missing"
    footer = int.from_bytes(tail[:4], "little") if len(tail) == 8 else size
    if size < 12 or head != b"PAR1" or tail[4:] != b"PAR1" or footer > size - 12:
        return f"is truncated or not Parquet ({size} bytes)"
    return None


def _params(spec) -> dict:
    return {"key": spec.key, "key_version": KEY_VERSION, "params": spec.params,
            "repetition": spec.repetition, "seed": spec.seed}


def _migrate_failure(path: Path) -> None:
    """A failure record of an older key rule: rewritten under its current key
    when it holds its scenario, removed when it does not (rule 1)."""
    try:
        record = json.loads(path.read_bytes())
        key = run_key(record["scenario"])
    except (ValueError, KeyError, TypeError, AttributeError):
        path.unlink(missing_ok=True)
        return
    if key != path.stem or record.get("key_version") != KEY_VERSION:
        _atomic_text(path.with_name(f"{key}.json"), json.dumps(
            {**record, "key": key, "key_version": KEY_VERSION}, indent=2))
        if key != path.stem:
            path.unlink(missing_ok=True)


def _migrate_sweep(path: Path, renamed: dict[str, str]) -> None:
    """The run keys of a sweep record, renamed as the runs were."""
    with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
        doc = json.loads(path.read_bytes())
        doc["runs"] = [renamed.get(k, k) for k in doc["runs"]]
        _atomic_text(path, json.dumps(doc, indent=2))


def _flat_params(record: dict) -> dict:
    row = {"key": record["key"], "repetition": record["repetition"], "seed": record["seed"]}
    for k, v in record["params"].items():
        row[k] = _index_value(v)
    return row


def _index_value(v):
    """A parameter's value as the index holds it."""
    return v if isinstance(v, str | int | float | bool) else json.dumps(v)


def axis_columns(df) -> list[str]:
    """The index's columns that hold swept parameters, in index order: those
    _flat_params adds after key, repetition and seed, before status."""
    cols = list(df.columns)
    start = cols.index("seed") + 1 if "seed" in cols else 0
    end = cols.index("status") if "status" in cols else len(cols)
    return cols[start:end]


def sort_by_axes(df, order: dict[str, list] | None = None):
    """The index's rows sorted by its axes (left to right), then repetition.
    An axis value ranks by its place in `order` (the sweep's own listing, so
    "20ms" comes before "100ms"), then naturally (digits as numbers); missing
    values last."""
    order = order or {}
    columns = [*axis_columns(df), "repetition"]
    columns = [c for c in columns if c in df.columns]

    def row_key(row) -> tuple:
        return tuple(_value_rank(v, order.get(c, [])) for c, v in zip(columns, row, strict=True))

    rows = list(df[columns].itertuples(index=False, name=None)) if columns else []
    positions = sorted(range(len(rows)), key=lambda i: row_key(rows[i]))
    return df.iloc[positions].reset_index(drop=True)


def _value_rank(value, listed: list) -> tuple:
    if value is None or (isinstance(value, float) and value != value):  # NaN: missing
        return (2, ())
    if value in listed:
        return (0, (listed.index(value),))
    return (1, _natural(value))


def _natural(value) -> tuple:
    """Numbers by value and text with digit runs as numbers, each tagged so
    that numbers and text never compare with each other."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return ((0, float(value), ""),)
    parts = re.split(r"(\d+(?:\.\d+)?)", str(value))
    return tuple((0, float(p), "") if i % 2 else (1, 0.0, p) for i, p in enumerate(parts))


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


# ----- files and names -----------------------------------------------------------------


def _temp_name(name: str) -> str:
    """`.NAME.tmp-HOST-PID-RANDOM`: whose it is, for cleaning up after a killed writer."""
    return f".{name}.tmp-{HOST}-{os.getpid()}-{secrets.token_hex(4)}"


def _make_temp_dir(parent: Path, name: str) -> Path:
    while True:
        path = parent / _temp_name(name)
        try:
            path.mkdir()  # mode 0777 less the umask (mkdtemp would give 0700)
            return path
        except FileExistsError:
            continue


def _atomic_text(path: Path, text: str) -> None:
    tmp = path.with_name(_temp_name(path.name))
    try:
        tmp.write_text(text + "\n")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):  # gone once renamed
            tmp.unlink()


def _temp_owner(name: str) -> tuple[str, int] | None:
    """(host, pid) of a temporary name; None for other names. Names of earlier
    versions (`.X.tmp-PID-RANDOM`, `.X.tmp-PID`, `.X.old-PID`) are this host's."""
    if not name.startswith("."):
        return None
    for sep in (".tmp-", ".old-"):
        if sep in name:
            parts = name.rsplit(sep, 1)[1].split("-")
            break
    else:
        return None
    host, pid = (parts[0], parts[1]) if len(parts) == 3 else (HOST, parts[0])
    return (host, int(pid)) if len(parts) <= 3 and pid.isdigit() else None


def _remove_abandoned(folder: Path, prefix: str) -> None:
    """Delete the temporaries in `folder` (names starting with `prefix`) whose
    writer is gone: of this host when its pid is not alive; of any host when
    older than STALE_S (a store may sit on a disk shared by a cluster's hosts)."""
    now = time.time()
    for path in folder.glob(f"{prefix}*"):
        owner = _temp_owner(path.name)
        if owner is None:
            continue
        host, pid = owner
        with contextlib.suppress(OSError):
            old = now - path.lstat().st_mtime > STALE_S
            if old or (host == HOST and not _alive(pid)):
                _remove(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


AT_FDCWD = -100
RENAME_NOREPLACE = 1


@functools.cache
def _renameat2():
    """libc's renameat2, or None (not Linux, or a C library without it)."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def _rename_noreplace(src: Path, dst: Path) -> bool:
    """Rename the directory `src` to `dst` unless `dst` exists; False when it does.
    One system call, renameat2(RENAME_NOREPLACE), where the kernel and file
    system have it; otherwise rename(2), which refuses to replace a non-empty
    directory too (and a run directory is never empty)."""
    fn = _renameat2()
    if fn is not None:
        if fn(AT_FDCWD, os.fsencode(src), AT_FDCWD, os.fsencode(dst), RENAME_NOREPLACE) == 0:
            return True
        code = ctypes.get_errno()
        if code == errno.EEXIST:
            return False
        if code not in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise OSError(code, os.strerror(code), str(dst))
    try:
        os.rename(src, dst)
    except OSError as e:
        if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
            return False
        raise
    return True
