"""Evaluation metrics of the classic studies (docs/metrics.md), as pure functions
over the result tables (`Result.flows`, `.trace`, `.queue`, `.links`,
`.completions`). Interval tables are windowed by interval END time:
rows with t_s in (start_s, end_s].

The table functions take a pandas DataFrame or a `tcpeval.table.Table` (what a
run computes its summary from, without importing pandas): they read columns as
numpy arrays and select rows with a boolean mask, and where pandas would sum or
average they compute what pandas does (`group_sum`, `series_mean`), so both give
the same numbers to the last digit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from ._lazy import LazyModule

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = LazyModule("pandas")

# ----- what pandas computes, on numpy arrays -------------------------------------------


def series_mean(x: np.ndarray) -> float:
    """pandas' `Series.mean()` (pandas/core/nanops.py nanmean, no bottleneck):
    NaN skipped, numpy's sum of the rest over their count; NaN when none."""
    nan = np.isnan(x)
    if nan.any():
        x = np.where(nan, 0.0, x)
    count = float(len(x) - nan.sum())
    return float(x.sum(dtype=np.float64) / count) if count else math.nan


def group_sum(keys: Sequence[np.ndarray], values: np.ndarray):
    """Per distinct key tuple, in ascending order (the first key first): the
    group keys (one array per key) and the sums, as pandas 3.1's
    `groupby(keys)[column].sum()` adds them (pandas/core/groupby/ops.py
    `_cython_operation`): when the rows are already in key order and no value is
    NaN, numpy's `add.reduceat` over each group; otherwise the Kahan-compensated
    sum in row order, NaN skipped (pandas/_libs/groupby.pyx `group_sum`). The
    two differ in the last digit, hence both."""
    n = len(values)
    order = np.lexsort(keys[::-1]) if n else np.arange(0)
    sorted_keys = [np.asarray(k)[order] for k in keys]
    change = np.zeros(n, dtype=bool)
    change[:1] = True
    for k in sorted_keys:
        change[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(change)
    group_keys = [k[starts] for k in sorted_keys]
    values = np.asarray(values)[order]
    if not n:
        return group_keys, values.astype(np.float64 if values.dtype == object else values.dtype)
    in_order = bool((order[1:] > order[:-1]).all())
    if values.dtype.kind in "iub":
        return group_keys, np.add.reduceat(values.astype(np.int64, copy=False), starts)
    if in_order and not np.isnan(values).any():
        return group_keys, np.add.reduceat(values, starts)
    return group_keys, _kahan_sums(values, starts)


def _kahan_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Kahan's compensated sum of each group (rows sorted by group, in row order
    within one), all groups a step at a time: step r adds each group's r-th row."""
    sizes = np.diff(starts, append=len(values))
    total = np.zeros(len(starts))
    comp = np.zeros(len(starts))
    for r in range(int(sizes.max())):
        g = np.flatnonzero(sizes > r)
        val = values[starts[g] + r]
        g, val = g[~np.isnan(val)], val[~np.isnan(val)]
        y = val - comp[g]
        t = total[g] + y
        c = (t - total[g]) - y
        # An infinite value makes the compensation NaN: pandas resets it (GH#53606).
        comp[g] = np.where(np.isfinite(c), c, 0.0)
        total[g] = t
    return total


def quantile(x: np.ndarray, q: float) -> float:
    """`np.quantile(x, q)` (linear interpolation) of a non-empty array, with
    numpy 2.4's arithmetic (numpy/lib/_function_base_impl.py `_quantile`,
    `_get_indexes`, `_lerp`), without its call of np.unique, which imports
    numpy.ma (10-20 ms of a short run)."""
    s = np.sort(np.asarray(x, dtype=np.float64))
    n = len(s)
    if np.isnan(s[-1]):  # NaN sorts last: numpy's quantile is NaN
        return math.nan
    virtual = (n - 1) * q
    below = math.floor(virtual)
    above = below + 1
    if virtual >= n - 1:
        below = above = -1
    elif virtual < 0:
        below = above = 0
    gamma = virtual - below
    a, b = float(s[below]), float(s[above])
    diff = b - a
    # numpy interpolates from the nearer end (_lerp).
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma


