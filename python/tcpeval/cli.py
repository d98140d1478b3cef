"""The `tcpeval` command line."""


import functools
import gc
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperCommand, TyperGroup

from .errors import ScenarioError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


class _CoerceWhenGiven:
    """Stands in for a parameter's coercion until it has a value. typer (0.29)
    coerces every parameter through a pydantic TypeAdapter it builds at the
    parameter's first value, even when that value is None (not given, no
    default): `tcpeval run --help` imported pydantic for its group's --help and
    completion options (0.1 s, docs/performance.md, Start-up). Nothing given
    comes out as typer's RuntimeParam.coerce returns it; a value is coerced by
    the parameter's own runtime param, built by typer then as before."""

    def coerce(self, value, param, ctx):
        if value is None:
            return () if param.multiple or param.nargs == -1 else None
        param._runtime_param = None  # typer's lazy build, then its coercion
        return param.get_runtime_param().coerce(value, param=param, ctx=ctx)


_COERCE_WHEN_GIVEN = _CoerceWhenGiven()


def _defer_coercion(command, ctx) -> None:
    """Before parsing, each typer parameter without a runtime param yet gets
    the stand-in (a typer without this private attribute keeps its own way)."""
    for param in command.get_params(ctx):
        if getattr(param, "_runtime_param", False) is None:
            param._runtime_param = _COERCE_WHEN_GIVEN


class _Group(TyperGroup):
    def parse_args(self, ctx, args):
        _defer_coercion(self, ctx)
        return super().parse_args(ctx, args)


class _Command(TyperCommand):
    def parse_args(self, ctx, args):
        _defer_coercion(self, ctx)
        return super().parse_args(ctx, args)


# Help and docstrings are plain text: with Rich markup "[[flows]]" or "[sweep]"
# would vanish from them.
PLAIN = {"rich_markup_mode": None}
# add_completion gives --install-completion and --show-completion (bash, zsh,
# fish, PowerShell; typer imports shellingham only when they are used).
app = typer.Typer(cls=_Group, add_completion=True, no_args_is_help=True, **PLAIN,
                  help="Evaluate TCP congestion control: simulate scenarios, compute metrics.")


def _print_version(asked: bool) -> None:
    if asked:
        from .version import version

        sys.stdout.write(f"tcpeval {version()}\n")
        raise typer.Exit(0)


# main() pauses the cyclic garbage collector while a command starts up, and the
# command resumes it before its own work (the group's callback for every command
# but `run`, `run` after its imports). Imports and typer's parsing make objects
# that live to the end (modules, classes, pydantic's schemas): some 90
# collections in a short run walked them again and again, 10-20 ms of its CPU
# (docs/performance.md, Start-up). Resumed, the collector first freezes them
# (gc.freeze: moved out of its generations, never walked again, as at the exit),
# so what the command makes is collected as before. (Resuming without the
# freeze saves nothing: the first collections then walk them all anyway.)
_GC_PAUSED = {"by_main": False}


def _pause_gc() -> None:
    if gc.isenabled():
        gc.disable()
        _GC_PAUSED["by_main"] = True


def _resume_gc() -> None:
    """The command's work begins: the collector runs again if main() paused it."""
    if _GC_PAUSED["by_main"]:
        _GC_PAUSED["by_main"] = False
        gc.freeze()
        gc.enable()


@app.callback()
def _options(
    ctx: typer.Context,
    show_version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print the version and exit.")] = False,
) -> None:
    """Evaluate TCP congestion control: simulate scenarios, compute metrics."""
    if ctx.invoked_subcommand != "run":  # `run` resumes it after its imports
        _resume_gc()


@functools.cache
def _console(stderr: bool) -> "Console":
    """The rich Console of stderr or stdout, made at its first use: rich costs
    20-30 ms to import, and `tcpeval run --json` prints no table."""
    from rich.console import Console

    if stderr:
        return Console(stderr=True, soft_wrap=True)
    # Wide enough for the flow table when stdout is a file or a pipe (rich would use 80).
    return Console(width=None if sys.stdout.isatty() else 150)


def err() -> "Console":
    return _console(True)


def out() -> "Console":
    return _console(False)


def _table(title: str) -> "Table":
    from rich.table import Table

    return Table(title=title, title_justify="left")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)

EXIT_BAD_INPUT = 2
EXIT_INVALID_RUN = 1
EXIT_INTERRUPTED = 130


def _fail(message: str) -> None:
    # Escaped: a message quoting "[[flows]]" or "[sweep]" prints them as written.
    err().print(f"[bold red]error:[/] {_escape(message)}", highlight=False)
    raise typer.Exit(EXIT_BAD_INPUT)


# Bounds of the command-line options that are not scenario fields.
MAX_WORKERS = 1024
MAX_SEED = 2**63 - 1  # run.seed: the engine's seed is a u64; 2^63 keeps it an int64 too


