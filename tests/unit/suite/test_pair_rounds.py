"""A pair's rounds timed once a run (suite/pair_rounds.py): collection gives each warm side of a
selected pair a ReplayClock, the first test that asks times the pair and the others read it, and a
side's row is its side of the pair's rounds, its variant still checked after them; a side whose
pair cannot be timed times its own rounds."""

from __future__ import annotations

import statistics
from types import SimpleNamespace

import pytest

import plan
from harness.measure import timing
from harness.point.variant_benchmark import NotMeasured
from plan import InputCache
from suite import pair_rounds as pair_rounds_module
from suite.pair_rounds import Bound, PairRounds
from suite.test_cases import test_benchmark as suite_benchmark
from tests.targets import doubling_point

_DISTANCE = [p for p in plan.pair_points("quick", ["cpu"]) if p.case.id == "distance.pairwise"]


class _Config:
    def __init__(self, **given):
        self.given = given

    def getoption(self, name, default=None):
        return self.given.get(name, default)


class _Item:
    """A collected test: its point as the parameter, the fixtures it takes, its marks in order."""

    def __init__(self, param, point, fixturenames=()):
        self.callspec = SimpleNamespace(params={param: point})
        self.fixturenames = fixturenames
        self.marks = []

    def add_marker(self, mark, append=True):
        self.marks.append(mark) if append else self.marks.insert(0, mark)

    def timer(self):
        found = [m.kwargs.get("timer") for m in self.marks if m.name == "benchmark"]
        return found[0] if found else None


def _benchmark_item(point):
    return _Item("variant_point", point, ("variant_point", "benchmark"))


def test_a_warm_side_of_a_selected_pair_gets_a_replay_clock_and_nothing_else_does():
    pair = _DISTANCE[0]
    fast, slow = pair.sides
    other = plan.VariantPoint(pair.case, "cdist_mm", pair.size, pair.dtype, "cpu")
    unpaired_size = plan.VariantPoint(pair.case, pair.fast, {"n": 3, "m": 3, "d": 2}, pair.dtype, "cpu")
    items = [_benchmark_item(p) for p in (fast, slow, other, unpaired_size)]
    check = _Item("variant_point", fast, ("variant_point",))  # test_check: not timed
    PairRounds().pytest_collection_modifyitems_after_selection(
        _Config(), [*items, check, _Item("pair_point", pair, ("pair_point",))]
    )
    assert [type(i.timer()).__name__ for i in items] == ["ReplayClock", "ReplayClock", "NoneType", "NoneType"]
    assert items[0].timer() is not items[1].timer(), "one clock per item: each replays its own rounds"
    assert check.timer() is None


def test_no_replay_clock_where_the_pair_is_not_selected_or_nothing_is_timed():
    pair = _DISTANCE[0]
    alone = [_benchmark_item(p) for p in pair.sides]
    PairRounds().pytest_collection_modifyitems_after_selection(_Config(), alone)  # -k test_benchmark
    disabled = [_benchmark_item(p) for p in pair.sides]
    PairRounds().pytest_collection_modifyitems_after_selection(
        _Config(benchmark_disable=True), [*disabled, _Item("pair_point", pair, ("pair_point",))]
    )
    assert all(i.timer() is None for i in alone + disabled)


def test_the_replay_clock_comes_first_before_a_clock_added_earlier():
    pair = _DISTANCE[0]
    item = _benchmark_item(pair.sides[0])
    item.add_marker(pytest.mark.benchmark(timer="an earlier clock"))
    PairRounds().pytest_collection_modifyitems_after_selection(
        _Config(), [item, _Item("pair_point", pair, ("pair_point",))]
    )
    assert isinstance(item.timer(), timing.ReplayClock)


def _timing(fast_s, slow_s, gap_s=None):
    return SimpleNamespace(
        fast_s=tuple(fast_s),
        slow_s=tuple(slow_s),
        iterations={"matmul": 4},
        timer="perf_counter",
        gap_s=gap_s or {},
    )


@pytest.fixture
def measured(monkeypatch):
    """pair_benchmark.run replaced by `answers` taken in turn; the calls it got, counted."""
    calls, answers = [], []

    def run(pair, **kwargs):
        calls.append(pair.key)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(pair_rounds_module.pair_benchmark, "run", run)
    monkeypatch.setattr(
        pair_rounds_module, "progress", lambda config: SimpleNamespace(round_cap_s=lambda i: 1.0)
    )
    monkeypatch.setattr(pair_rounds_module.options, "min_rounds", lambda config: 5)
    return calls, answers


def _rounds_for(pair):
    rounds = PairRounds()
    rounds.pytest_collection_modifyitems_after_selection(
        _Config(), [_Item("pair_point", pair, ("pair_point",))]
    )
    return rounds.bound(config=None, input_cache=InputCache(0), noise_floor=lambda device: None)


