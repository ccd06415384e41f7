"""fp32 on CUDA means IEEE fp32 where a variant is held to an fp32 bound (issue 16: cuDNN's TF32
default put `layout.contiguous`'s channels_last conv outside its bound on the H100).

Run on the CPU with CUDA faked present, so `cases._lib.precision.ieee_fp32` takes its CUDA branch,
and with the precision each cuDNN convolution or RNN call would run at read where the call is made
(`torch._C._get_fp32_precision_getter` resolves a `'none'` op setting through its parents, as the
kernels do). A reduced path is allowed only where the bound admits it on purpose
(`tests.unit.properties.test_mutations.EXEMPT`); precision.tf32 sets its flags itself (see OWN_FLAGS).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from cases import all_cases
from cases._lib.precision import ieee_fp32
from cases.spec import tolerance_at
from harness.measure import block_context
from harness.measure import precision_flags as flags
from plan import VariantPoint
from tests.unit.properties.test_mutations import EXEMPT

FP32 = torch.float32
NEW_API = flags.has_new_api()


def _reduced(op: str) -> bool:
    """Whether a cuDNN `op` ('conv', 'rnn') or a cuBLAS matmul ('matmul') started now would be
    allowed TF32."""
    if NEW_API:
        return torch._C._get_fp32_precision_getter("cuda", op) == "tf32"
    if op == "matmul":
        return bool(torch.backends.cuda.matmul.allow_tf32)
    return bool(torch.backends.cudnn.allow_tf32)


def _tf32_on_through(how: str) -> None:
    if how == "legacy":  # cuDNN's own default, plus cuBLAS's legacy switch
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    elif how == "matmul_precision":
        torch.set_float32_matmul_precision("high")
    elif how == "global":  # the new API's one switch (torch >= 2.9)
        torch.backends.fp32_precision = "tf32"
    elif how == "cudnn":
        torch.backends.cudnn.fp32_precision = "tf32"
        torch.backends.cuda.matmul.fp32_precision = "tf32"


WAYS = ["legacy", "matmul_precision"] + (["global", "cudnn"] if NEW_API else [])


@pytest.mark.parametrize("how", WAYS)
def test_ieee_fp32_turns_tf32_off_whichever_api_turned_it_on(how, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    seen = {}

    def fn(x):
        seen.update({op: _reduced(op) for op in ("conv", "rnn", "matmul")})
        return x

    with flags.preserved():
        _tf32_on_through(how)
        before = flags.snapshot()
        ieee_fp32(fn)(torch.ones(1))
        assert flags.snapshot() == before, "ieee_fp32 did not restore the flags it changed"
    assert seen == {"conv": False, "rnn": False, "matmul": False}, f"TF32 left on inside ieee_fp32: {seen}"


# ---- every fp32 variant held to an fp32 bound: its cuDNN calls with TF32 off ----------------------

_CUDNN = [(F, name) for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d")] + [
    (torch._VF, name) for name in ("rnn_tanh", "rnn_relu", "lstm", "gru")
]


# precision.tf32 sets the flags itself, for the device its tensors are on
# (harness.measure.precision_flags.matmul_precision / conv_precision): CPU tensors here, so the CUDA flags it
# would set are not reached; tests/unit/harness/machine/test_premises.py and suite/test_precision.py test it.
OWN_FLAGS = {"precision.tf32"}


def _points() -> list[VariantPoint]:
    points = []
    for case in all_cases():
        if case.id in OWN_FLAGS:
            continue
        for part, comparison in case.comparisons().items():
            if FP32 not in comparison.dtypes.get("cuda", ()) or FP32 not in comparison.dtypes.get("cpu", ()):
                continue
            for name, variant in comparison.variants.items():
                if variant.dtypes is not None and FP32 not in variant.dtypes:
                    continue
                label = ".".join(p for p in (part, name) if p)
                if (case.id, label) in EXEMPT:  # held to the TF32/bf16 bound on purpose
                    continue
                size = comparison.sizes_for("quick")[0]
                points.append(VariantPoint(case, name, size, FP32, "cpu", part=part))
    return points


POINTS = _points()


def _id(p: VariantPoint) -> str:
    return f"{p.case.id}-{p.part + '.' if p.part else ''}{p.variant_name}"


def _as_the_harness_calls_it(fn, inputs):
    """The bare computation inside the variant's context, entered once
    (harness.measure.block_context.split)."""
    bare, context = block_context.split(fn)
    with context(*inputs):
        return bare(*inputs)


@pytest.mark.parametrize("called", ["directly", "by_the_harness"])
@pytest.mark.parametrize("point", POINTS, ids=[_id(p) for p in POINTS])
def test_fp32_variants_call_cudnn_with_tf32_off(point, called, monkeypatch):
    """With CUDA present, a convolution or RNN inside a variant held to an fp32 bound runs with TF32
    off (an fp32 bound is ~1e-5 or tighter; TF32's 10-bit mantissa is off by ~1e-3): called
    directly (a check) or as the harness times it (the bare call inside its context)."""
    inputs = point.make_inputs(0)  # drawn before CUDA is faked: the inputs live on the CPU
    calls = []
    for module, name in _CUDNN:
        real = getattr(module, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            op = "rnn" if _name in ("rnn_tanh", "rnn_relu", "lstm", "gru") else "conv"
            calls.append((_name, _reduced(op)))
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with flags.preserved():
        torch.backends.cudnn.allow_tf32 = True  # cuDNN's default, whatever this process was left with
        if called == "directly":
            point.variant.fn(*inputs)
        else:
            _as_the_harness_calls_it(point.variant.fn, inputs)
    reduced = sorted({name for name, tf32 in calls if tf32})
    assert not reduced, (
        f"{point.id}: {reduced} ran with TF32 allowed, against an fp32 bound "
        f"({tolerance_at(point.tolerance, point.size)})"
    )