def _check_options(seed: int | None = None, workers: int | None = None,
                   dask: str | None = None) -> None:
    """Options checked before anything runs or is written (exit 2 on a bad one)."""
    if seed is not None and not 0 <= seed <= MAX_SEED:
        _fail(f"--seed: {seed} is out of range; allowed: 0 to {MAX_SEED} (2^63 - 1)")
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        _fail(f"--workers: {workers} is out of range; allowed: 1 to {MAX_WORKERS}")
    if dask is not None:
        _check_dask(dask)


def _check_dask(address: str) -> None:
    """local:N (N workers, or local: for one per CPU) or a scheduler address;
    whether the scheduler answers is found out when the sweep starts."""
    if address.startswith("local:"):
        n = address.removeprefix("local:")
        if n and not (n.isdigit() and 1 <= int(n) <= MAX_WORKERS):
            _fail(f"--dask: {address!r}: local:N needs a whole number of workers in "
                  f"1..{MAX_WORKERS} (e.g. local:4)")
    elif not re.fullmatch(r"([a-z]+://)?[\w.\-\[\]:]+:\d{1,5}", address):
        _fail(f"--dask: {address!r} is neither local:N nor a scheduler address such as "
              "tcp://host:8786")


def _fmt(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def flow_table(summary: dict) -> "Table":
    table = _table("Per-flow results")
    for col in ("flow", "cc", "stack", "streams", "rtt ms", "start s", "Mbit/s", "std", "retx",
                "RTOs", "mean cwnd", "mean srtt ms"):
        table.add_column(col, justify="left" if col in ("flow", "cc", "stack") else "right")
    for f in summary["flows"]:
        table.add_row(f["label"], f["cc"], f.get("stack") or "-", str(f["streams"]),
                      _fmt(f["rtt_ms"]),
                      _fmt(f["start_s"]), _fmt(f["throughput_mbps"], 2),
                      _fmt(f["throughput_std_mbps"], 2), _count(f["retransmits"]),
                      _count(f["timeouts"]), _fmt(f["mean_cwnd_pkts"]), _fmt(f["mean_srtt_ms"]))
    return table


def _count(value: int | None) -> str:
    """A windowed count; '-' where the run did not record it per interval."""
    return "-" if value is None else str(value)


def print_summary(summary: dict, out_dir: Path | None) -> None:
    out().print(flow_table(summary))
    b = summary["bottleneck"]
    start, end = summary["window_s"]
    # A parking lot's bottleneck is its narrowest hop: say which.
    name = "" if b["name"] == "bottleneck" else f" ({b['name']})"
    out().print(
        f"bottleneck{name} {b['capacity_mbps']:g} Mbit/s: "
        f"utilization {100 * b['utilization']:.1f}%, "
        f"drops {b['drops']}, loss rate {b['loss_rate']:.2e}, "
        f"mean queue {b['mean_queue_pkts']:.1f} pkts   (window {start:g}-{end:g} s)",
        highlight=False)
    jain = summary["jain_index"]
    sim = summary["sim"]
    ran = "on the kernel testbed" if summary.get("backend") == "testbed" else "simulated"
    out().print(f"Jain index {_fmt(jain, 3)}   {ran} {sim['sim_time_s']:g} s, "
                f"{sim['packets']:,} bottleneck packets in {sim['wall_s']:.2f} s wall",
                highlight=False)
    if out_dir is not None:
        out().print(f"results: {out_dir}/", highlight=False)


FORCE_HELP = ("write into an existing directory that is not a tcpeval result "
              "(its files are kept)")


def _check_out_dir(target: Path, force: bool) -> None:
    """Refuse an output directory before anything is computed."""
    from .store import OutputError, check_out_dir

    try:
        check_out_dir(target, force=force)
    except OutputError as e:
        _fail(f"--out: {e}")


def _write_run(result, target: Path, force: bool) -> None:
    from .store import OutputError, write_run

    try:
        write_run(result, target, force=force)
    except (OutputError, OSError) as e:
        _fail(f"--out: nothing written to {target}: {getattr(e, 'strerror', None) or e}")


def _write_report(result, target: Path, title: str, scenario: Path) -> Path:
    from .report import run_report
    from .store import add_to_run

    source = scenario.read_text()
    try:
        return add_to_run(target, "report.html",
                          lambda path: run_report(result, path, title, source))
    except OSError as e:
        _fail(f"--out: report not written to {target}: {e.strerror or e}")


def _stop_if_invalid(summary: dict, target: Path) -> None:
    """A testbed run that failed a validity gate is not a result: say why, exit 1."""
    validity = summary.get("validity") or {}
    if validity.get("valid", True):
        return
    err().print("[bold red]invalid run[/] (kept in "
                f"{target}/ for diagnosis, not a result):", highlight=False)
    for reason in validity.get("reasons", []):
        err().print(f"  - {reason}", highlight=False)
    raise typer.Exit(EXIT_INVALID_RUN)


@app.command(cls=_Command)
def run(
    scenario: Annotated[Path, typer.Argument(help="scenario TOML file")],
    out_dir: Annotated[Path | None, typer.Option("--out", help="result directory")] = None,
    set_: Annotated[list[str] | None,
                    typer.Option("--set", help="override: dotted.key=value")] = None,
    seed: Annotated[int | None, typer.Option(help="random seed (overrides run.seed)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print summary JSON only")] = False,
    with_intervals: Annotated[bool, typer.Option(
        "--intervals", help="with --json: add every per-interval series")] = False,
    backend: Annotated[str | None, typer.Option(help="sim or testbed")] = None,
    report: Annotated[bool, typer.Option("--report", help="also write report.html")] = False,
    pcap: Annotated[str | None, typer.Option(
        "--pcap", metavar="POINTS", help="write capture-POINT.pcap per capture point: "
        "bottleneck, sender, receiver or hopN, comma-separated (sets run.pcap.where)")] = None,
    force: Annotated[bool, typer.Option("--force", help=FORCE_HELP)] = False,
) -> None:
    """Run one scenario: print a per-flow table and write summary.json and Parquet tables."""
    from .run import run as run_scenario

    _resume_gc()
    _check_options(seed=seed)
    if pcap is not None:
        points = [p.strip() for p in pcap.split(",")]
        if not all(points):
            _fail("--pcap: expected capture points separated by commas, e.g. bottleneck,sender")
        set_ = [*(set_ or []), f"run.pcap.where={json.dumps(points)}"]
    if with_intervals and not as_json:
        _fail("--intervals: adds the per-interval series to --json's output; use both")
    target = out_dir or Path("results") / scenario.stem
    _check_out_dir(target, force)
    try:
        result = run_scenario(scenario, overrides=set_ or [], seed=seed, backend=backend)
    except ScenarioError as e:
        _fail(str(e))
    except KeyboardInterrupt as e:
        torn_down = getattr(e, "backend", None) == "testbed"
        err().print("interrupted; nothing written" + (" (a testbed run was torn down)"
                                                    if torn_down else ""))
        raise typer.Exit(EXIT_INTERRUPTED) from None
    _write_run(result, target, force)
    _stop_if_invalid(result.summary, target)
    _say_captures(result, target)
    if report:
        _write_report(result, target, f"tcpeval run: {scenario.name}", scenario)
    if as_json:
        doc = result.summary
        if with_intervals:
            from .export import intervals

            doc = {**doc, "intervals": intervals(result)}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        print_summary(result.summary, target)


def _say_captures(result, target: Path) -> None:
    """Name the pcap files written (on stderr: --json's stdout stays JSON), and
    say when max_packets cut a capture short."""
    from .pcap import file_name

    cap = result.capture
    if cap is None:
        return
    for k, point in enumerate(cap["points"]):
        kept = sum(1 for p in cap["point"] if p == k)
        line = f"pcap: {target / file_name(point)} ({kept} packets"
        missed = cap["seen"][k] - kept
        line += f"; {missed} more not kept: run.pcap.max_packets)" if missed else ")"
        err().print(line, highlight=False)


@app.command(cls=_Command)
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="result directory")] = Path("results/demo"),
    force: Annotated[bool, typer.Option("--force", help=FORCE_HELP)] = False,
) -> None:
    """Run the demo comparison (examples/demo.toml) and print its table."""
    from .run import run as run_scenario

    scenario = _demo_scenario()
    _check_out_dir(out_dir, force)
    out().print(f"[bold]tcpeval demo[/]: {scenario}", highlight=False)
    result = run_scenario(scenario)
    _write_run(result, out_dir, force)
    page = _write_report(result, out_dir, "tcpeval demo", scenario)
    print_summary(result.summary, out_dir)
    out().print(f"report: {page}", highlight=False)
    _demo_study(out_dir.parent / "demo-study")


