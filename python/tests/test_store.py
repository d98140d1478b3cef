"""Output directories and the result store (issue 26): tcpeval deletes only what it
wrote, runs are published without races, damaged runs are moved aside and run
again, the index is always current, and nothing here ends in a traceback.

Races are reproduced by injected interleavings (a second writer acts at a
chosen point of the first), not by timing."""

import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import small_scenario
from typer.testing import CliRunner

import tcpeval
from tcpeval import cli
from tcpeval import store as st
from tcpeval import sweep as sw
from tcpeval.store import OutputError, Store, add_to_run, run_problem, write_run

run_mod = importlib.import_module("tcpeval.run")  # not the package's run() function


@pytest.fixture(scope="module")
def result():
    return tcpeval.run(small_scenario(duration="3s", measure_from="1s"))


def spec(n: int = 0):
    """A stand-in for a sweep's RunSpec: the store needs only these fields."""
    return SimpleNamespace(key=f"{n:020x}", params={"network.rtt": f"{n}ms"}, repetition=0,
                           seed=1)


def tree(root: Path) -> dict:
    """Every path under root with its content (files) or None (directories)."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def invoke(*args):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


@pytest.fixture
def no_simulation(monkeypatch):
    """The CLI must refuse a destination before simulating: simulating fails here."""
    def refuse(*a, **k):
        raise AssertionError("simulated before checking --out")

    monkeypatch.setattr(run_mod, "run", refuse)


@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "base.toml"
    path.write_text('[network]\nbottleneck = "20Mbps"\nrtt = "40ms"\n[[flows]]\ncc = "reno"\n'
                    '[run]\nduration = "2s"\n')
    return path


# ----- output directories -----------------------------------------------------------------


def test_run_refuses_a_directory_tcpeval_did_not_make_before_simulating(
        tmp_path, scenario_file, no_simulation):
    p = tmp_path / "p"
    (p / "sub").mkdir(parents=True)
    (p / "thesis.tex").write_text("x")
    (p / "sub" / "notes").write_text("y")
    before = tree(tmp_path)
    r = invoke("run", scenario_file, "--out", p)
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and "--out" in r.stderr and "thesis.tex" in r.stderr
    assert "--force" in r.stderr
    assert tree(tmp_path) == before


def test_force_writes_beside_foreign_files_and_a_rerun_removes_only_its_own(tmp_path, result):
    p = tmp_path / "p"
    (p / "sub").mkdir(parents=True)
    (p / "thesis.tex").write_text("x")
    (p / "sub" / "notes").write_text("y")
    with pytest.raises(OutputError, match="--force"):
        write_run(result, p)
    write_run(result, p, force=True)
    add_to_run(p, "report.html", lambda path: path.write_text("<html>"))
    (p / "later.txt").write_text("z")  # the user's, added after the run
    write_run(result, p)  # an earlier result now: no --force needed
    assert (p / "thesis.tex").read_text() == "x" and (p / "sub" / "notes").read_text() == "y"
    assert (p / "later.txt").read_text() == "z"
    assert not (p / "report.html").exists(), "the earlier run's report is tcpeval's: it goes"
    assert json.loads((p / "summary.json").read_text()) == result.summary
    assert run_problem(p) is None
    hidden = [n.name for n in p.iterdir() if n.name.startswith(".")]
    assert hidden == [st.MARKER], "no temporaries left"


def test_a_file_tcpeval_did_not_write_is_never_replaced(tmp_path, result):
    p = tmp_path / "p"
    p.mkdir()
    (p / "summary.json").write_text("mine")
    (p / "paper.tex").write_text("x")
    before = tree(tmp_path)
    with pytest.raises(OutputError, match="summary.json was not written by tcpeval"):
        write_run(result, p, force=True)
    assert tree(tmp_path) == before


def test_a_result_written_before_markers_is_replaced_without_force(tmp_path, result):
    p = write_run(result, tmp_path / "old")
    (p / st.MARKER).unlink()  # as tcpeval wrote it before this issue
    (p / "report.html").write_text("old report")
    write_run(result, p)
    assert not (p / "report.html").exists() and run_problem(p) is None


@pytest.mark.parametrize("case", ["file", "dot", "proc", "parent_is_a_file", "file_inside"])
def test_bad_out_paths_get_one_line_exit_2_and_nothing_moves(
        tmp_path, scenario_file, no_simulation, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.txt").write_text("keep")
    out = {"file": "f.txt", "dot": ".", "proc": "/proc/tcpeval-test",
           "parent_is_a_file": "f.txt/sub", "file_inside": "f.txt/a/b"}[case]
    before = tree(tmp_path)
    r = invoke("run", scenario_file, "--out", out)
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: --out") and r.stderr.count("\n") == 1, r.stderr
    assert tree(tmp_path) == before


def test_a_failed_write_leaves_no_new_directory(tmp_path, result, monkeypatch):
    import pyarrow.parquet as pq

    def disk_full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", disk_full)  # the run's tables go through it
    with pytest.raises(OSError):
        write_run(result, tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []


def test_run_directories_and_files_honour_the_umask(tmp_path, result):
    old = os.umask(0o022)
    try:
        out = write_run(result, tmp_path / "r")
        Store(tmp_path / "s").write(spec(), result)
    finally:
        os.umask(old)
    for run in (out, tmp_path / "s" / "runs" / spec().key):
        assert run.stat().st_mode & 0o777 == 0o755
        assert (run / "summary.json").stat().st_mode & 0o777 == 0o644


# ----- publishing runs --------------------------------------------------------------------


@pytest.fixture(params=["renameat2", "rename"])
def publish_with(request, monkeypatch):
    """Both ways of publishing: renameat2(RENAME_NOREPLACE), and the rename(2)
    fallback for systems without it."""
    if request.param == "rename":
        monkeypatch.setattr(st, "_renameat2", lambda: None)
    elif st._renameat2() is None:
        pytest.skip("no renameat2 in this C library")
    return request.param


def test_two_writers_of_one_key_never_fail_or_leave_leftovers(tmp_path, result, monkeypatch,
                                                               publish_with):
    root = tmp_path / "s"
    first, second = Store(root), Store(root)  # two processes' views of one store
    first.write_failure(spec(), "crashed once")
    real = st._rename_noreplace
    calls = []

    def second_publishes_first(src, dst):
        calls.append(dst)
        if len(calls) == 1:  # the first writer is about to publish: the second wins
            second.write(spec(), result)
        return real(src, dst)

    monkeypatch.setattr(st, "_rename_noreplace", second_publishes_first)
    first.write(spec(), result)
    assert len(calls) == 2, "both writers reached the publishing step"
    runs = root / "runs"
    assert [p.name for p in runs.iterdir()] == [spec().key], "one run, no temporaries"
    assert run_problem(runs / spec().key, store_run=True) is None
    assert list((root / "failed").iterdir()) == [], "the failure record goes with publishing"
    idx = first.index()
    assert list(idx.status) == ["ok"]


def test_a_writer_replaces_a_damaged_copy_of_its_key(tmp_path, result):
    s = Store(tmp_path / "s")
    s.write(spec(), result)
    (s.root / "runs" / spec().key / "summary.json").write_text("{garbage")
    s.write(spec(), result)
    assert run_problem(s.root / "runs" / spec().key, store_run=True) is None
    assert len(list((s.root / "corrupt").iterdir())) == 1


def test_moving_a_damaged_run_aside_never_moves_a_whole_one_published_meanwhile(
        tmp_path, result, monkeypatch):
    root = tmp_path / "s"
    first, second = Store(root), Store(root)
    first.write(spec(), result)
    parquet = root / "runs" / spec().key / "flows.parquet"
    parquet.write_bytes(parquet.read_bytes()[:-10])
    real = st.run_problem
    busy = []

    def second_repairs_in_between(run, *, store_run=False):
        problem = real(run, store_run=store_run)
        if not busy:  # the first saw the damage; before it acts, the second repairs
            busy.append(1)
            assert not second.has(spec().key)
            second.write(spec(), result)
        return problem

    monkeypatch.setattr(st, "run_problem", second_repairs_in_between)
    first.has(spec().key)
    assert real(root / "runs" / spec().key, store_run=True) is None, "the whole run stays"
    assert len(list((root / "corrupt").iterdir())) == 1, "only the damaged one moved"


def dead_pid() -> int:
    """A pid no process can have: above the kernel's maximum."""
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    except OSError:
        return 4_194_305


