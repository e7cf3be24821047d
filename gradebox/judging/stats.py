"""Agreement statistics: Wilson intervals, Cohen's kappa, Scott's pi, weighted kappa, bootstrap.

Small, documented functions over a confusion table (``table[i][j]``: items the
first rater put in category ``i`` and the second in ``j``), standard library
only. Why not a library: statsmodels (``proportion_confint``, ``cohens_kappa``)
and scikit-learn (``cohen_kappa_score``) bring numpy and scipy (~100 MB) into a
grader that otherwise needs neither, for a dozen lines of arithmetic; the tests
check every function against hand-worked tables instead.

Definitions (Artstein & Poesio 2008, "Inter-coder agreement for computational
linguistics"): with observed agreement ``p_o`` and chance agreement ``p_e``, both
kappa and pi are ``(p_o - p_e) / (1 - p_e)``; Cohen's kappa takes ``p_e`` from each
rater's own marginals, Scott's pi from the pooled marginals (one distribution for
both raters). Weighted kappa (Cohen 1968) credits near misses on an ordinal
scale. Each is ``None`` where it is undefined (``p_e == 1``: a single category).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Interval",
    "Table",
    "Weights",
    "bootstrap_interval",
    "cohen_kappa",
    "scott_pi",
    "weighted_kappa",
    "wilson",
]

Table = Sequence[Sequence[int]]
"""A square confusion table of counts."""
Weights = Literal["linear", "quadratic"]
"""Disagreement weights of weighted kappa: ``|i - j|`` or ``(i - j)**2``, scaled to 0..1."""
_Z95 = 1.959963984540054
"""The standard normal's 97.5 % quantile."""


@dataclass(frozen=True, slots=True)
class Interval:
    """A 95 % confidence interval."""

    low: float
    """Lower bound."""
    high: float
    """Upper bound."""

    def to_json(self) -> list[float]:
        """``[low, high]``, rounded to 4 places."""
        return [round(self.low, 4), round(self.high, 4)]

    def __contains__(self, value: float) -> bool:
        return self.low <= value <= self.high


def wilson(successes: int, n: int) -> Interval | None:
    """The Wilson score 95 % interval of a proportion (``None`` when ``n`` is 0).

    Unlike the normal approximation it stays inside 0..1 and is honest at 0 or n
    successes (Wilson 1927; Brown, Cai & DasGupta 2001 recommend it for small n).
    """
    if n <= 0:
        return None
    p = successes / n
    z2 = _Z95 * _Z95
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = _Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # At 0 or n successes the bound is exactly 0 or 1 (rounding would leave 1 - 1e-16).
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(low, high)


def _total(table: Table) -> int:
    return sum(sum(row) for row in table)


def _kappa_like(table: Table, expected: float) -> float | None:
    n = _total(table)
    if n == 0 or expected >= 1 - 1e-12:
        return None
    observed = sum(table[i][i] for i in range(len(table))) / n
    return (observed - expected) / (1 - expected)


def cohen_kappa(table: Table) -> float | None:
    """Cohen's kappa: chance agreement from each rater's own marginals."""
    n = _total(table)
    if n == 0:
        return None
    rows = [sum(r) / n for r in table]
    cols = [sum(r[j] for r in table) / n for j in range(len(table))]
    return _kappa_like(table, sum(r * c for r, c in zip(rows, cols, strict=True)))


def scott_pi(table: Table) -> float | None:
    """Scott's pi: chance agreement from the pooled marginals of both raters."""
    n = _total(table)
    if n == 0:
        return None
    k = len(table)
    pooled = [(sum(table[i]) + sum(r[i] for r in table)) / (2 * n) for i in range(k)]
    return _kappa_like(table, sum(p * p for p in pooled))


def weighted_kappa(table: Table, weights: Weights = "quadratic") -> float | None:
    """Cohen's weighted kappa over an ordinal scale (categories in scale order).

    ``1 - sum(w * observed) / sum(w * expected)`` with disagreement weights
    ``w[i][j] = |i - j| / (k - 1)`` (linear) or its square (quadratic).
    """
    n = _total(table)
    k = len(table)
    if n == 0 or k < 2:
        return None
    power = 1 if weights == "linear" else 2
    rows = [sum(r) / n for r in table]
    cols = [sum(r[j] for r in table) / n for j in range(k)]
    observed = expected = 0.0
    for i in range(k):
        for j in range(k):
            w = (abs(i - j) / (k - 1)) ** power
            observed += w * table[i][j] / n
            expected += w * rows[i] * cols[j]
    return None if expected <= 1e-12 else 1 - observed / expected


def bootstrap_interval(
    table: Table,
    statistic: Callable[[Table], float | None],
    *,
    resamples: int = 1000,
    seed: int = 20240531,
) -> Interval | None:
    """Percentile bootstrap 95 % interval of ``statistic`` over the table's items.

    Items are resampled with replacement (n draws from the table's cells with
    their counts as weights); resamples where the statistic is undefined are
    left out, and with more than half of them undefined there is no interval.
    Seeded: the same table gives the same interval.

    Args:
        table: The confusion table.
        statistic: Kappa, pi, weighted kappa...
        resamples: How many bootstrap tables.
        seed: The generator's seed.

    Returns:
        The interval, or ``None`` without items or with too many undefined resamples.
    """
    k = len(table)
    cells = [(i, j) for i in range(k) for j in range(k)]
    counts = [table[i][j] for i, j in cells]
    n = sum(counts)
    if n == 0:
        return None
    rng = random.Random(seed)  # noqa: S311 - resampling, not secrets
    values: list[float] = []
    for _ in range(resamples):
        drawn = [[0] * k for _ in range(k)]
        if n <= _EXACT_DRAWS:
            for index in rng.choices(range(len(cells)), weights=counts, k=n):
                i, j = cells[index]
                drawn[i][j] += 1
        else:  # a large run: a cell count at a time, not an item at a time
            for (i, j), c in zip(cells, _multinomial(rng, n, counts), strict=True):
                drawn[i][j] = c
        value = statistic(drawn)
        if value is not None:
            values.append(value)
    if len(values) * 2 < resamples:
        return None
    values.sort()
    return Interval(_quantile(values, 0.025), _quantile(values, 0.975))


_EXACT_DRAWS = 2_000
"""Up to this many items a resample draws item by item; above, cell counts are drawn
directly (the draw costs O(cells), not O(items): 100,000 judged samples would
otherwise take minutes per interval)."""


def _multinomial(rng: random.Random, n: int, weights: list[int]) -> list[int]:
    """Counts of ``n`` draws over cells with these weights (conditional binomials)."""
    out: list[int] = []
    left, rest = n, sum(weights)
    for w in weights:
        c = _binomial(rng, left, w / rest) if rest > 0 and left > 0 else 0
        out.append(c)
        left, rest = left - c, rest - w
    return out


def _binomial(rng: random.Random, n: int, p: float) -> int:
    """A binomial draw: waiting times for a small mean, the normal law for a large one.

    The normal approximation (mean and variance at least 30 here) is what a
    percentile bootstrap of thousands of items can afford; its error is far below
    the interval's own resampling noise.
    """
    if p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    if p > 0.5:
        return n - _binomial(rng, n, 1.0 - p)
    mean = n * p
    if mean < 30:
        log_q = math.log1p(-p)
        successes, position = 0, 0
        while True:
            position += int(math.log(1.0 - rng.random()) / log_q) + 1
            if position > n:
                return successes
            successes += 1
    draw = round(rng.gauss(mean, math.sqrt(mean * (1.0 - p))))
    return min(max(draw, 0), n)


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default method)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)
