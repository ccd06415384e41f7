"""harness.contract.gain: the one policy that decides whether a gain is real."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.contract import gain

Gain = gain.Gain


@pytest.mark.parametrize(
    "low, high, band, expected",
    [
        (1.06, 1.20, 0.05, Gain.FASTER),  # the whole interval above 1.05
        (1.04, 1.20, 0.05, Gain.UNCLEAR),  # starts inside the band: cannot tell
        (0.97, 1.03, 0.05, Gain.SAME),  # inside [1/1.05, 1.05]
        (0.80, 0.90, 0.05, Gain.SLOWER),
        (0.90, 1.10, 0.05, Gain.UNCLEAR),  # wider than the band on both sides
        (1.06, 1.20, 0.25, Gain.SAME),  # a noisy machine's band swallows a small gain
        (1.10, 1.40, 0.25, Gain.UNCLEAR),
        (0.85, 1.20, 0.25, Gain.SAME),
    ],
)
def test_classify_against_the_band(low, high, band, expected):
    assert gain.classify(gain.Ratio(math.sqrt(low * high), low, high), band) is expected


def test_no_interval_is_never_a_gain():
    assert gain.classify(gain.Ratio(300.0, math.nan, math.nan)) is Gain.UNCLEAR


def test_the_band_is_the_noise_floor_but_never_below_five_percent():
    assert gain.delta(None) == gain.delta(0.01) == 0.05
    assert gain.delta(0.12) == 0.12
    assert gain.delta(math.nan) == 0.05
    with pytest.raises(ValueError):
        gain.classify(gain.Ratio(1, 1, 1), -0.1)


def test_paired_ratio_cancels_what_both_sides_of_a_round_shared():
    """Each round's machine speed varies 10× (another job comes and goes); the slow side is always
    2× the fast one in the same round. Paired, the ratio is exactly 2; unpaired medians of the
    same numbers, shuffled apart, are not."""
    rng = np.random.default_rng(1)
    machine = np.exp(rng.uniform(0, math.log(10), 200))
    fast, slow = 1e-3 * machine, 2e-3 * machine
    ratio = gain.paired_ratio(slow, fast)
    assert (
        ratio.point == pytest.approx(2.0)
        and ratio.low == pytest.approx(2.0)
        and ratio.high == pytest.approx(2.0)
    )
    assert ratio.n == 200


def test_paired_ratio_interval_covers_and_needs_rounds():
    rng = np.random.default_rng(2)
    fast = 1e-3 * np.exp(rng.normal(0, 0.05, 400))
    slow = 1.3e-3 * np.exp(rng.normal(0, 0.05, 400))
    ratio = gain.paired_ratio(slow, fast)
    assert ratio.low < 1.3 < ratio.high and ratio.high - ratio.low < 0.03
    few = gain.paired_ratio(slow[:5], fast[:5])
    assert math.isnan(few.low) and few.n == 5


@pytest.mark.parametrize("bad", [[0.0] * 6, [math.nan] * 6, [-1e-3] * 6, [math.inf] * 6])
def test_impossible_times_are_refused(bad):
    with pytest.raises(ValueError, match="positive and finite"):
        gain.paired_ratio(bad, [1e-3] * 6)


def test_unequal_sides_are_refused():
    with pytest.raises(ValueError, match="equal-length"):
        gain.paired_ratio([1e-3] * 6, [1e-3] * 7)


def test_noise_floor_of_an_identical_pair_is_small_and_of_a_noisy_one_large():
    rng = np.random.default_rng(3)
    base = 1e-3 * np.exp(rng.normal(0, 0.2, 300))  # the machine, shared by both sides of a round
    quiet_a = base * np.exp(rng.normal(0, 0.005, 300))
    quiet_b = base * np.exp(rng.normal(0, 0.005, 300))
    assert gain.noise_floor(quiet_a, quiet_b) < 0.01
    noisy_a = base * np.exp(rng.normal(0, 0.5, 300))
    noisy_b = base * np.exp(rng.normal(0, 0.5, 300))
    assert gain.noise_floor(noisy_a, noisy_b) > 0.05