def test_leftovers_are_removed_by_host_and_pid(tmp_path):
    root = tmp_path / "s"
    Store(root)
    host, dead, live = st.HOST, dead_pid(), os.getpid()
    gone = [f"runs/.{'a' * 20}.tmp-{host}-{dead}-1f2e", f"runs/.{'b' * 20}.old-{dead}",
            f"runs/.{'c' * 20}.tmp-{dead}-x_y1", f"failed/.{'d' * 20}.json.tmp-{host}-{dead}-9a",
            f"sweeps/.grid.json.tmp-{host}-{dead}-9b", f".index.parquet.tmp-{host}-{dead}-9c",
            f".index.parquet.tmp-{dead}", f"runs/.{'e' * 20}.tmp-otherhost-{live}-aa"]
    kept = [f"runs/.{'f' * 20}.tmp-{host}-{live}-bb", f"runs/.{'9' * 20}.tmp-otherhost-{dead}-cc",
            f"failed/.{'8' * 20}.json.tmp-otherhost-{dead}-dd", ".notes", "runs/.keep"]
    for name in gone + kept:
        path = root / name
        if name.startswith("runs/"):
            path.mkdir()
            (path / "summary.json").write_text("{}")
        else:
            path.write_text("x")
    old = time.time() - st.STALE_S - 60
    os.utime(root / gone[-1], (old, old))  # another host's, but abandoned long ago
    Store(root)
    for name in gone:
        assert not (root / name).exists(), name
    for name in kept:
        assert (root / name).exists(), name


