"""The plan expanded into points (plan/expand.py): a variant point per case × variant × size ×
dtype × device, CUDA points once per timing mode (a compiled twin in the first only), the points a
suite test takes by its arguments, and the point a collected item was parametrised with."""

from __future__ import annotations

from types import SimpleNamespace

from plan import expand


def test_variant_points_cover_the_selected_devices_and_no_point_twice():
    points = expand.variant_points("quick", ["cpu"])
    assert points and {p.device for p in points} == {"cpu"}
    ids = [p.id for p in points]
    assert len(ids) == len(set(ids))


def test_timing_modes_multiply_cuda_points_only_and_a_twin_takes_the_first():
    points = expand.variant_points("quick", ["cpu", "cuda"])
    modes = ("warm", "cold_l2")
    timed = expand.with_timing_modes(points, modes)
    cpu = [p for p in points if p.device == "cpu"]
    twins = [p for p in points if p.device == "cuda" and p.variant.role.value == "compiled"]
    others = [p for p in points if p.device == "cuda" and p.variant.role.value != "compiled"]
    assert len(timed) == len(cpu) + len(twins) + 2 * len(others)
    assert {p.timing for p in timed if p.device == "cpu"} == {"warm"}
    assert {p.timing for p in timed if p.device == "cuda"} == set(modes)


def test_a_test_gets_the_points_of_the_arguments_it_takes():
    got = expand.points_by_argument(
        ("check_point",), profile="quick", devices=["cpu"], compile_scope="auto", timing_modes=("warm",)
    )
    assert list(got) == ["check_point"]
    names = [p.key.case + "::" + p.key.name for p in got["check_point"]]
    assert names == [p.key.case + "::" + p.key.name for p in expand.check_points(["cpu"])] and names


def test_point_of_an_item_is_its_parameter_with_requires_and_a_key():
    point = expand.check_points(["cpu"])[0]
    item = SimpleNamespace(callspec=SimpleNamespace(params={"x": 1, "check_point": point}))
    assert expand.point_of(item) is point
    assert expand.point_of(SimpleNamespace()) is None


def test_each_side_of_a_pair_takes_its_rows_from_the_first_pair_it_is_in():
    pairs = expand.pair_points("quick", ["cpu"])
    sides = expand.timed_in_pairs(pairs)
    tf32 = [p for p in pairs if p.case.id == "precision.tf32" and p.slow == "matmul.highest"]
    assert len({p.fast for p in tf32}) == 2, "matmul.highest is the slow side of two pairs"
    assert sides[tf32[0].side("matmul.highest").id] is tf32[0]
    assert set(sides) == {side.id for p in pairs for side in p.sides}
    assert all(s.endswith("-cpu") for s in sides), "warm points' IDs: no timing mode after the device"


def test_a_variant_check_is_left_to_its_benchmark_only_where_both_are_selected():
    points = expand.variant_points("quick", ["cpu", "cuda"])
    cuda = next(p for p in points if p.device == "cuda" and p.variant.role.value != "compiled")
    cold = expand.with_timing_modes([cuda], ("cold_l2",))[0]
    alone, both, other = points[0], points[1], points[2]
    tests = [
        ("test_check", alone),  # its benchmark not selected (-k test_check): kept
        ("test_check", both),
        ("test_benchmark", both),
        ("test_benchmark", other),
        ("test_check", cuda),  # benchmarked in another timing mode only: still the same variant's call
        ("test_benchmark", cold),
        ("test_rule", expand.check_points(["cpu"])[0]),
    ]
    assert expand.checks_run_by_benchmarks(tests) == [1, 4]
    assert expand.checks_run_by_benchmarks([("test_check", both)]) == []
