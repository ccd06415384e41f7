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


def _cold_after_the_other(ms: dict, cold_ms: float):
    """Fake sides on a fake clock: a call takes its side's `ms`, plus `cold_ms` when the call
    before it was the other side's (the caches it left), as distance.pairwise's matmul after the
    broadcast did (0.97 against 0.40 ms)."""
    state = {"t": 0.0, "last": None}

    def side(name):
        def call():
            state["t"] += (ms[name] + (cold_ms if state["last"] not in (None, name) else 0.0)) * 1e-3
            state["last"] = name

        return call

    return {name: side(name) for name in ms}, lambda: state["t"]


def test_a_short_sides_block_starts_with_an_untimed_call_so_it_is_timed_warm():
    calls, clock = _cold_after_the_other({"fast": 0.4, "slow": 70.0}, cold_ms=0.6)
    paired = interleave.timed_pair(calls, cap_s=10.0, min_rounds=8, clock=clock)
    assert paired.rewarmed == ("fast",), "the 70 ms side is not called twice a round"
    assert paired.seconds["fast"] == pytest.approx([0.4e-3] * len(paired.first))
    # the slow side pays the refill after the fast side's block, in the rounds it goes second
    assert {round(s * 1e4) for s in paired.seconds["slow"]} == {700, 706}


def test_without_the_untimed_call_the_fast_side_would_be_timed_cold():
    """The control of the test above: the same sides in rounds that start each block cold."""
    calls, clock = _cold_after_the_other({"fast": 0.4, "slow": 70.0}, cold_ms=0.6)
    seconds, _ = interleave.run_rounds(calls, {"fast": 1, "slow": 1}, 6, clock)
    assert {round(s * 1e4) for s in seconds["fast"][1:]} == {4, 10}  # cold in every round it goes second


def test_the_cheap_sides_block_lasts_a_tenth_of_the_others():
    """A round costs at most BALANCE more than the slow side alone, and the cheap side's row
    averages several calls a round rather than one."""
    calls, clock = _cold_after_the_other({"fast": 0.4, "slow": 70.0}, cold_ms=0.0)
    paired = interleave.timed_pair(calls, cap_s=10.0, min_rounds=8, clock=clock)
    assert paired.iterations == {"fast": 18, "slow": 1}  # ⌈0.1 · 70 / 0.4⌉
