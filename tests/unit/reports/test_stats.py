"""Speedups and their intervals from per-round timings (reports/stats.py): the ratio of medians
with a bootstrap interval that covers it, no interval from too few rounds, and the ratio of two
runs' speedups where a uniformly slower machine cancels out."""

from __future__ import annotations

import math

import numpy as np

from reports import stats


def test_the_ratio_of_medians_sits_inside_its_interval():
    rng = np.random.default_rng(1)
    slow = 2.0 + rng.exponential(0.05, 200)
    fast = 1.0 + rng.exponential(0.05, 200)
    point, lo, hi = stats.ratio_of_medians(slow, fast)
    assert point == float(np.median(slow) / np.median(fast))
    assert lo < point < hi and 1.8 < lo and hi < 2.2


def test_too_few_rounds_give_a_point_and_no_interval():
    point, lo, hi = stats.ratio_of_medians([2.0, 2.0], [1.0, 1.0])
    assert point == 2.0 and math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(v) for v in stats.ratio_of_medians([], [1.0]))


def test_a_uniformly_slower_machine_cancels_out_of_the_ratio_of_speedups():
    rng = np.random.default_rng(2)
    slow, fast = 2.0 + rng.exponential(0.02, 100), 1.0 + rng.exponential(0.01, 100)
    point, lo, hi = stats.ratio_of_speedups(slow, fast, 3 * slow, 3 * fast)
    assert point == 1.0 and lo <= 1.0 <= hi
    point, _, hi = stats.ratio_of_speedups(slow, fast, slow, 1.5 * fast)  # the fast way lost ground
    assert point < 0.7 and hi < 1.0
