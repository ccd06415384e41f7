"""Precision-driven rounds (harness/contract/rounds.py): the interval of the median, the planned number of
rounds, the cap, and the flag for a point that missed the target."""

import math
import random
import statistics

import pytest

from harness.contract import rounds


def _sample(n, rel_sigma, seed=0, median=1e-3):
    rng = random.Random(seed)
    return [median * (1 + rng.gauss(0, rel_sigma)) for _ in range(n)]


def test_median_interval_covers_the_true_median_about_95_percent_of_the_time():
    covered = 0
    for seed in range(400):
        lo, _, hi = rounds.median_ci(_sample(40, 0.05, seed))
        covered += lo <= 1e-3 <= hi
    assert 0.90 <= covered / 400 <= 0.995, covered / 400  # the order-statistic interval is conservative


def test_quiet_points_stop_early_and_noisy_ones_get_more_rounds():
    quiet = rounds.plan(_sample(10, 0.002), 1, cap_s=1.0, min_rounds=5)
    noisy = rounds.plan(_sample(10, 0.10), 1, cap_s=1.0, min_rounds=5)
    assert quiet.rounds == 5 and not quiet.capped  # ±2% is already met: the minimum is enough
    assert noisy.rounds > 50 and not noisy.capped  # 1 ms rounds, 1 s cap: up to 1000 fit


def test_the_cap_bounds_rounds_but_not_the_minimum_of_calls_under_half_the_cap():
    slow_noisy = rounds.plan(_sample(10, 0.2, median=0.1), 1, cap_s=1.0, min_rounds=5)
    assert slow_noisy.rounds == 10 and slow_noisy.capped  # 0.1 s rounds: 10 fit in the 1 s cap
    held = rounds.plan(_sample(10, 0.2, median=0.3), 1, cap_s=1.0, min_rounds=5)
    assert held.rounds == 5  # 5 × 0.3 s overruns the cap, but not twice over: the minimum holds


def test_a_call_too_slow_for_the_minimum_gets_three_rounds_and_a_flag():
    slow = rounds.plan([4.0] * 3, 1, cap_s=1.0, min_rounds=5)
    assert slow.rounds == rounds.SLOW_ROUNDS == 3
    assert "too few for an interval" in rounds.precision_warning([4.0] * slow.rounds)
    starved = rounds.plan(_sample(10, 0.2, median=0.1), 1, cap_s=0.0, min_rounds=5)  # --time-budget
    assert starved.rounds == 3


def test_planned_rounds_reach_the_target_on_a_stationary_sample():
    pilot = _sample(10, 0.08, seed=1)
    planned = rounds.plan(pilot, 1, cap_s=100.0, min_rounds=5)
    after = _sample(planned.rounds, 0.08, seed=2)
    assert rounds.relative_halfwidth(after) < 1.5 * rounds.TARGET
    assert rounds.precision_warning(after, target=1.5 * rounds.TARGET) is None


def test_imprecise_points_are_flagged_with_the_width():
    flag = rounds.precision_warning(_sample(20, 0.3))
    assert flag and flag.startswith("imprecise: the median's 95% CI is ±") and "20 rounds" in flag
    assert rounds.precision_warning(_sample(3, 0.0)).startswith("imprecise: 3 rounds")
    assert rounds.precision_warning([1e-3] * 50) is None


def test_iterations_make_a_round_long_enough():
    assert rounds.iterations_for(20e-6, 0.5e-3) == 25
    assert rounds.iterations_for(5e-3, 0.5e-3) == 1
    assert statistics.median([rounds.iterations_for(1e-12, 1.0)]) == 10_000


class _CountingClock:
    """A clock that a call advances by a fixed time: what the pilot sees of a call of known cost."""

    def __init__(self, call_s: float):
        self.now, self.calls, self.call_s = 0.0, 0, call_s

    def __call__(self) -> float:
        return self.now

    def call(self) -> None:
        self.calls += 1
        self.now += self.call_s


def test_the_pilot_takes_the_rounds_the_cost_model_prices():
    # The policy is written once (rounds.pilot_plan) and priced by rounds.expected_plan: a fast call
    # gets its pilot rounds, a call too slow for the cap's pilot share (or a cap trimmed to nothing
    # by --time-budget) none, and the plan the same rounds of the same calls.
    for call_s, cap_s in ((1e-3, 1.0), (0.5, 1.0), (50e-6, 0.0)):
        clock = _CountingClock(call_s)
        plan = rounds.pilot_plan(clock.call, clock, rounds.MIN_ROUND_S["cpu"], cap_s, min_rounds=5)
        # A counting clock has no spread: the pilot's rounds are all alike.
        expected_pilot, expected = rounds.expected_plan(
            call_s, 0.0, min_round_s=rounds.MIN_ROUND_S["cpu"], cap_s=cap_s, min_rounds=5
        )
        pilot_calls = clock.calls - 1  # the first call sizes a round
        assert pilot_calls == expected_pilot * plan.iterations, (call_s, clock.calls, expected_pilot)
        assert (plan.iterations, plan.rounds) == (expected.iterations, expected.rounds), (call_s, cap_s)
        assert plan.rounds >= 3


def test_the_gap_fit_finds_the_intercept_and_the_slope_of_rounds_of_1_to_32_calls():
    """A clock whose every window holds 20 µs besides its calls (the launch gap after a reading
    that waited): the fit's intercept is the gap, its slope the call, and the rounds are sized
    from the slope, not from one call that carries the whole gap."""

    class GapClock(_CountingClock):
        def __call__(self) -> float:
            self.now += 20e-6  # the launch after each reading: 20 µs in every window
            return self.now

    clock = GapClock(33e-6)
    fit = rounds.fit_calls(clock.call, clock, first_call_s=53e-6)
    assert fit.calls == rounds.FIT_CALLS and clock.calls == rounds.fit_call_count(53e-6) == 3 * 63
    assert fit.gap_s == pytest.approx(20e-6, rel=1e-6) and fit.call_s == pytest.approx(33e-6, rel=1e-6)
    assert fit.per_call_s == fit.call_s and fit.info()["gap_s"] == fit.gap_s
    plan = rounds.pilot_plan(clock.call, clock, rounds.MIN_ROUND_S["cuda"], 1.0, min_rounds=5, fit=True)
    assert plan.iterations == math.ceil(2e-3 / 33e-6) and plan.info()["gap_s"] == pytest.approx(20e-6)
    # A call longer than half the window gets no fit: its gap weighs nothing beside it.
    assert rounds.fit_calls(clock.call, clock, first_call_s=6e-3) is None and rounds.fit_call_count(6e-3) == 0


def test_a_negative_intercept_from_noise_sizes_from_the_mean_not_a_slope_above_it():
    fit = rounds.CallFit(gap_s=-5e-6, call_s=40e-6, calls=(1, 32), seconds=(35e-6, 1.275e-3))
    assert fit.per_call_s == pytest.approx(1.275e-3 / 32)
