"""A pair's rounds, timed once a run for the three tests that need them: ``test_pair`` records
them as the pair's timing, and each side's ``test_benchmark`` takes its own row (median, spread,
roofline) from its side of those rounds instead of timing the variant again. With each side
timed twice, alone and in its pair, five quiet quick runs took 633-703 s on a 2-core AMD EPYC;
timed once, three took 447-459 s there, with the same verdicts (docs/measured.md, "Measured").

Collection decides which rows come from a pair: a variant's warm point that is a side of a
selected pair whose requirements this machine meets, in a run that times. That benchmark's timer
is a `harness.measure.timing.ReplayClock` (pytest-benchmark's public way to take a timer; the
rounds are replayed through it). Whichever of the three tests runs first times the pair
(`harness.point.pair_benchmark`); the others read it. A pair that cannot be timed (a side too big
or wrong here) is remembered as such: its sides time their own rounds and replay them.

A pytest plugin object on the config (``config.stash[PAIR_ROUNDS]``); the ``pair_rounds``
fixture (suite/conftest.py) hands its tests `timing` and `side_rounds` bound to the run's input
cache and noise floor.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import pytest

import plan
from harness.contract import record
from harness.measure import timing
from harness.point import marks, pair_benchmark
from harness.point.variant_benchmark import NotMeasured, WrongAnswer
from suite import options
from suite.progress_plugin import progress

PAIR_ROUNDS = pytest.StashKey["PairRounds"]()


class Bound(NamedTuple):
    """What the tests call, the session's fixtures bound: `timing(pair_point)` and
    `side_rounds(variant_point)` of `PairRounds`."""

    timing: Callable
    side_rounds: Callable


class PairRounds:
    def __init__(self):
        self.pair_of: dict[str, plan.PairPoint] = {}  # a variant's warm point ID → its rows' pair
        self._timed: dict[str, record.PairTiming | str] = {}  # pair ID → its timing, or why none

    @pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
    def pytest_collection_modifyitems_after_selection(self, config, items):
        if config.getoption("benchmark_disable", False):
            return  # nothing is timed: every variant is called once, as before
        points = [(item, plan.point_of(item)) for item in items]
        pairs = [
            point for item, point in points if isinstance(point, plan.PairPoint) and not marks.of(point).skip
        ]
        self.pair_of = plan.timed_in_pairs(pairs)
        for item, point in points:
            if self.side_pair(point) is not None and "benchmark" in getattr(item, "fixturenames", ()):
                # First among the item's benchmark marks: pytest-benchmark and the test read the
                # closest one (a CUDA point's DeviceClock is the pair's clock already).
                item.add_marker(pytest.mark.benchmark(timer=timing.ReplayClock()), append=False)

    def side_pair(self, point) -> plan.PairPoint | None:
        """The pair whose rounds give `point` (a plan point) its row, or None."""
        if not isinstance(point, plan.VariantPoint) or point.timing != "warm":
            return None
        return self.pair_of.get(point.id)

    def timing(self, pair: plan.PairPoint, *, config, input_cache, noise_floor) -> record.PairTiming:
        """The pair's timing, timed by the first test that asks; NotMeasured (its reason) for a
        pair that cannot be timed here, WrongAnswer for one whose side answered wrong. Another
        error is raised and not remembered: the next test that asks tries again, and fails in its
        own name."""
        if pair.id not in self._timed:
            reason = None
            try:
                self._timed[pair.id] = pair_benchmark.run(
                    plan.pair_at(pair, input_cache),
                    # The whole pair gets one point's cap (--benchmark-max-time, trimmed by --time-budget).
                    cap_s=progress(config).round_cap_s(pair.id),
                    min_rounds=options.min_rounds(config),
                    noise_floor=lambda: noise_floor(pair.device),
                    oversize=lambda name: plan.oversize_reason(pair.side(name), input_cache),
                )
            except (NotMeasured, WrongAnswer) as exc:  # kept as text: the exception's frames hold tensors
                reason = (type(exc), str(exc))
            if reason is not None:
                self._timed[pair.id] = reason
        timed = self._timed[pair.id]
        if isinstance(timed, tuple):  # every test that asks says it: skipped, or red for a wrong side
            kind, why = timed
            raise kind(why)
        return timed

    def bound(self, **fixtures) -> Bound:
        return Bound(
            functools.partial(self.timing, **fixtures), functools.partial(self.side_rounds, **fixtures)
        )

    def side_rounds(self, point, **fixtures):
        """For a side's ``test_benchmark``: a callable giving (per-call seconds, info) of `point`'s
        side of its pair's rounds (NotMeasured where the pair cannot be timed), or None for a
        point whose row is timed alone."""
        pair = self.side_pair(point)
        if pair is None:
            return None

        def rounds():
            timed = self.timing(pair, **fixtures)
            name = point.variant_name
            seconds = timed.fast_s if name == pair.fast else timed.slow_s
            info = {
                "rounds_from_pair": pair.id,
                "paired_rounds": len(seconds),
                "iterations": timed.iterations.get(name, 1),
                "timer": timed.timer,
            }
            if name in timed.gap_s:  # the in-window gap its side's rounds were sized around
                info["gap_s"] = timed.gap_s[name]
            return list(seconds), info

        return rounds


def configure(config) -> None:
    config.stash[PAIR_ROUNDS] = PairRounds()
    config.pluginmanager.register(config.stash[PAIR_ROUNDS], "suite-pair-rounds")


def pair_rounds(config) -> PairRounds:
    return config.stash[PAIR_ROUNDS]