def lookup(mapping: Mapping, keys: np.ndarray, default=math.nan) -> np.ndarray:
    """`mapping[key]` for each key (`default` when missing), looked up once per
    distinct key: pandas' `Series.map(mapping)`."""
    keys = np.asarray(keys)
    if not len(keys):
        return np.array([], dtype=np.int64)
    distinct, inverse = np.unique(keys, return_inverse=True)
    values = np.array([mapping.get(k, default) for k in distinct.tolist()])
    if values.dtype.kind == "U":
        values = values.astype(object)
    return values[inverse]


# ----- windows and basic throughput ---------------------------------------------------


def in_window(t: np.ndarray, start_s: float = 0.0, end_s: float = math.inf) -> np.ndarray:
    """Which interval end times t lie in (start_s, end_s]."""
    return (t > start_s + 1e-12) & (t <= end_s + 1e-12)


def window(df: pd.DataFrame, start_s: float = 0.0, end_s: float = math.inf) -> pd.DataFrame:
    """Rows of an interval table whose interval ends in (start_s, end_s]."""
    return df[in_window(np.asarray(df["t_s"]), start_s, end_s)]


def whole_intervals(flows: pd.DataFrame, first: Mapping[int, float], end_s: float,
                    interval_s: float) -> pd.DataFrame:
    """Rows of the flows table inside each flow's own window [first[flow], end_s]
    (a flow that starts late is measured from its start): only report intervals
    that lie wholly inside count."""
    t = np.asarray(flows["t_s"])
    begin = lookup(first, np.asarray(flows["flow"]))
    return flows[(t > begin + 1e-12) & (t <= end_s + 1e-12) & (t - interval_s >= begin - 1e-9)]


def per_flow(df: pd.DataFrame, column: str) -> dict[int, np.ndarray]:
    """A column's values per flow, in table order. One stable sort and slices,
    not a scan of the table per flow: 2,000 flows would cost seconds."""
    if not len(df):
        return {}
    order = np.argsort(np.asarray(df["flow"]), kind="stable")
    keys = np.asarray(df["flow"])[order]
    values = np.asarray(df[column])[order]
    cuts = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    return dict(zip(keys[np.r_[0, cuts]].tolist(), np.split(values, cuts), strict=True))


def mean(x: Sequence[float]) -> float:
    """sum / count (numpy's pairwise sum), NaN when empty."""
    # Summed as given (no cast copy first), as the summary always has: a
    # different order of float additions could change the last digit.
    x = np.asarray(x)
    return float(x.sum(dtype="float64") / len(x)) if len(x) else math.nan


@dataclass(frozen=True, slots=True)
class IntervalStats:
    """Mean, population std and quartiles of a flow's per-interval throughput."""

    mean: float
    std: float
    q25: float
    q50: float
    q75: float


def interval_stats(series: Sequence[float]) -> IntervalStats:
    """Mean, population std and quartiles Q0.25/Q0.5/Q0.75 (linear interpolation)
    of per-interval throughputs (the 10G study's box plots use the quartiles);
    all NaN when empty."""
    x = np.asarray(series, dtype=float)
    if not len(x):
        return IntervalStats(math.nan, math.nan, math.nan, math.nan, math.nan)
    q25, q50, q75 = (quantile(x, q) for q in (0.25, 0.5, 0.75))
    return IntervalStats(mean(x), float(x.std()), q25, q50, q75)


def throughput_stats(flows: pd.DataFrame, start_s: float = 0.0,
                     end_s: float = math.inf) -> pd.DataFrame:
    """Per flow (the index): `interval_stats` of the goodput (Mbit/s) of the
    intervals ending in the window, as columns mean, std, q25, q50, q75."""
    x = per_flow(window(flows, start_s, end_s), "throughput_mbps")
    rows = {f: asdict(interval_stats(v)) for f, v in x.items()}
    return pd.DataFrame.from_dict(rows, orient="index",
                                  columns=["mean", "std", "q25", "q50", "q75"])


