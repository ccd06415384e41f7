"""Markers and skips from a point's requirements (harness/point/marks.py): under the TF32 override
variables the CUDA points they would turn red are `not measured` (issue 37 item 5)."""

from __future__ import annotations

import pytest
import torch

from cases import attention, distance, layout, memory, sparse
from cases.conv import dilated, im2col, pooling, shapes, transposed
from cases.parallel import dp_vs_ddp
from cases.precision import tf32
from cases.rnn import hidden_detach
from harness.point import marks
from plan import CheckPoint, VariantPoint

NVIDIA, TORCH = "NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"


@pytest.fixture
def env(monkeypatch):
    """A clean environment for the two variables, and a CUDA device as requirements.unmet sees it."""
    monkeypatch.delenv(NVIDIA, raising=False)
    monkeypatch.delenv(TORCH, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    return monkeypatch


def _points(case, device):
    variants = [
        VariantPoint(case, name, case.sizes["quick"][0], torch.float32, device) for name in case.variants
    ]
    checks = [
        CheckPoint(case, name, device) for name, check in case.checks.items() if device in check.devices
    ]
    return variants + checks


@pytest.mark.parametrize("name, value", [(NVIDIA, "0"), (TORCH, "1")])
def test_precision_tf32_is_not_measured_on_cuda_under_either_override(env, name, value):
    env.setenv(name, value)
    points = _points(tf32.CASE, "cuda")
    assert points
    for point in points:
        skip = marks.of(point).skip
        assert f"{name}={value}" in skip, f"{point.id} would run and go red: {skip!r}"
    for point in _points(tf32.CASE, "cpu"):
        assert marks.of(point).skip == "", point.id


IEEE_FP32_CASES = [
    memory.CASE,
    attention.ATTENTION,
    im2col.IM2COL,
    transposed.TRANSPOSED,
    dilated.DILATED,
    shapes.SHAPES,
    pooling.POOLING,
    layout.CASE,
    hidden_detach.HIDDEN_DETACH,
    distance.CASE,
    sparse.CASE,
    dp_vs_ddp.CASE,
]


@pytest.mark.parametrize("case", IEEE_FP32_CASES, ids=lambda c: c.id)
def test_ieee_fp32_cases_are_not_measured_on_cuda_under_the_cublas_override(env, case):
    env.setenv(TORCH, "1")
    for point in _points(case, "cuda"):
        assert f"{TORCH}=1" in marks.of(point).skip, point.id
    env.delenv(TORCH)
    env.setenv(NVIDIA, "0")  # keeps TF32 off: these IEEE checks are unaffected
    for point in _points(case, "cuda"):
        assert marks.of(point).skip == "", point.id
