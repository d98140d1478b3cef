"""Bounds of what a run may ask for, each in one place (units.py holds those of
single values), and the checks that need the whole run."""

from __future__ import annotations

from ..errors import ScenarioError

DEFAULT_TRACE_INTERVAL_S = 0.1

# Engine flows ([[flows]] count x streams plus long-lived
# background flows): each holds a sender and a receiver with their scoreboards.
MAX_FLOWS = 100_000
# Expected web transfers of a run (load x capacity x time / mean size): the
# engine draws them as the run goes, but each is a row of the results (its
# summary through JSON and the completions table, about 1 KB on the way).
MAX_WEB_FLOWS = 1_000_000
# Segments a flow may send at once: every one is a packet in memory at once.
# Linux caps cwnd at 2^31 - 1, far beyond what a simulation can hold.
MAX_INITIAL_CWND = 100_000
# The largest TCP window (RFC 7323: 2^30 bytes with window scaling).
MAX_WINDOW_BYTES = 2**30
# Packets in flight on one flow's path (rate x RTT / 1500 B): each is held in
# memory with its event.
MAX_BDP_PKTS = 10_000_000
# Rows of the per-interval and trace tables (duration / interval x series): a
# row costs a few hundred bytes on its way through JSON and pandas.
MAX_TRACE_ROWS = 10_000_000
# A scenario file larger than this is not a scenario (and TOML nesting of a few
# thousand levels exhausts the parser's recursion).
MAX_FILE_BYTES = 10_000_000
MAX_NESTING = 100
# A UDP share of the bottleneck above 10 times its rate only fills the access queue.
MAX_SHARE_PERCENT = 1000


def _check_times(field: str, starts: list[float], stop: float | None, duration: float) -> None:
    if max(starts) >= duration:
        raise ScenarioError(f"{field}.start: {max(starts):g} s is at or after the end of the "
                            f"run (run.duration = {duration:g} s)")
    if stop is not None and stop <= min(starts):
        raise ScenarioError(f"{field}.stop: {stop:g} s must be after the start "
                            f"({min(starts):g} s)")


def _check_rows(duration: float, interval: float, trace: float, series: int) -> None:
    """The per-interval and trace tables must fit in memory."""
    step, field = (trace, "run.trace_interval") if trace <= interval else (
        interval, "run.interval")
    rows = duration / step * series
    if rows > MAX_TRACE_ROWS:
        raise ScenarioError(f"{field}: {duration:g} s / {step:g} s x {series} series = "
                            f"{rows:.3g} table rows; at most {MAX_TRACE_ROWS:.0e} (raise "
                            f"{field} or shorten run.duration)")
