"""harness.measure.interleave: rounds alternate between the two sides and are planned, capped and floored."""

from __future__ import annotations

import itertools

import pytest

from harness.measure import interleave


def test_rounds_alternate_which_side_goes_first():
    order = []
    calls = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    _, first = interleave.run_rounds(calls, {"a": 1, "b": 1}, 4)
    assert first == ["a", "b", "a", "b"]
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]
    _, first = interleave.run_rounds(calls, {"a": 1, "b": 1}, 2, start=1)
    assert first == ["b", "a"]


def test_a_pair_on_a_counting_clock_gives_each_side_its_own_time():
    """A fake clock that advances 1 ms per `a` call and 3 ms per `b` call: each side's per-call
    seconds are exactly its own, round by round, whatever the order."""
    now = itertools.count()
    ticks = {"t": 0.0}

    def clock():
        next(now)
        return ticks["t"]

    def advance(ms):
        def call():
            ticks["t"] += ms * 1e-3

        return call

    paired = interleave.timed_pair(
        {"a": advance(1), "b": advance(3)}, cap_s=10.0, min_rounds=8, min_round_s=0.0, clock=clock
    )
    assert len(paired.seconds["a"]) == len(paired.seconds["b"]) == len(paired.first) >= 8
    assert paired.seconds["a"] == pytest.approx([1e-3] * len(paired.first))
    assert paired.seconds["b"] == pytest.approx([3e-3] * len(paired.first))
    assert paired.first[:4] == ["a", "b", "a", "b"]


def test_min_rounds_is_a_floor_even_for_slow_calls():
    """A call too slow for the cap still gets `min_rounds` paired rounds: a pair with fewer has no
    interval and could never be judged."""
    paired = interleave.timed_pair({"a": lambda: None, "b": lambda: None}, cap_s=1e-9, min_rounds=6)
    assert len(paired.first) == 6


def test_a_spent_time_budget_times_the_pair_at_its_floor():
    """--time-budget trims a point's cap down to 0 once the budget is spent: the pair is still
    timed, at `min_rounds` (it failed with a ValueError); a negative cap is a caller's error."""
    paired = interleave.timed_pair({"a": lambda: None, "b": lambda: None}, cap_s=0.0, min_rounds=6)
    assert len(paired.first) == 6
    with pytest.raises(ValueError, match="cap_s"):
        interleave.timed_pair({"a": lambda: None, "b": lambda: None}, cap_s=-1.0)


def test_a_pair_has_two_sides():
    with pytest.raises(ValueError, match="two sides"):
        interleave.timed_pair({"a": lambda: None}, cap_s=1.0)
