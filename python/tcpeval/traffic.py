"""Background traffic models (docs/traffic.md): web-like short TCP transfers and
long-lived background flows, with per-flow base RTTs drawn from a distribution.
Long-lived flows are expanded here into engine flows; web transfers are drawn by
the engine as the run goes (crates/tcpeval-sim/src/web.rs, the same models), and
these classes give their parameters, mean and CDF.

Web transfers follow SURGE (Barford & Crovella, SIGMETRICS 1998, table 2): file
sizes are lognormal in the body (mu 9.357, sigma 1.318, in ln bytes) and Pareto
in the tail (alpha 1.1, k 133 KB); the seed studies cite this model without
giving its numbers (seed 003 section 3.3), so these defaults are SURGE's as
usually quoted, and every parameter can be set in the scenario. Arrivals are
Poisson; the rate that offers a target load rho on a link of capacity C is
lambda = rho C / (8 E[S]) with E[S] the mean size in bytes (reference digest,
part D). The Pareto tail has an infinite variance, so sizes are capped (default
100 MB) and the cap is part of the model: E[S] is the capped mean.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from ._lazy import LazyModule

# Imported on first use: the scenario model (and so the command line) imports
# this module for its defaults.
np = LazyModule("numpy")

# SURGE file-size model (Barford & Crovella 1998, table 2).
SURGE_BODY_MU = 9.357
SURGE_BODY_SIGMA = 1.318
SURGE_TAIL_ALPHA = 1.1
SURGE_TAIL_K = 133_000.0
# Share of transfers drawn from the tail: the lognormal body's mass above k,
# P(S > 133 KB) = 0.07, so the mixture has no jump at the cut.
SURGE_TAIL_FRACTION = 0.07
DEFAULT_SIZE_CAP = 100e6
# Seed 003 section 3.3: background flows use the default 64 KB receive window.
BACKGROUND_WINDOW = 64 * 1024


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


@dataclass(frozen=True)
class SizeModel:
    """Lognormal body below k, Pareto tail above it, capped at `cap` bytes."""

    mu: float = SURGE_BODY_MU
    sigma: float = SURGE_BODY_SIGMA
    alpha: float = SURGE_TAIL_ALPHA
    k: float = SURGE_TAIL_K
    tail_fraction: float = SURGE_TAIL_FRACTION
    cap: float = DEFAULT_SIZE_CAP
    min_size: float = 1.0

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """The exact CDF of the sizes before rounding up (for tests of fit)."""
        x = np.asarray(x, dtype=float)
        z_k = (math.log(self.k) - self.mu) / self.sigma
        with np.errstate(divide="ignore"):
            z = (np.log(np.maximum(x, 1e-300)) - self.mu) / self.sigma
        body = np.vectorize(_phi)(np.minimum(z, z_k)) / _phi(z_k)
        tail = np.where(x >= self.k, 1.0 - (self.k / np.maximum(x, self.k)) ** self.alpha, 0.0)
        out = (1 - self.tail_fraction) * body + self.tail_fraction * tail
        return np.where(x >= self.cap, 1.0, out)

    def mean(self) -> float:
        """E[S] of the capped mixture, analytically."""
        z_k = (math.log(self.k) - self.mu) / self.sigma
        body = math.exp(self.mu + self.sigma**2 / 2) * _phi(z_k - self.sigma) / _phi(z_k)
        a, k, m = self.alpha, self.k, self.cap
        tail = a * k / (a - 1) * (1 - (k / m) ** (a - 1)) + m * (k / m) ** a
        return (1 - self.tail_fraction) * body + self.tail_fraction * tail


def _norm_ppf(u: np.ndarray) -> np.ndarray:
    """Inverse standard normal CDF (Acklam's rational approximation refined by one
    Newton step; absolute error below 1e-12)."""
    u = np.clip(np.asarray(u, dtype=float), 1e-300, 1 - 1e-16)
    a = [-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02,
         1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00]
    b = [-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02,
         6.680131188771972e01, -1.328068155288572e01]
    c = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00,
         -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00]
    d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00,
         3.754408661907416e00]
    lo, hi = 0.02425, 1 - 0.02425
    x = np.empty_like(u)
    m = u < lo
    q = np.sqrt(-2 * np.log(u[m]))
    x[m] = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
        (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    m = (u >= lo) & (u <= hi)
    q = u[m] - 0.5
    r = q * q
    x[m] = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / (
        ((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    m = u > hi
    q = np.sqrt(-2 * np.log(1 - u[m]))
    x[m] = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
        (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    # One Newton step on Phi(x) = u.
    err = 0.5 * np.vectorize(math.erfc)(-x / math.sqrt(2)) - u
    return x - err * math.sqrt(2 * math.pi) * np.exp(x * x / 2)


@dataclass(frozen=True)
class RttModel:
    """Per-flow base RTTs: uniform [low, high], lognormal (median, sigma), a fixed
    value, or an empirical table (a CSV of `rtt_ms[,weight]` rows)."""

    kind: str = "fixed"
    value_ms: float = 100.0
    low_ms: float = 10.0
    high_ms: float = 300.0
    median_ms: float = 80.0
    sigma: float = 0.8
    table: tuple[tuple[float, float], ...] = ()

    @staticmethod
    def from_csv(path: str | Path) -> RttModel:
        rows = []
        with open(path, newline="") as fh:
            for row in csv.reader(fh):
                if not row or row[0].strip().startswith("#"):
                    continue
                try:
                    rtt = float(row[0])
                except ValueError:
                    continue  # header line
                weight = float(row[1]) if len(row) > 1 and row[1].strip() else 1.0
                if rtt <= 0 or weight < 0:
                    raise ValueError(f"{path}: RTTs must be positive and weights non-negative")
                rows.append((rtt, weight))
        if not rows:
            raise ValueError(f"{path}: no RTT rows (expected rtt_ms[,weight] per line)")
        return RttModel(kind="empirical", table=tuple(rows))

    def sample_ms(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.kind == "fixed":
            return np.full(n, self.value_ms)
        if self.kind == "uniform":
            return rng.uniform(self.low_ms, self.high_ms, n)
        if self.kind == "lognormal":
            return self.median_ms * np.exp(self.sigma * rng.standard_normal(n))
        if self.kind == "empirical":
            values = np.array([r for r, _ in self.table])
            weights = np.array([w for _, w in self.table])
            return rng.choice(values, size=n, p=weights / weights.sum())
        raise ValueError(f"unknown RTT distribution '{self.kind}'; "
                         "allowed: fixed, uniform, lognormal, empirical")


def long_lived_flows(*, count: int, rng: np.random.Generator, rtts: RttModel, cc: str = "reno",
                     jitter_s: float = 5.0, direction: str = "forward",
                     max_window: int = BACKGROUND_WINDOW) -> list[dict]:
    """Engine flow entries for long-lived background flows, their starts jittered
    uniformly over [0, jitter) so they do not synchronise (reference digest, D)."""
    starts = rng.uniform(0.0, jitter_s, count) if jitter_s > 0 else np.zeros(count)
    rtt = rtts.sample_ms(rng, count)
    return [
        {
            "cc": cc,
            "rtt_ns": int(rtt[i] * 1e6),
            "start_ns": int(starts[i] * 1e9),
            "max_window_bytes": max_window,
            "direction": direction,
            "trace": False,
            "group": "background",
        }
        for i in range(count)
    ]


def ks_statistic(sample: np.ndarray, cdf) -> tuple[float, float]:
    """One-sample Kolmogorov-Smirnov statistic D and its asymptotic p-value
    (Kolmogorov's series), for a continuous reference CDF."""
    x = np.sort(np.asarray(sample, dtype=float))
    n = len(x)
    f = cdf(x)
    d = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))
    t = (math.sqrt(n) + 0.12 + 0.11 / math.sqrt(n)) * d
    p = 2 * sum((-1) ** (j - 1) * math.exp(-2 * j * j * t * t) for j in range(1, 101))
    return float(d), float(min(max(p, 0.0), 1.0))