# ----- the index --------------------------------------------------------------------------


def age_dirs(root: Path, seconds: float = 10) -> None:
    """Date runs/ and failed/ back, so that an index stamped now is trusted."""
    t = time.time() - seconds
    for sub in ("runs", "failed"):
        os.utime(root / sub, (t, t))


def test_the_index_follows_runs_published_after_it(tmp_path, result):
    s = Store(tmp_path / "s")
    s.write(spec(1), result)
    s.write(spec(2), result)
    age_dirs(s.root)
    assert len(s.index()) == 2
    assert s._current_index() is not None, "a stamped index is reused while nothing changes"
    Store(s.root).write(spec(3), result)  # another sweep publishes a run
    assert sorted(Store(s.root).index().key) == [spec(n).key for n in (1, 2, 3)]


def test_a_run_published_while_the_index_is_built_is_not_missed(tmp_path, result, monkeypatch):
    s = Store(tmp_path / "s")
    s.write(spec(1), result)
    age_dirs(s.root)
    real = Store._collect

    def publish_during_collect(self):
        df = real(self)
        if not (self.root / "runs" / spec(2).key).exists():
            Store(self.root).write(spec(2), result)
        return df

    monkeypatch.setattr(Store, "_collect", publish_during_collect)
    assert len(s.index()) == 1  # built before the publish
    monkeypatch.setattr(Store, "_collect", real)
    assert len(s.index()) == 2


def test_an_index_stamped_in_the_same_clock_tick_as_a_change_is_not_trusted(tmp_path, result):
    s = Store(tmp_path / "s")
    s.write(spec(1), result)  # runs/ changed just now
    s.index()
    assert s._current_index() is None


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_damaged_index_is_rebuilt(tmp_path, result, damage):
    s = Store(tmp_path / "s")
    s.write(spec(1), result)
    age_dirs(s.root)
    s.index()
    path = s.root / "index.parquet"
    path.write_bytes({"garbage": b"not parquet", "truncated": path.read_bytes()[:-20],
                      "empty": b""}[damage])
    assert list(Store(s.root).index().key) == [spec(1).key]
    r = invoke("results", s.root, "--format", "csv")
    assert r.exit_code == 0 and spec(1).key in r.stdout


# ----- damaged runs -----------------------------------------------------------------------

DAMAGE = {
    "garbage summary.json": ("summary.json", b"{not json"),
    "summary.json not UTF-8": ("summary.json", b"\xff\xfe\x00"),
    "summary.json without flows": ("summary.json", b'{"bottleneck": {}}'),
    "missing params.json": ("params.json", None),
    "params.json = {}": ("params.json", b"{}"),
    "truncated flows.parquet": ("flows.parquet", "truncate"),
    "missing trace.parquet": ("trace.parquet", None),
}


def damage(run: Path, how: str) -> str:
    name, content = DAMAGE[how]
    path = run / name
    if content is None:
        path.unlink()
    elif content == "truncate":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        path.write_bytes(content)
    return name


@pytest.mark.parametrize("how", list(DAMAGE))
def test_a_damaged_run_is_moved_aside_with_the_reason(tmp_path, result, how):
    s = Store(tmp_path / "s")
    s.write(spec(1), result)
    s.write(spec(2), result)
    name = damage(s.root / "runs" / spec(1).key, how)
    assert list(s.index().key) == [spec(2).key]
    assert not s.has(spec(1).key) and not (s.root / "runs" / spec(1).key).exists()
    [moved] = (s.root / "corrupt").iterdir()
    assert moved.name.startswith(spec(1).key + "-")
    assert name in (moved / "reason.txt").read_text()
    assert s.quarantined[0][0] == spec(1).key


def test_has_finds_damage_the_index_has_not_seen(tmp_path, result):
    s = Store(tmp_path / "s")
    s.write(spec(1), result)
    damage(s.root / "runs" / spec(1).key, "garbage summary.json")
    assert not s.has(spec(1).key)
    assert len(list((s.root / "corrupt").iterdir())) == 1