def window_counts(flows: pd.DataFrame, columns: Sequence[str], start_s: float = 0.0,
                  end_s: float = math.inf) -> dict[int, dict[str, int]]:
    """Per flow, the sums of event-count columns (retransmits, timeouts) over
    the report intervals ending in the window."""
    w = window(flows, start_s, end_s)
    flow = np.asarray(w["flow"])
    sums = {c: group_sum([flow], np.asarray(w[c])) for c in columns}
    keys = sums[columns[0]][0][0] if columns else []
    return {int(k): {c: int(sums[c][1][i]) for c in columns} for i, k in enumerate(keys)}


def _link_rows(links: pd.DataFrame, link: str, start_s: float, end_s: float) -> pd.DataFrame:
    return window(links[np.asarray(links["link"]) == link], start_s, end_s)


def link_utilization(links: pd.DataFrame, start_s: float = 0.0, end_s: float = math.inf,
                     link: str = "bottleneck") -> float:
    """Bytes the link transmitted (headers and retransmissions included) over its
    capacity, the mean over the intervals ending in the window; NaN if none."""
    rows = _link_rows(links, link, start_s, end_s)
    return series_mean(np.asarray(rows["utilization"])) if len(rows) else math.nan


def mean_queue(links: pd.DataFrame, start_s: float = 0.0, end_s: float = math.inf,
               link: str = "bottleneck") -> float:
    """The link's time-average queue (packets), the mean over the intervals
    ending in the window; NaN if none."""
    rows = _link_rows(links, link, start_s, end_s)
    return series_mean(np.asarray(rows["queue_pkts_mean"])) if len(rows) else math.nan


def drops(links: pd.DataFrame, start_s: float = 0.0, end_s: float = math.inf,
          link: str = "bottleneck") -> int:
    """Packets the link dropped in the intervals ending in the window."""
    return int(np.asarray(_link_rows(links, link, start_s, end_s)["drops"]).sum())


# ----- stability -------------------------------------------------------------------------


def stability_index(series: Sequence[float]) -> float:
    """Coefficient of variation std/mean of a flow's interval throughputs (Bullot
    et al., seed 000 section 3: "stability index"; lower is steadier). Population
    std; NaN when the mean is 0."""
    x = np.asarray(series, dtype=float)
    if not len(x):
        return math.nan
    m = x.mean()
    return float(x.std() / m) if m else math.nan


def aggregate_cov(flows: pd.DataFrame, start_s: float = 0.0, end_s: float = math.inf) -> float:
    """CoV of the total throughput of all flows per interval (Ha et al., seed 003
    section 4.5: system stability)."""
    w = window(flows, start_s, end_s)
    return stability_index(group_sum([np.asarray(w["t_s"])], np.asarray(w["throughput_mbps"]))[1])


# ----- fairness ----------------------------------------------------------------------------


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index (Jain, Chiu & Hawe 1984): (sum x)^2 / (n sum x^2), in
    [1/n, 1], 1 = equal shares. NaN for no values or all zeros. It cannot tell an
    aggressor from a victim (use NRU or asymmetry for that)."""
    x = np.asarray(values, dtype=float)
    s2 = float((x * x).sum())
    if len(x) == 0 or s2 == 0:
        return math.nan
    return float(x.sum() ** 2 / (len(x) * s2))


def jain_series(flows: pd.DataFrame, start_s: float = 0.0, end_s: float = math.inf) -> pd.Series:
    """Jain's index per interval over the flows present."""
    w = window(flows, start_s, end_s)
    return w.groupby("t_s")["throughput_mbps"].apply(lambda v: jain_index(v.to_numpy()))


