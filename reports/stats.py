"""Speedups and their confidence intervals from per-round timings.

Why the median: a round's time is the work plus non-negative interference (other processes, the
allocator, frequency changes), so the distribution has a long right tail; the median ignores the
tail that the mean chases. Why a percentile bootstrap: the ratio of two medians has no convenient
closed-form distribution, and resampling the rounds themselves makes no assumption about their
shape. Each sample is resampled independently (rounds of two variants are not paired: they ran at
different times).

The bootstrap is vectorised (one (B, n) index matrix per sample), and B is modest (1000 for the
report): the CI's end points move by well under 1% of the speedup between seeds at that B, which
is below the run-to-run drift of the timings themselves.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import bdtrc

LEVEL = 0.95
BOOT = 1000
MIN_ROUNDS = 3  # below this a bootstrap interval is meaningless: report NaN


def boot_medians(sample: np.ndarray, rng: np.random.Generator, boot: int = BOOT) -> np.ndarray:
    """``boot`` medians of resamples (with replacement) of ``sample``, without resampling.

    A resample's j-th smallest value is ≤ x₍ₖ₎ (the sample's k-th smallest) exactly when at least
    j of its n draws are, a Binomial(n, k/n) event (Efron 1982), so each bootstrap median is one
    inverse-CDF lookup instead of a median over n resampled values: the cost is O(n + boot·log n)
    whatever the round count (a fast variant has thousands of rounds). For even n the median
    averages the m-th and (m+1)-th order statistics; both are drawn with the same uniform, exact
    marginals coupled monotonically (the true pair is strongly, not perfectly, dependent; the
    tests check the interval against direct resampling).
    """
    ordered = np.sort(np.asarray(sample, dtype=float))
    n = ordered.size
    u = rng.random(boot)
    k = np.arange(1, n + 1) / n

    def order_stat(j: int) -> np.ndarray:  # draws of the resample's j-th smallest value
        cdf = bdtrc(j - 1, n, k)  # P(resample's j-th smallest <= x_(k)), increasing in k
        return ordered[np.minimum(np.searchsorted(cdf, u), n - 1)]

    if n % 2:
        return order_stat((n + 1) // 2)
    return 0.5 * (order_stat(n // 2) + order_stat(n // 2 + 1))


def interval(draws: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    alpha = (1 - level) / 2
    lo, hi = np.quantile(draws, [alpha, 1 - alpha])
    return float(lo), float(hi)


def ratio_of_medians(num, den, *, boot: int = BOOT, level: float = LEVEL, seed: int = 0):
    """median(num) / median(den) with its bootstrap CI: ``(point, low, high)``.

    For a speedup pass the slow variant's rounds as ``num`` and the fast one's as ``den``.
    """
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if num.size == 0 or den.size == 0:
        return math.nan, math.nan, math.nan
    point = float(np.median(num) / np.median(den))
    if num.size < MIN_ROUNDS or den.size < MIN_ROUNDS:
        return point, math.nan, math.nan
    rng = np.random.default_rng(seed)
    lo, hi = interval(boot_medians(num, rng, boot) / boot_medians(den, rng, boot), level)
    return point, lo, hi


def ratio_of_speedups(
    base_slow, base_fast, cur_slow, cur_fast, *, boot: int = 2000, level: float = LEVEL, seed: int = 0
):
    """(current speedup) / (baseline speedup), speedup = median(slow) / median(fast), with a
    bootstrap CI resampling each of the four samples independently: ``(point, low, high)``.

    Below 1: the optimized variant lost ground on the naive one since the baseline. Each run's
    speedup is computed within that run, so a machine that is uniformly slower today cancels out.
    """
    samples = [np.asarray(s, dtype=float) for s in (base_slow, base_fast, cur_slow, cur_fast)]
    if any(s.size == 0 for s in samples):
        return math.nan, math.nan, math.nan
    bs, bf, cs, cf = (float(np.median(s)) for s in samples)
    point = (cs / cf) / (bs / bf)
    if any(s.size < MIN_ROUNDS for s in samples):
        return point, math.nan, math.nan
    rng = np.random.default_rng(seed)
    b_bs, b_bf, b_cs, b_cf = (boot_medians(s, rng, boot) for s in samples)
    lo, hi = interval((b_cs / b_cf) / (b_bs / b_bf), level)
    return point, lo, hi
