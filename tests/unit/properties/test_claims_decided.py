"""Each group's claims are all decided (by a check, a variant or a rule node), and each check of the misc and
dist group calls a judge."""

from __future__ import annotations

import ast
import inspect

import pytest

from cases import get_case

CONV_DATA_IDS = (
    "conv.dilated",
    "conv.im2col",
    "conv.pooling",
    "conv.shapes",
    "conv.transposed",
    "jit.script_trace",
    "data.loading",
    "data.recordio",
)


@pytest.mark.parametrize("case_id", CONV_DATA_IDS)
def test_every_claim_of_the_conv_and_data_group_is_decided(case_id):
    case = get_case(case_id)
    assert case.claims and case.undecided_claims() == []


MISC_DIST_IDS = (
    "misc.memory_stats",
    "misc.sampling_ops",
    "misc.tensorboard",
    "dist.setup",
    "dist.sampler",
    "parallel.allreduce",
    "parallel.average_gradient",
    "parallel.dp_vs_ddp",
    "parallel.manual_dp",
)


@pytest.mark.parametrize("case_id", MISC_DIST_IDS)
def test_every_claim_of_the_misc_and_dist_group_is_decided(case_id):
    case = get_case(case_id)
    assert case.claims and case.undecided_claims() == []


@pytest.mark.parametrize("case_id", MISC_DIST_IDS)
def test_every_check_calls_a_judge(case_id):
    for name, check in get_case(case_id).checks.items():
        tree = ast.parse(inspect.getsource(check.fn).lstrip())
        called = {
            n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        assert any(c.startswith("judge_") for c in called), f"{case_id} check {name} calls no judge"


PRECISION_LAYOUT_IDS = ("layout.contiguous", "memory.checkpoint", "precision.amp", "precision.tf32")


@pytest.mark.parametrize("case_id", PRECISION_LAYOUT_IDS)
def test_every_claim_of_the_precision_and_layout_group_is_decided(case_id):
    assert get_case(case_id).undecided_claims() == []


# ---- claims: every claim of the group decided ----------------------------------------------------


def test_every_claim_of_the_rules_group_is_decided():
    from cases import get_case

    ids = (
        "autograd.custom_function autograd.hooks autograd.rules shape.ops gan.two_optimizers "
        "nn.containers nn.grid_sample nn.kd_vs_brute optim.param_groups optim.scheduler_resume "
        "state.save_load train.grad_accumulation train.modes"
    ).split()
    for case_id in ids:
        case = get_case(case_id)
        assert case.claims, case_id
        assert case.undecided_claims() == [], case_id