def _demo_study(store: Path) -> None:
    """The quick profile of a classic study, end to end (about 10 s)."""
    from .studies.runner import report_study, run_study

    out().print("\n[bold]study dalton2004[/] (quick profile: standard, HighSpeed and FAST TCP, "
                "Tables I-V, 48 runs)", highlight=False)
    stats = run_study("dalton2004", "quick", store)
    page = report_study("dalton2004", store)
    out().print(f"{stats['done']} run, {stats['skipped']} already in the store; "
                f"study report: {page}", highlight=False)


@app.command(cls=_Command)
def metrics(
    result_dir: Annotated[Path, typer.Argument(help="a run's result directory")],
    start: Annotated[str | None, typer.Option("--from", help="window start, e.g. 120s")] = None,
    end: Annotated[str | None, typer.Option("--to", help="window end, e.g. 300s")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print summary JSON only")] = False,
) -> None:
    """Recompute a finished run's summary metrics over another window."""
    from .run import load_run, resummarize
    from .units import UnitError, parse_time

    window = []
    for option, text in (("--from", start), ("--to", end)):
        try:
            window.append(None if text is None else parse_time(text))
        except UnitError as e:
            _fail(f"{option}: {e}")
    try:
        summary = resummarize(load_run(result_dir), *window)
    except ScenarioError as e:
        _fail(str(e))
    missing = [c for c in ("retransmits", "timeouts")
               if any(f[c] is None for f in summary["flows"])]
    if missing:
        err().print(f"note: {' and '.join(missing)} per window unavailable: this run does not "
                    "record them per interval (whole-run counts: "
                    f"{', '.join(c + '_total' for c in missing)})", highlight=False)
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        print_summary(summary, None)


class _Progress:
    """A rich progress bar counting finished and failed runs, with an ETA. It is
    redrawn by the sweep's loop (`tick`), not by rich's thread: the worker pool
    forks, which is only safe with no other thread running."""

    def __init__(self):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(TextColumn("[bold]runs"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(),
                            TextColumn("ETA"), TimeRemainingColumn(), console=err(),
                            auto_refresh=False)
        self.failed = 0
        self.drawn = 0.0

    def start(self, total: int) -> None:
        self.bar.start()
        self.task = self.bar.add_task("runs", total=total, failed=0)

    def advance(self, ok: bool) -> None:
        self.failed += not ok
        self.bar.update(self.task, advance=1, failed=self.failed)
        self.tick()

    def tick(self) -> None:
        """Redraw, at most ten times a second (runs can finish faster)."""
        import time

        if time.monotonic() - self.drawn >= 0.1:
            self.drawn = time.monotonic()
            self.bar.refresh()

    def stop(self) -> None:
        self.bar.stop()


MEMORY_LIMIT_HELP = ("address-space cap of each worker, e.g. 4GiB, or 'unlimited'; a run "
                     "that exceeds it fails alone (default: 80% of physical memory shared "
                     "among the workers, at least 4 GiB)")


def _memory_limit(text: str | None) -> int | None:
    from .sweep import SweepError, parse_memory_limit

    try:
        return None if text is None else parse_memory_limit(text)
    except SweepError as e:
        _fail(str(e))


def _run_sweeps(progress: _Progress, run):
    """Call `run()` (which runs sweeps) under the progress bar: a bad --workers or
    --dask is exit 2; Ctrl-C is exit 130 with a line saying what was kept."""
    from .sweep import SweepError

    try:
        return run()
    except (SweepError, ScenarioError) as e:
        progress.stop()
        _fail(str(e))
    except KeyboardInterrupt as e:  # a SweepInterrupted says what was kept
        progress.stop()
        err().print(str(e) or "interrupted; nothing was run", highlight=False, markup=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        progress.stop()


@app.command(cls=_Command)
def sweep(
    sweep_file: Annotated[Path, typer.Argument(help="scenario TOML with a [sweep] table")],
    store_dir: Annotated[Path, typer.Option("--out", help="result store directory")] = Path(
        "results/store"),
    workers: Annotated[int | None, typer.Option(help="local worker processes")] = None,
    dask: Annotated[str | None, typer.Option(help="dask scheduler address or local:N")] = None,
    memory_limit: Annotated[str | None, typer.Option(help=MEMORY_LIMIT_HELP)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the plan only")] = False,
) -> None:
    """Run a parameter sweep into a result store; finished runs are skipped."""
    from . import sweep as sweep_mod
    from .store import OutputError

    _check_options(workers=workers, dask=dask)
    try:
        plan = sweep_mod.plan(sweep_file)
    except ScenarioError as e:
        _fail(str(e))
    limit = _memory_limit(memory_limit)
    out().print(sweep_mod.describe(plan), highlight=False)
    if dry_run:
        return
    store = _open_store(store_dir, plan)
    progress = _Progress()
    try:
        stats = _run_sweeps(progress, lambda: sweep_mod.run_plan(
            plan, store, workers=workers, dask=dask, memory_limit=limit, progress=progress))
    except OutputError as e:
        _fail(f"--out: {e}")
    finally:
        progress.stop()
    out().print(f"{stats['done']} run, {stats['skipped']} already in the store, "
                f"{stats['failed']} failed; index: {store.root / 'index.parquet'}", highlight=False)
    if stats["failures"]:
        for params, rep, error in stats["failures"]:
            err().print(f"failed: {params} repetition {rep}: {error}", highlight=False)
        raise typer.Exit(1)


def _open_store(store_dir: Path, plan):
    """The sweep's store, refused now (not after computing) when it cannot take
    the runs the sweep has left to do."""
    from .store import OutputError, Store

    try:
        store = Store(store_dir)
    except OutputError as e:
        _fail(f"--out: {e}")
    if not store.writable():
        left = sum(not store.has(r.key) for r in plan.runs)
        if left:
            _fail(f"--out: the result store {store_dir} is read-only and {left} of the "
                  f"sweep's {len(plan.runs)} runs are not in it")
    return store


@app.command(cls=_Command)
def results(
    store_dir: Annotated[Path, typer.Argument(help="result store directory")],
    where: Annotated[str | None,
                     typer.Option(help="pandas query, e.g. \"`flows.0.cc` == 'reno'\"")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table, csv or json")] = "table",
) -> None:
    """List the runs of a result store with their parameters and summary metrics."""
    from .store import OutputError, Store, sort_by_axes

    if fmt not in ("table", "csv", "json"):
        _fail(f"--format: {fmt!r} is not one of table, csv, json")
    if not (store_dir / "runs").is_dir():
        _fail(f"{store_dir}: not a result store (no runs/ directory)")
    try:
        store = Store(store_dir)
        df = sort_by_axes(store.index(), store.axis_values())
    except (OutputError, OSError) as e:
        _fail(f"{store_dir}: cannot read the result store: {getattr(e, 'strerror', None) or e}")
    for key, reason in store.quarantined:
        err().print(f"damaged run {key}: {reason}", highlight=False, markup=False)
    if where:
        try:
            df = df.query(where)
        except Exception as e:  # noqa: BLE001 - any query error is bad input
            _fail(f"--where: {e}")
    if fmt == "csv":
        sys.stdout.write(df.to_csv(index=False))
    elif fmt == "json":
        sys.stdout.write(df.to_json(orient="records", indent=2) + "\n")
    else:
        df = _compact(df)
        table = _table(f"{len(df)} runs")
        for col in df.columns:
            table.add_column(str(col))
        for row in df.itertuples(index=False):
            table.add_row(*[f"{v:.4g}" if isinstance(v, float) else str(v) for v in row])
        out().print(table)


def _compact(df):
    """The columns that fit a terminal: every axis, status, headline metrics, and
    a flow's algorithm and stack where they vary and no axis says so already."""
    from .store import axis_columns

    axes = set(axis_columns(df))
    drop = {"seed", "wall_s", "drops", "mean_queue_pkts", "error"}

    def shown(col: str) -> bool:
        if col in axes:
            return True
        flow = re.fullmatch(r"flow(\d+)\.(\w+)", col)
        if flow is None:
            return col not in drop
        if flow[2] in ("cc", "stack"):
            return (f"flows.{flow[1]}.{flow[2]}" not in axes and "run.stack" not in axes
                    and df[col].nunique(dropna=True) > 1)
        return flow[2] == "throughput_mbps"

    out_df = df[[c for c in df.columns if shown(c)]].copy()
    out_df["key"] = out_df["key"].str[:8]
    return out_df


@app.command(cls=_Command)
def plot(
    sources: Annotated[list[Path], typer.Argument(help="run directories or result stores")],
    kind: Annotated[str, typer.Option(help="timeseries, cdf, box, scatter or mean")
                    ] = "timeseries",
    metric: Annotated[str, typer.Option(help="e.g. throughput_mbps, srtt_ms, cwnd_pkts, "
                                        "queue_pkts (see docs/user-guide.md)")] = "throughput_mbps",
    by: Annotated[str | None, typer.Option(help="group lines, boxes or points: cc, flow, "
                                          "run, or a store's axis")] = None,
    out_file: Annotated[Path, typer.Option("--out", help="file.png, .svg or .pdf")] = Path(
        "plot.png"),
    x: Annotated[str | None, typer.Option(help="--kind mean: the store's axis on x")] = None,
) -> None:
    """Plot finished runs or result stores: time series, CDFs, box plots,
    throughput against delay, or a sweep's means with confidence intervals."""
    from .plot import PlotError, check_out, save
    from .plot import plot as draw

    try:
        target = check_out(out_file)  # before drawing
        page = save(draw(sources, kind, metric, by, x=x), target)
    except (PlotError, ScenarioError) as e:
        _fail(str(e))
    except OSError as e:  # a run missing a table, an unwritable --out
        _fail(f"{e.filename}: {e.strerror}" if e.filename else f"missing or unreadable: {e}")
    out().print(f"plot: {page}", highlight=False)


@app.command(cls=_Command)
def compare(
    runs: Annotated[list[Path], typer.Argument(help="run directories; the first is the baseline")],
    as_json: Annotated[bool, typer.Option("--json", help="print the comparison as JSON")] = False,
    plot_file: Annotated[Path | None, typer.Option(
        "--plot", help="also draw the runs' time series overlaid (file.png, .svg, .pdf)")] = None,
    metric: Annotated[str, typer.Option(help="the --plot's series")] = "throughput_mbps",
) -> None:
    """Compare runs: per-flow and aggregate values, and each run's difference from
    the first."""
    from .compare import CompareError
    from .compare import compare as compare_runs
    from .plot import SERIES, PlotError, check_out, save
    from .plot import plot as draw

    try:
        cmp = compare_runs(runs)
        if plot_file is not None:
            if metric not in SERIES:
                raise PlotError(f"--metric: {metric!r} is not a series; allowed: "
                                f"{', '.join(SERIES)}")
            save(draw(runs, "timeseries", metric), check_out(plot_file, "--plot"), "--plot")
    except (CompareError, PlotError) as e:
        _fail(str(e))
    if as_json:
        sys.stdout.write(json.dumps(cmp, indent=2) + "\n")
        return
    names = [r.name if sum(x.name == r.name for x in runs) == 1 else str(r) for r in runs]
    out().print(_compare_table("aggregate", cmp["aggregate"], names, ["metric"]))
    out().print(_compare_table("per flow", cmp["flows"], names, ["flow", "label", "cc", "metric"]))
    if plot_file is not None:
        out().print(f"plot: {plot_file}", highlight=False)


def _compare_table(title: str, rows: list[dict], names: list[str], head: list[str]) -> "Table":
    table = _table(f"{title} (differences from {names[0]})")
    for col in [*head, *names, *(f"{n} - {names[0]}" for n in names[1:])]:
        table.add_column(col)
    for row in rows:
        diffs = [_fmt_diff(d, r) for d, r in zip(row["diffs"], row["rel"], strict=True)]
        table.add_row(*[str(row[h]) for h in head], *map(_fmt_value, row["values"]), *diffs)
    return table


def _fmt_value(v) -> str:
    return "-" if v is None else f"{v:.4g}"


def _fmt_diff(diff, rel) -> str:
    if diff is None:
        return "-"
    return f"{diff:+.4g}" + ("" if rel is None else f" ({rel:+.1%})")


@app.command(cls=_Command)
def report(
    store: Annotated[Path, typer.Argument(help="a result store (a sweep's or a study's)")],
    x: Annotated[str, typer.Option(help="the axis on x, e.g. network.rtt or flows.0.cc")],
    y: Annotated[str, typer.Option(help="the summary value: throughput_mbps, mean_srtt_ms, "
                                   "retransmits, jain_index, ...")] = "throughput_mbps",
    hue: Annotated[str | None, typer.Option(help="one line (and colour) per value of this "
                                            "axis, or cc, flow, run")] = None,
    out_file: Annotated[Path | None, typer.Option(
        "--out", help="the page (default: STORE/report.html)")] = None,
) -> None:
    """The sweep report: means with 95% confidence intervals over repetitions,
    box plots, and the throughput-against-delay scatter of a result store, with
    the numbers under each figure, as one HTML page."""
    from .plot import PlotError
    from .report import sweep_report

    target = out_file or store / "report.html"
    if target.suffix.lower() not in (".html", ".htm"):
        _fail(f"--out: {target.name!r} must end in .html")
    try:
        page = sweep_report(store, target, x, y, hue)
    except (PlotError, ScenarioError) as e:
        _fail(str(e))
    except OSError as e:
        _fail(f"{e.filename}: {e.strerror}" if e.filename else f"missing or unreadable: {e}")
    out().print(f"report: {page}", highlight=False)


@app.command(cls=_Command)
def export(
    run_dir: Annotated[Path, typer.Argument(help="a run's result directory")],
    fmt: Annotated[str, typer.Option("--format", help="csv, json or flent")] = "csv",
) -> None:
    """Export a run: csv writes <table>.csv beside each Parquet table; json prints
    the summary with every per-interval series; flent writes <run>.flent.gz
    (Flent's data file: flent -i FILE -p totals)."""
    from .export import FORMATS, intervals, write_csv, write_flent
    from .store import OutputError

    if fmt not in FORMATS:
        _fail(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if not (run_dir / "summary.json").is_file():
        _fail(f"{run_dir}: not a run directory (no summary.json)")
    if fmt == "json":
        from .run import load_run

        result = load_run(run_dir)
        doc = {"summary": result.summary, "intervals": intervals(result)}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    try:
        written = [write_flent(run_dir)] if fmt == "flent" else write_csv(run_dir)
    except OutputError as e:
        _fail(str(e))
    for path in written:
        out().print(str(path), highlight=False)


testbed_app = typer.Typer(cls=_Group, help="The real-kernel testbed (network namespaces).",
                          no_args_is_help=True, **PLAIN)
app.add_typer(testbed_app, name="testbed")


@testbed_app.command("check", cls=_Command)
def testbed_check(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON only")] = False,
) -> None:
    """What this kernel offers (qdiscs, netem, NFQUEUE, TUN, algorithms) and the
    rate envelope the testbed supports."""
    from . import testbed

    caps = testbed.check()
    if as_json:
        sys.stdout.write(json.dumps(caps, indent=2) + "\n")
        return
    table = _table("testbed capabilities")
    table.add_column("item", justify="left")
    table.add_column("value", justify="left")
    for key, value in caps.items():
        if key == "algorithms":  # {cc: {"how", "why"}}: how, and why where unavailable
            value = ", ".join(f"{k}: {o['how']}" + (f" ({o['why']})" if o["how"] == "unavailable"
                                                    else "") for k, o in value.items())
        elif isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(value)
        table.add_row(key, str(value))
    out().print(table)


@testbed_app.command("cleanup", cls=_Command)
def testbed_cleanup(
    prefix: Annotated[str, typer.Option(help="only namespaces starting with this (tcpe-...)")]
    = "tcpe-",
) -> None:
    """Remove leftovers of testbed runs (namespaces named tcpe-* and the processes
    inside them), nothing else; namespaces of runs still in progress are kept."""
    from . import testbed

    try:
        removed, kept = testbed.cleanup(prefix)
    except ValueError as e:
        _fail(f"--prefix: {e}")
    out().print(f"removed {len(removed)} namespace(s): {', '.join(removed) or '-'}",
                highlight=False)
    if kept:
        out().print(f"kept {len(kept)} namespace(s) of runs in progress: {', '.join(kept)}",
                    highlight=False)


@app.command("compare-backends", cls=_Command)
def compare_backends(
    scenario: Annotated[Path, typer.Argument(help="scenario TOML file")],
    set_: Annotated[list[str] | None,
                    typer.Option("--set", help="override: dotted.key=value")] = None,
    seed: Annotated[int | None, typer.Option(help="random seed (overrides run.seed)")] = None,
    attempts: Annotated[int, typer.Option(help="testbed runs to try for a valid one")] = 2,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON only")] = False,
) -> None:
    """Run a scenario on the simulator and on the kernel testbed; print per-flow
    throughput and srtt, Jain index and utilization side by side."""
    from .testbed.compare import InvalidRun, compare

    if attempts < 1:
        _fail("--attempts: must be at least 1")
    _check_options(seed=seed)
    try:
        cmp = compare(scenario, overrides=set_ or [], seed=seed, attempts=attempts)
    except ScenarioError as e:
        _fail(str(e))
    except InvalidRun as e:
        err().print(f"[bold red]no valid testbed run[/] in {attempts} attempt(s); nothing "
                    "compared:", highlight=False)
        for reason in e.reasons:
            err().print(f"  - {reason}", highlight=False)
        raise typer.Exit(EXIT_INVALID_RUN) from None
    except KeyboardInterrupt:
        err().print("interrupted (the testbed was torn down)")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if as_json:
        sys.stdout.write(json.dumps(cmp, indent=2) + "\n")
        return
    out().print(_comparison_table(cmp))
    runs = cmp["testbed_runs"]  # a spoiled testbed run is repeated: say so
    out().print(f"testbed runs needed for a valid one: {runs['needed']}" + "".join(
        f"\n  spoiled: {'; '.join(r)}" for r in runs["invalid_reasons"]), highlight=False)


def _rel(pair: dict) -> str:
    r = pair["rel_diff"]
    return "-" if r is None else f"{100 * r:+.1f}%"


def _comparison_table(cmp: dict) -> "Table":
    start, end = cmp["window_s"]
    table = _table(f"simulator vs kernel, {cmp['capacity_mbps']:g} Mbit/s bottleneck "
                   f"(window {start:g}-{end:g} s)")
    for col in ("flow", "cc", "rtt ms", "start ms", "Mbit/s sim", "Mbit/s kernel", "diff",
                "srtt ms sim", "srtt ms kernel", "diff"):
        table.add_column(col, justify="left" if col in ("flow", "cc") else "right")
    for f in cmp["flows"]:
        t, r = f["throughput_mbps"], f["srtt_ms"]
        table.add_row(f["flow"], f["cc"], _fmt(f["rtt_ms"]), _fmt(f["start_ms"], 2),
                      _fmt(t["sim"], 2),
                      _fmt(t["testbed"], 2), _rel(t), _fmt(r["sim"]), _fmt(r["testbed"]),
                      _rel(r))
    for name, key, digits in (("aggregate Mbit/s", "aggregate_mbps", 2),
                              ("Jain index", "jain_index", 3), ("utilization", "utilization", 3)):
        pair = cmp[key]
        table.add_row(name, "", "", _fmt(pair["sim"], digits), _fmt(pair["testbed"], digits),
                      _rel(pair), "", "", "")
    return table


study_app = typer.Typer(cls=_Group, help="Ready-made studies reproducing classic "
                        "evaluations.", no_args_is_help=True, **PLAIN)
app.add_typer(study_app, name="study")


@study_app.command("list", cls=_Command)
def study_list() -> None:
    """List the studies."""
    from .studies import STUDIES

    for name, mod in STUDIES.items():
        out().print(f"{name:<14} {mod.TITLE}", highlight=False)


@study_app.command("run", cls=_Command)
def study_run(
    name: Annotated[str, typer.Argument(help="study name (tcpeval study list)")],
    profile: Annotated[str, typer.Option(help="smoke, quick or full")] = "quick",
    store_dir: Annotated[Path | None, typer.Option("--out", help="result store")] = None,
    workers: Annotated[int | None, typer.Option(help="local worker processes")] = None,
    dask: Annotated[str | None, typer.Option(help="dask scheduler address or local:N")] = None,
    cells: Annotated[str | None, typer.Option(
        help="run only the cells whose names match these comma-separated patterns "
             "(e.g. 'udp*,intra-*'); the rest of the store is kept")] = None,
    memory_limit: Annotated[str | None, typer.Option(help=MEMORY_LIMIT_HELP)] = None,
) -> None:
    """Run a study's sweeps into a result store (resumable), then write its report."""
    from .studies import PROFILES, STUDIES
    from .studies.runner import report_study, run_study

    if name not in STUDIES:
        _fail(f"unknown study {name!r}; available: {', '.join(STUDIES)}")
    if profile not in PROFILES:
        _fail(f"--profile: {profile!r} is not one of {', '.join(PROFILES)}")
    _check_options(workers=workers, dask=dask)
    store = store_dir or Path("results") / f"{name}-{profile}"
    limit = _memory_limit(memory_limit)
    progress = _Progress()
    stats = _run_sweeps(progress, lambda: run_study(
        name, profile, store, workers=workers, dask=dask, memory_limit=limit,
        progress=progress, cells=cells.split(",") if cells else None))
    page = report_study(name, store)
    out().print(f"{stats['done']} run, {stats['skipped']} already in the store, "
                f"{stats['failed']} failed; report: {page}", highlight=False)
    if stats["failures"]:
        raise typer.Exit(1)


@study_app.command("report", cls=_Command)
def study_report(
    name: Annotated[str, typer.Argument(help="study name")],
    store_dir: Annotated[Path, typer.Argument(help="the study's result store")],
) -> None:
    """(Re)write a study's HTML report, CSV tables and figures from its store."""
    from .studies.runner import report_study

    try:
        page = report_study(name, store_dir)
    except (FileNotFoundError, ValueError, KeyError) as e:
        _fail(str(e))
    out().print(f"report: {page}", highlight=False)


def _demo_scenario() -> Path:
    """examples/demo.toml: in a checkout tcpeval/demo.toml is a symbolic link to
    it, and a wheel carries the file itself (maturin follows the link)."""
    path = Path(__file__).resolve().parent / "demo.toml"
    if not path.exists():
        _fail(f"{path}: the demo scenario is missing (a damaged installation)")
    return path.resolve()


def main() -> None:
    """The console entry point. Usage errors (a missing argument, an option that
    is not a number, an unknown command) are one line, exit 2, like every other
    bad input; click would print a usage block first."""
    # pydantic's first model scans every installed package's entry points for
    # pydantic plugins (20-40 ms of a short run); tcpeval uses none, and typer
    # turns them off for its own adapters too (typer/_adapters.py). A user who
    # wants them sets PYDANTIC_DISABLE_PLUGINS (e.g. to "").
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    _no_plugin_loader()
    # numpy's OpenBLAS starts a thread per core when numpy is imported, and each
    # spins a while waiting for work: 20 ms of a short run's CPU (docs/performance.md,
    # Start-up). tcpeval's one BLAS call is report.py's 2x2 eigh; a user who wants
    # the threads sets OPENBLAS_NUM_THREADS.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _pause_gc()
    try:
        code = _run_app()
    finally:
        # At exit the interpreter's last collection walks every object the
        # imports made (numpy, pyarrow, pydantic's schemas), 40-50 ms of a short
        # run's CPU (docs/performance.md, Start-up); frozen, they are left to the
        # end of the process. What Python runs at exit still runs (atexit,
        # weakref.finalize, joining threads; finalizers of objects still alive are
        # not promised either way: Python reference manual, object.__del__).
        gc.freeze()
    sys.exit(code)


# pydantic's values of PYDANTIC_DISABLE_PLUGINS that turn every plugin off
# (pydantic/plugin/_loader.py, get_plugins).
PLUGINS_OFF = ("__all__", "1", "true")


def _no_plugin_loader() -> None:
    """With plugins off, pydantic still imports its plugin loader at its first
    model (pydantic/plugin/_schema_validator.py), and the loader imports
    importlib.metadata (with email, zipfile, csv...: about 10 ms of a short run)
    that it then does not use. The one function pydantic takes from it,
    get_plugins, returns () while plugins are off: this module stands in for the
    loader then. A pydantic that took more from it would fail at its first model
    (python/tests/test_startup.py makes one)."""
    name = "pydantic.plugin._loader"
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") in PLUGINS_OFF and name not in sys.modules:
        import types

        loader = types.ModuleType(name, "tcpeval's stand-in: pydantic plugins are off")
        loader.get_plugins = lambda: ()
        sys.modules[name] = loader


def _run_app() -> int:
    """The command's exit status; usage errors printed as one line."""
    try:
        code = app(standalone_mode=False)
    except typer.Abort:  # end of input at a prompt
        return EXIT_INTERRUPTED
    except Exception as e:
        if not _is_usage_error(e):
            raise
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `tcpeval`: the help
            sys.stderr.write(e.format_message() + "\n")
        else:
            ctx = getattr(e, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx else ""
            err().print(f"[bold red]error:[/] {_escape(e.format_message() + hint)}",
                        highlight=False)
        return e.exit_code
    return code or 0


def _is_usage_error(e: Exception) -> bool:
    """Click's exceptions for the user, by shape: typer vendors click in some
    versions and imports it in others."""
    return hasattr(e, "format_message") and isinstance(getattr(e, "exit_code", None), int)


if __name__ == "__main__":
    main()