def asymmetry(x1: float, x2: float) -> float:
    """Throughput asymmetry A = (x1 - x2) / (x1 + x2) in [-1, 1] (Bullot et al.,
    seed 000): positive when flow 1 takes more; 0 equal; NaN if both are 0."""
    total = x1 + x2
    return (x1 - x2) / total if total else math.nan


# ----- Normalised Resource Usage (Bhatti & Bateman, seed 001, eqs. 2-7) ----------------

NRU_FLOOR_DB = -60.0


def nru_series(throughput: Sequence[float], calibrated_mean: float) -> np.ndarray:
    """U_n(t) = 10 log10(w_n r_n(t)) with w_n = 1 / calibrated_mean, the mean
    throughput the same variant obtains against itself under the same conditions
    (the self-fairness run). 0 dB = its fair share, +3 dB = twice it. Intervals
    with zero throughput are floored at -60 dB (log of 0 is undefined)."""
    if calibrated_mean <= 0:
        raise ValueError("calibrated_mean must be positive")
    r = np.asarray(throughput, dtype=float) / calibrated_mean
    with np.errstate(divide="ignore"):
        return np.maximum(10 * np.log10(r), NRU_FLOOR_DB)


def flow_nru(throughput: Sequence[float], calibrated_mean: float) -> float:
    """Flow-NRU: the mean of U_n(t) over the measurement window (seed 001 eq. 4)."""
    return float(nru_series(throughput, calibrated_mean).mean())


def system_nru(flow_nrus: Sequence[float]) -> float:
    """System-NRU: the mean of the flows' flow-NRU values, in dB (seed 001 eq. 5).
    Positive and negative flow values cancel: read it with the flow-NRU."""
    return float(np.mean(flow_nrus))


# ----- convergence (Li, Leith & Shorten 2007; seed 002 section III-B) --------------


def ewma(series: Sequence[float], lam: float = 0.1) -> np.ndarray:
    """Short-term average u(k) = (1 - lam) u(k-1) + lam x(k), starting at 0."""
    out, u = [], 0.0
    for x in series:
        u = (1 - lam) * u + lam * float(x)
        out.append(u)
    return np.asarray(out)


def convergence_time(t_s: Sequence[float], throughput: Sequence[float], start_s: float,
                     reference: float | None = None, lam: float = 0.1,
                     epsilon: float = 0.8) -> float:
    """epsilon-convergence time of a flow started at start_s: the time from its
    start until its short-term average (EWMA, lam) first reaches epsilon x the
    reference (default: its long-term mean after start). NaN if never."""
    t = np.asarray(t_s, dtype=float)
    x = np.asarray(throughput, dtype=float)
    keep = t > start_s
    t, x = t[keep], x[keep]
    if not len(x):
        return math.nan
    ref = float(x.mean()) if reference is None else reference
    u = ewma(x, lam)
    hit = np.nonzero(u >= epsilon * ref)[0]
    return float(t[hit[0]] - start_s) if len(hit) else math.nan


def spread(throughput: Sequence[float], converged_index: int, lam: float = 0.1) -> float:
    """Spread after convergence (seed 002 section III-B): the mean absolute distance
    of the short-term average from the long-term average over the measurements
    from the convergence point on, s = sum |mean - u(t)| / T."""
    x = np.asarray(throughput, dtype=float)
    u = ewma(x, lam)[converged_index:]
    if not len(u):
        return math.nan
    return float(np.abs(x.mean() - u).mean())


# ----- RTT fairness and TCP friendliness ---------------------------------------------------


def rtt_fairness(x_short_rtt: float, x_long_rtt: float) -> dict:
    """Throughput ratio of the short-RTT flow to the long-RTT one (Ha et al., seed
    003) and the pair's Jain index."""
    ratio = x_short_rtt / x_long_rtt if x_long_rtt else math.inf
    return {"ratio": ratio, "jain": jain_index([x_short_rtt, x_long_rtt])}


def tcp_friendliness(reno_with_variant: float, reno_with_reno: float) -> float:
    """Throughput the standard (Reno) flows get when sharing with the variant,
    relative to what they get sharing with Reno under the same conditions (seed
    003; reference digest part C). 1 = friendly; below 1, the variant takes more."""
    return reno_with_variant / reno_with_reno if reno_with_reno else math.nan


