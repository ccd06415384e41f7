"""The suite's conftest seen from outside (suite/conftest.py): a variant's oracle and tolerance over its
case's with the inputs shared, the size check reading the budget after the last input group is released,
and which cases join the GPU command."""

import torch

from cases import all_cases


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
        context_pairs=(("b", "a"),),
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
