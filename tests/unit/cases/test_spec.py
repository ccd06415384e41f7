"""cases/spec.py: a declaration refuses what cannot be measured (a bound that is negative or mixes
norm- and element-wise terms, variants without inputs or truth, a dtype without a bound, a profile
that does not exist), and labels sizes and dtypes the way test IDs and CSV rows read them."""

from __future__ import annotations

import pytest
import torch

from cases.spec import (
    UNIT_ROUNDOFF,
    Case,
    Comparison,
    InputFamily,
    Role,
    Tol,
    dtype_name,
    library,
    naive,
    optimized,
    size_label,
    tolerance_at,
)


def _inputs(size, dtype, device, seed):
    return (torch.ones(size["n"], dtype=dtype),)


def _case(**kw) -> Case:
    fields = {
        "id": "x.y",
        "tier": 1,
        "claim": "c",
        "source": "003",
        "make_inputs": _inputs,
        "variants": {"a": naive(lambda x: x), "b": optimized(lambda x: x)},
        "oracle": lambda x: x.double(),
        "tolerance": {torch.float32: Tol(rtol=1e-6)},
        "sizes": {"quick": [{"n": 4, "d": 2}]},
        "context_pairs": (("b", "a"),),
    }
    return Case(**{**fields, **kw})


def test_a_bound_is_never_negative_nor_both_norm_and_element_wise():
    with pytest.raises(ValueError, match="negative"):
        Tol(rtol=-1e-6)
    with pytest.raises(ValueError, match="norm-wise"):
        Tol(rtol=1e-6, norm=1e-3)
    assert str(Tol(norm=1e-3)) == "||got - truth|| <= 0.001*||truth||"
    assert str(Tol(rtol=1e-6, floor=2e-7)) == "rtol=1e-06 atol=0 floor=2e-07*max|truth|"


def test_a_bound_declared_as_a_function_of_the_size_is_resolved_at_each_size():
    grows = lambda size: Tol(rtol=UNIT_ROUNDOFF[torch.float32] * size["n"])  # noqa: E731
    assert tolerance_at(grows, {"n": 8}).rtol == 8 * 2.0**-24
    fixed = Tol(atol=1.0)
    assert tolerance_at(fixed, {"n": 8}) is fixed


def test_the_role_helpers_give_their_role():
    assert [v(len).role for v in (naive, optimized, library)] == [Role.NAIVE, Role.OPTIMIZED, Role.LIBRARY]


def test_a_valid_case_names_its_axis_and_sizes():
    case = _case()
    assert (
        case.x_axis == "n" and case.sizes_for("quick") == [{"n": 4, "d": 2}] and case.sizes_for("full") == ()
    )
    assert list(case.comparisons()) == [""]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"oracle": None}, "need make_inputs and an oracle"),
        ({"sizes": {"huge": [{"n": 1}]}}, "unknown profile"),
        ({"dtypes": {"cpu": (torch.float32, torch.float16)}}, "no tolerance for"),
        ({"context_pairs": (("b", "c"),)}, "context pair"),
        ({"input_families": {"odd": InputFamily(variants=("z",))}}, "input family 'odd'"),
    ],
)
def test_a_case_that_cannot_be_measured_is_refused(change, message):
    with pytest.raises(ValueError, match=message):
        _case(**change)


def test_a_part_is_a_comparison_of_its_own():
    part = Comparison(
        make_inputs=_inputs,
        variants={"c": library(lambda x: x)},
        oracle=lambda x: x.double(),
        tolerance={torch.float32: Tol()},
    )
    assert list(_case(parts={"copy": part}).comparisons()) == ["", "copy"]


def test_labels():
    assert size_label({"n": 1024, "d": 256}) == "n1024-d256"
    assert dtype_name(torch.bfloat16) == "bfloat16"
