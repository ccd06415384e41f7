"""The run's record, the pytest glue (suite/recorder.py): each collected point gets its markers, skips and
replay clock from its requirements, probed only for the points the run selected."""

import torch

from cases import all_cases


class _Defaults:
    """A pytest config where no option was given."""

    def getoption(self, name, default=None):
        return default


class _Item:
    """A collected test as the recorder sees it: its point as the parameter `param`, the fixtures it
    takes, and the marks added to it in order (``append=False`` puts one first, as pytest does)."""

    def __init__(self, param, point, fixturenames=()):
        self.callspec = type("CallSpec", (), {"params": {param: point}})()
        self.fixturenames = fixturenames
        self.marks, self.user_properties, self.own_markers = [], [], []

    def add_marker(self, mark, append=True):
        self.marks.append(mark) if append else self.marks.insert(0, mark)


def test_a_slow_check_gets_the_slow_marker():
    from cases.spec import Case, Check
    from plan import CheckPoint
    from suite.recorder import Recorder

    case = Case(
        id="x.y",
        tier=3,
        claim="",
        source="",
        checks={"fast": Check(lambda d: None), "sweep": Check(lambda d: None, slow=True)},
    )

    items = [_Item("check_point", CheckPoint(case, name, "cpu")) for name in ("fast", "sweep")]
    Recorder(_Defaults()).pytest_collection_modifyitems(None, items)
    names = [{m.name for m in item.marks} for item in items]
    assert "slow" not in names[0] and "slow" in names[1]


def test_a_launch_point_gets_markers_skip_and_replay_clock_from_its_requirements():
    from harness.measure import timing
    from plan import LaunchPoint
    from suite.recorder import Recorder

    # one CUDA point of the case: its CPU points stay out of the GPU run (no gpu marker)
    points = [
        LaunchPoint.on("parallel.dp_vs_ddp", "ddp", "cpu", 2),
        LaunchPoint.on("parallel.dp_vs_ddp", "ddp", "cpu", 4, slow=True),
        LaunchPoint.on("parallel.dp_vs_ddp", "ddp", "cuda", 2),
    ]
    items = [_Item("launch_point", p, ("launch_point", "benchmark")) for p in points]
    recorder = Recorder(_Defaults())
    recorder.pytest_collection_modifyitems(None, items)
    recorder.pytest_collection_modifyitems_after_selection(None, items)
    names = [{m.name for m in item.marks} for item in items]
    assert names[0] == {"distributed", "benchmark"} and names[1] == {"distributed", "slow", "benchmark"}
    assert {"gpu", "multigpu", "distributed"} <= names[2]
    clock = next(m for m in items[0].marks if m.name == "benchmark").kwargs["timer"]
    assert isinstance(clock, timing.ReplayClock)
    assert [p.id for p in points] == [
        "parallel.dp_vs_ddp-ddp-w2-cpu",
        "parallel.dp_vs_ddp-ddp-w4-cpu",
        "parallel.dp_vs_ddp-ddp-w2-cuda",
    ]
    assert LaunchPoint.on("parallel.allreduce", "", "cpu", 2).id == "parallel.allreduce-w2-cpu"
    assert points[2].requires == ("distributed", "gpus>=2", "nccl")
    if not torch.cuda.is_available():
        skip = next(m for m in items[2].marks if m.name == "skip")
        assert skip.kwargs["reason"] == "CUDA not available" and "benchmark" not in names[2]


def test_requirements_are_probed_only_for_the_points_selected(monkeypatch):
    """The markers `-m` selects by come from the declarations alone; a requirement's probe (torch.compile's
    takes seconds) runs after `-k`/`-m` have deselected, for the points left."""
    from harness.machine import requirements
    from plan import variant_points
    from suite.recorder import Recorder

    probed = []
    monkeypatch.setattr(requirements, "unmet", lambda requires, device: probed.append(device) or None)
    points = variant_points("quick", ("cpu", "cuda"))[:40]
    items = [_Item("variant_point", p, ("variant_point", "benchmark")) for p in points]
    recorder = Recorder(_Defaults())
    recorder.pytest_collection_modifyitems(None, items)
    assert probed == [] and any(item.marks for item in items)
    selected = items[:3]  # what -k left
    recorder.pytest_collection_modifyitems_after_selection(None, selected)
    assert len(probed) == len(selected)


class _Report:
    """pytest's report of a test's call phase, as the recorder reads it."""

    def __init__(self, nodeid, point, outcome="passed"):
        self.nodeid, self.when, self.outcome, self.longrepr = nodeid, "call", outcome, None
        self.user_properties = [("point", point)]
        self.passed = outcome == "passed"


class _Options(_Defaults):
    def getoption(self, name, default=None):
        return {"--profile": "quick", "--device": "cpu", "--seed": 0}.get(name, default)


def test_the_json_keys_hold_every_outcome_reported_so_far_each_serialised_once(monkeypatch):
    """The journal asks for the run's own keys after every test: each row is made once, and the
    keys given out earlier are not changed by later reports."""
    from harness.contract import record
    from plan import CheckPoint
    from suite.recorder import Recorder

    recorder = Recorder(_Options())
    point = CheckPoint(all_cases()[0], next(iter(all_cases()[0].checks or {"x": None})), "cpu")
    made = []
    to_data = record.Outcome.to_data
    monkeypatch.setattr(record.Outcome, "to_data", lambda self: made.append(self) or to_data(self))
    first: dict = {}
    recorder.pytest_benchmark_update_json(recorder.config, [], first)
    for i in range(3):
        recorder.pytest_runtest_logreport(_Report(f"t::test_rule[{i}]", point.key.to_data()))
        keys: dict = {}
        recorder.pytest_benchmark_update_json(recorder.config, [], keys)
    assert first["outcomes"] == [] and len(made) == 3, "each outcome serialised once, when reported"
    assert [o["nodeid"] for o in keys["outcomes"]] == [f"t::test_rule[{i}]" for i in range(3)]
    assert keys["outcomes"] == [o.to_data() for o in recorder.outcomes]
    assert keys["cases"] is first["cases"] and set(keys["cases"]) >= {c.id for c in all_cases()}
