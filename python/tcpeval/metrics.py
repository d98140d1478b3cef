"""Evaluation metrics (docs/metrics.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index (Jain, Chiu & Hawe 1984): (sum x)^2 / (n sum x^2),
    in [1/n, 1]; NaN for no values or all zeros."""
    xs = [float(v) for v in values]
    s2 = sum(v * v for v in xs)
    if not xs or s2 == 0:
        return math.nan
    return sum(xs) ** 2 / (len(xs) * s2)
