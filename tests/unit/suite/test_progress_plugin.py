"""The pytest glue of the run's progress (suite/progress_plugin.py): a collected test is a launch
where its point is a launch point, and the lines the plan hands back go to the terminal."""

from __future__ import annotations

from types import SimpleNamespace

from plan import expand, launches
from suite import progress_plugin


def _item(point):
    return SimpleNamespace(callspec=SimpleNamespace(params={"point": point}))


def test_a_launch_is_told_from_the_other_points():
    launch = launches.points(next(iter(launches.LAUNCHES)), ["cpu"])[0]
    check = expand.check_points(["cpu"])[0]
    assert progress_plugin._launches(_item(launch))
    assert not progress_plugin._launches(_item(check))
    assert not progress_plugin._launches(SimpleNamespace())


def test_the_lines_are_written_where_a_terminal_reporter_is():
    written = []
    reporter = SimpleNamespace(ensure_newline=lambda: written.append("\n"), write_line=written.append)
    manager = SimpleNamespace(get_plugin=lambda name: reporter if name == "terminalreporter" else None)
    plugin = object.__new__(progress_plugin.ProgressPlugin)
    plugin.config = SimpleNamespace(pluginmanager=manager)
    plugin._write(["plan: 3 tests", "ETA 2 min"])
    assert written == ["\n", "plan: 3 tests", "ETA 2 min"]
    plugin._write([])
    assert len(written) == 3


def test_a_pair_and_its_replayed_sides_name_the_pair_whose_rounds_they_share_and_a_launch_does_not():
    import pytest

    from harness.measure.timing import ReplayClock

    def item(point, timer=None):
        mark = pytest.mark.benchmark(timer=timer).mark
        return SimpleNamespace(
            callspec=SimpleNamespace(params={"point": point}),
            get_closest_marker=lambda name: mark if name == "benchmark" else None,
        )

    pair = expand.pair_points("quick", ["cpu"])[0]
    side = pair.sides[0]
    launch = launches.points(next(iter(launches.LAUNCHES)), ["cpu"])[0]
    rounds = SimpleNamespace(side_pair=lambda point: pair if point == side else None)  # suite/pair_rounds.py
    assert progress_plugin._pair_rounds_of(item(pair), rounds) == pair.id
    assert progress_plugin._pair_rounds_of(item(side, ReplayClock()), rounds) == pair.id
    assert progress_plugin._pair_rounds_of(item(side), rounds) is None  # timed alone
    assert progress_plugin._pair_rounds_of(item(launch, ReplayClock()), rounds) is None