def test_a_sweep_runs_a_damaged_run_again(tmp_path):
    p = sw.plan({**small_scenario(duration="2s", measure_from="1s"),
                 "sweep": {"network.rtt": ["20ms", "40ms"]}})
    s = Store(tmp_path / "s")
    sw.run_plan(p, s, workers=1)
    run = s.root / "runs" / p.runs[0].key
    damage(run, "params.json = {}")
    stats = sw.run_plan(p, s, workers=1)
    assert (stats["skipped"], stats["done"]) == (1, 1)
    assert run_problem(run, store_run=True) is None
    assert sorted(s.index().key) == sorted(r.key for r in p.runs)


@pytest.mark.parametrize("state", ["empty", "damaged run", "damaged index", "stray file"])
def test_results_never_shows_a_traceback(tmp_path, result, state):
    s = Store(tmp_path / "s")
    if state != "empty":
        s.write(spec(1), result)
        s.write(spec(2), result)
        s.index()
    if state == "damaged run":
        damage(s.root / "runs" / spec(1).key, "truncated flows.parquet")
    elif state == "damaged index":
        (s.root / "index.parquet").write_bytes(b"PAR1")
    elif state == "stray file":
        (s.root / "runs" / "README").write_text("not a run")
    for fmt in ("table", "csv"):
        r = invoke("results", s.root, "--format", fmt)
        assert r.exit_code == 0, r.output
        assert r.exception is None or isinstance(r.exception, SystemExit)
    if state == "empty":
        assert "0 runs" in invoke("results", s.root).stdout
    else:
        assert spec(2).key in invoke("results", s.root, "--format", "csv").stdout
    if state == "damaged run":
        assert "damaged run" in invoke("results", s.root).stderr or (s.root / "corrupt").is_dir()


# ----- read-only places ---------------------------------------------------------------------


def unprivileged(cmd: list) -> list:
    """`cmd` run without the power to ignore file permissions: as root, without
    CAP_DAC_OVERRIDE (setpriv); otherwise as it is."""
    if os.geteuid() != 0:
        return cmd
    if not shutil.which("setpriv"):
        pytest.skip("root without setpriv: permissions cannot be tested")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", *cmd]


def tcpeval_cmd(*args) -> list:
    return unprivileged([sys.executable, "-m", "tcpeval.cli", *map(str, args)])


def snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_mode)
            for p in [root, *root.rglob("*")]}


def test_a_folder_that_cannot_be_written_is_refused_before_simulating(tmp_path, scenario_file):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        r = subprocess.run(tcpeval_cmd("run", scenario_file, "--out", locked / "x"),
                           capture_output=True, text=True)
    finally:
        locked.chmod(0o755)
    assert r.returncode == 2 and r.stderr.startswith("error: --out: cannot write in"), r.stderr
    assert list(locked.iterdir()) == []


def test_a_read_only_store_can_be_read_and_resumed_when_complete(tmp_path, result):
    path = tmp_path / "sweep.toml"
    path.write_text('[network]\nbottleneck = "20Mbps"\nrtt = "40ms"\n[[flows]]\ncc = "reno"\n'
                    '[run]\nduration = "2s"\nmeasure_from = "1s"\n'
                    '[sweep]\n"network.buffer" = ["50pkt", "100pkt"]\n')
    store = tmp_path / "store"
    assert subprocess.run(tcpeval_cmd("sweep", path, "--out", store, "--workers", "1"),
                          capture_output=True).returncode == 0
    dirs = [store, *(p for p in store.rglob("*") if p.is_dir())]
    for d in dirs:
        d.chmod(0o555)
    try:
        before = snapshot(store)
        shown = subprocess.run(tcpeval_cmd("results", store, "--format", "csv"),
                               capture_output=True, text=True)
        again = subprocess.run(tcpeval_cmd("sweep", path, "--out", store),
                               capture_output=True, text=True)
        assert snapshot(store) == before, "nothing written"
        path.write_text(path.read_text().replace('"100pkt"]', '"100pkt", "150pkt"]'))
        more = subprocess.run(tcpeval_cmd("sweep", path, "--out", store),
                              capture_output=True, text=True)
    finally:
        for d in dirs:
            d.chmod(0o755)
    assert shown.returncode == 0 and shown.stdout.count("\n") == 3, shown.stderr
    assert again.returncode == 0 and "0 run, 2 already in the store" in again.stdout, again.stderr
    assert more.returncode == 2 and more.stderr.count("\n") == 1
    assert "read-only" in more.stderr and "1 of the sweep's 3 runs" in more.stderr