# ----- loss, retransmissions, delay -----------------------------------------------------


def ratio(part: float, whole: float) -> float:
    """part / whole, 0 when the whole is 0 (nothing arrived, nothing sent)."""
    return float(part / whole) if whole else 0.0


def loss_rate(links: pd.DataFrame, start_s: float = 0.0, end_s: float = math.inf,
              link: str = "bottleneck") -> float:
    """Drops / arrivals at the link in the intervals ending in the window."""
    rows = _link_rows(links, link, start_s, end_s)
    return ratio(np.asarray(rows["drops"]).sum(), np.asarray(rows["arrivals"]).sum())


def retransmission_rate(retransmits: int, segments_sent: int) -> float:
    """Retransmitted segments / segments sent (whole-run counts: segments sent
    are not recorded per interval)."""
    return ratio(retransmits, segments_sent)


def queueing_delay(queue: pd.DataFrame, capacity_bps: float, link: str = "bottleneck",
                   start_s: float = 0.0, end_s: float = math.inf,
                   quantiles=(0.5, 0.99)) -> dict:
    """Queueing delay (ms) a packet arriving at the sampled instants would see:
    queued bytes x 8 / capacity; mean and quantiles."""
    t = np.asarray(queue["t_s"])
    rows = queue[(np.asarray(queue["link"]) == link) & (t >= start_s) & (t <= end_s)]
    delay = np.asarray(rows["queue_bytes"]) * 8 / capacity_bps * 1e3
    out = {"mean_ms": float(delay.mean()) if len(delay) else math.nan}
    for q in quantiles:
        out[f"p{int(q * 100)}_ms"] = quantile(delay, q) if len(delay) else math.nan
    return out


DEFAULT_SIZE_BUCKETS = (0, 10_000, 100_000, 1_000_000, 10_000_000, math.inf)


def fct_by_size(completions: pd.DataFrame, buckets=DEFAULT_SIZE_BUCKETS) -> pd.DataFrame:
    """Flow completion time statistics (s) of finished transfers by their size
    bucket (the configured transfer size)."""
    done = completions[completions["completed"]]
    labels = [f"[{lo:g}, {hi:g})" for lo, hi in zip(buckets[:-1], buckets[1:], strict=True)]
    cut = pd.cut(done["size_bytes"], bins=list(buckets), right=False, labels=labels)
    g = done.groupby(cut, observed=False)["fct_s"]
    return pd.DataFrame({"count": g.count(), "mean": g.mean(), "median": g.median(),
                         "p99": g.quantile(0.99)})


# ----- aggregation over repetitions -------------------------------------------------------


def t_quantile(p: float, dof: int) -> float:
    """Student's t quantile: exact for 1 and 2 degrees of freedom, otherwise the
    Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5), within 2e-3 for dof >= 3
    at the quantiles used for confidence intervals."""
    if dof < 1:
        return math.nan
    if dof == 1:
        return math.tan(math.pi * (p - 0.5))
    if dof == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    from .traffic import _norm_ppf

    z = float(_norm_ppf(np.array([p]))[0])
    n = float(dof)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / n + g2 / n**2 + g3 / n**3 + g4 / n**4


def aggregate(values: Sequence[float], confidence: float = 0.95) -> dict:
    """Mean, sample standard deviation and the half-width of the Student-t
    confidence interval of a metric over repetitions (runs differing only by seed)."""
    x = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    n = len(x)
    if n == 0:
        return {"n": 0, "mean": math.nan, "std": math.nan, "ci": math.nan}
    std = float(x.std(ddof=1)) if n > 1 else math.nan
    half = t_quantile(0.5 + confidence / 2, n - 1) * std / math.sqrt(n) if n > 1 else math.nan
    return {"n": n, "mean": float(x.mean()), "std": std, "ci": half}
