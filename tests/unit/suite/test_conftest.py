"""The pytest glue seen from outside: option validation, node IDs, out-of-memory handling."""

import torch

from cases import all_cases


class _Defaults:
    """A pytest config where no option was given."""

    def getoption(self, name, default=None):
        return default


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

    class Item:
        def __init__(self, point):
            self.callspec = type("CallSpec", (), {"params": {"check_point": point}})()
            self.markers, self.user_properties, self.own_markers = [], [], []

        def add_marker(self, mark):
            self.markers.append(mark.name)

    items = [Item(CheckPoint(case, name, "cpu")) for name in ("fast", "sweep")]
    Recorder(_Defaults()).pytest_collection_modifyitems(None, items)
    assert "slow" not in items[0].markers and "slow" in items[1].markers


def test_variant_oracle_and_tolerance_override_the_case_and_inputs_are_shared():
    from cases.spec import Case, Tol, naive, optimized
    from plan import InputCache, VariantPoint

    made, truths = [], []

    def make(size, dtype, device, seed):
        made.append(seed)
        return (torch.arange(1.0, 4.0),)

    def doubled(x):
        truths.append("doubled")
        return 2 * x.double()

    def squared(x):
        truths.append("squared")
        return x.double() ** 2

    tight = {torch.float32: Tol(0, 0)}
    case = Case(
        id="x.y",
        tier=2,
        claim="",
        source="",
        make_inputs=make,
        oracle=doubled,
        variants={
            "a": naive(lambda x: 2 * x),
            "b": optimized(lambda x: x * x, oracle=squared, tolerance=tight),
        },
        tolerance={torch.float32: Tol(1e-5, 1e-5)},
        sizes={"quick": [{"n": 3}]},
    )
    a, b = (VariantPoint(case, v, {"n": 3}, torch.float32, "cpu") for v in ("a", "b"))
    assert a.tolerance == Tol(1e-5, 1e-5) and b.tolerance == Tol(0, 0)
    cache = InputCache(seed=0)
    (xa,), ta = cache.get(a)
    (xb,), tb = cache.get(b)
    assert xa is xb and made == [0], "variants of one point share one set of inputs"
    assert ta.tolist() == [2, 4, 6] and tb.tolist() == [1, 4, 9]
    cache.get(a)
    assert truths == ["doubled", "squared"], "each oracle is computed once per point"


def test_the_size_check_reads_the_budget_after_the_last_group_is_released(monkeypatch):
    """The size check frees the previous group's inputs and truths before it reads the device's
    free memory: on an H100 a size that fit was skipped while the last group's 64 GiB were held."""
    import plan
    from plan import InputCache, VariantPoint

    case = next(c for c in all_cases() if c.id == "distance.pairwise")
    small, big = ({"n": n, "m": n, "d": 8} for n in (4, 8))
    cache = InputCache(seed=0)
    cache.get(VariantPoint(case, "matmul", small, torch.float32, "cpu"))
    held_at_budget = []
    monkeypatch.setattr(
        plan.measure, "memory_budget", lambda d: held_at_budget.append(bool(cache._entries)) or 2**62
    )
    plan.oversize_reason(VariantPoint(case, "broadcast", big, torch.float32, "cpu"), cache)
    assert held_at_budget == [False]
    cache.get(VariantPoint(case, "broadcast", big, torch.float32, "cpu"))
    plan.oversize_reason(VariantPoint(case, "matmul", big, torch.float32, "cpu"), cache)  # same group
    assert held_at_budget == [False, True], "a group's own inputs stay for its next variant"


def test_a_launch_point_gets_markers_skip_and_replay_clock_from_its_requirements():
    from harness.measure import timing
    from plan import LaunchPoint
    from suite.recorder import Recorder

    class Item:
        fixturenames = ("launch_point", "benchmark")

        def __init__(self, point):
            self.callspec = type("CallSpec", (), {"params": {"launch_point": point}})()
            self.marks, self.user_properties, self.own_markers = [], [], []

        def add_marker(self, mark):
            self.marks.append(mark)

    # one CUDA point of the case: its CPU points stay out of the GPU run (no gpu marker)
    points = [
        LaunchPoint.on("parallel.dp_vs_ddp", "ddp", "cpu", 2),
        LaunchPoint.on("parallel.dp_vs_ddp", "ddp", "cpu", 4, slow=True),
        LaunchPoint.on("parallel.dp_vs_ddp", "ddp", "cuda", 2),
    ]
    items = [Item(p) for p in points]
    Recorder(_Defaults()).pytest_collection_modifyitems(None, items)
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


def test_only_cases_with_no_cuda_test_join_the_gpu_command():
    """A case no CUDA test covers (here: `data.recordio`, file I/O) joins `-m gpu` on the host's
    CPU; one that declares a CUDA test does not, even on a machine where none is collected."""
    import plan

    cpu_points = plan.variant_points("quick", ("cpu",)) + plan.check_points(("cpu",))
    cpu_only = plan.cpu_only_cases(cpu_points)
    assert "data.recordio" in cpu_only
    assert "distance.pairwise" not in cpu_only  # declares CUDA dtypes, none collected on a CPU run
    assert cpu_only <= {p.key.case for p in cpu_points}
    on_cuda = plan.variant_points("quick", ("cpu", "cuda"))
    assert not plan.cpu_only_cases(on_cuda) & {p.key.case for p in on_cuda if p.key.device == "cuda"}