def test_the_first_test_that_asks_times_the_pair_and_the_others_read_it(measured):
    calls, answers = measured
    pair = _DISTANCE[0]
    answers.append(_timing([1.0, 2.0], [30.0, 40.0], gap_s={pair.fast: 2e-5}))
    bound = _rounds_for(pair)
    fast_rows = bound.side_rounds(pair.side(pair.fast))()
    slow_rows = bound.side_rounds(pair.side(pair.slow))()
    assert bound.timing(pair) is bound.timing(pair) and len(calls) == 1
    assert fast_rows[0] == [1.0, 2.0] and slow_rows[0] == [30.0, 40.0]
    assert fast_rows[1]["rounds_from_pair"] == pair.id and fast_rows[1]["iterations"] == 4
    assert slow_rows[1]["iterations"] == 1  # the side the record gives no count for: one call a round
    # A side's row carries the in-window gap its pair's fit measured (on a device; none on the CPU).
    assert fast_rows[1]["gap_s"] == 2e-5 and "gap_s" not in slow_rows[1]


def test_a_pair_that_cannot_be_timed_is_remembered_and_another_error_is_not(measured):
    calls, answers = measured
    pair = _DISTANCE[0]
    answers.extend([RuntimeError("a bug"), NotMeasured("broadcast: too big here")])
    bound = _rounds_for(pair)
    with pytest.raises(RuntimeError):
        bound.timing(pair)
    for _ in range(2):
        with pytest.raises(NotMeasured, match="too big here"):
            bound.timing(pair)
    assert len(calls) == 2


# ---- a side's row from its pair's rounds (suite/test_cases.py::test_benchmark) ----------------


class _Benchmark:
    """pytest-benchmark's fixture as far as the harness uses it, timed by its timer (a ReplayClock)
    as pytest-benchmark's pedantic mode times a round; enabled whatever the session's options."""

    disabled = False

    def __init__(self, timer):
        self.timer, self.extra_info, self.group, self.has_error, self.stats = timer, {}, None, False, None

    def pedantic(self, target, setup=None, rounds=1, iterations=1):
        data = []
        for _ in range(rounds):
            if setup is not None:
                setup()
            t0 = self.timer()
            target()
            data.append(self.timer() - t0)
        self.stats = SimpleNamespace(
            stats=SimpleNamespace(data=data, median=statistics.median(data), rounds=rounds),
            iterations=iterations,
        )


class _Request:
    def __init__(self, clock):
        self.node = SimpleNamespace(
            get_closest_marker=lambda name: (
                pytest.mark.benchmark(timer=clock).mark if name == "benchmark" else None
            )
        )
        # A synthetic case is in no `--faulted-pages` scope; "none" says so without asking the plan.
        options = {"--faulted-pages": "none", "--profile": "quick"}
        self.config = SimpleNamespace(getoption=lambda name, default=None: options.get(name, default))


PAIR_SECONDS = [1e-3 * (1 + i % 3) for i in range(20)]


def _side(seconds=None):
    def rounds():
        if seconds is None:
            raise NotMeasured("the other side is too big here")
        return list(seconds), {
            "rounds_from_pair": "synthetic.pair-a-vs-v-n64-float32-cpu",
            "timer": "perf_counter",
        }

    return Bound(timing=None, side_rounds=lambda point: rounds)


@pytest.fixture
def run_side(monkeypatch):
    """test_benchmark on a synthetic doubling variant, its row replayed through a ReplayClock."""
    monkeypatch.setattr(
        "suite.test_cases.progress",
        lambda config: SimpleNamespace(
            max_time_s=0.2, round_cap_s=lambda i: 0.2, spent_in_rounds=lambda s: None
        ),
    )

    def run(fn, seconds):
        clock = timing.ReplayClock()
        benchmark = _Benchmark(clock)
        suite_benchmark(
            doubling_point(fn, "synthetic.pair"),
            InputCache(0),
            benchmark,
            lambda d: {},
            _side(seconds),
            _Request(clock),
        )
        return benchmark

    return run


def test_a_side_takes_its_row_from_the_pairs_rounds(run_side):
    benchmark = run_side(lambda x: 2 * x, PAIR_SECONDS)
    assert benchmark.stats.stats.data == PAIR_SECONDS
    assert benchmark.extra_info["rounds_from_pair"] == "synthetic.pair-a-vs-v-n64-float32-cpu"
    assert "timer" not in benchmark.extra_info  # a CPU row's clock is the host's, as a solo row's


def test_a_side_wrong_once_warm_fails_after_its_replayed_rounds(run_side):
    calls = []

    def variant(x):
        calls.append(None)
        return 2 * x if len(calls) == 1 else 2 * x + 1e-3

    with pytest.raises(pytest.fail.Exception, match="outside tolerance.*after the timed calls"):
        run_side(variant, PAIR_SECONDS)
    assert len(calls) == 2, "checked on its first call, and on one more after the pair's rounds"


def test_a_side_whose_pair_cannot_be_timed_times_its_own_rounds(run_side):
    benchmark = run_side(lambda x: 2 * x, None)
    assert "rounds_from_pair" not in benchmark.extra_info
    assert benchmark.stats.stats.rounds == benchmark.extra_info["rounds_planned"] >= 5
    assert benchmark.stats.stats.data != PAIR_SECONDS and min(benchmark.stats.stats.data) > 0
