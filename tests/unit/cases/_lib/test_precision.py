"""cases/_lib/precision.py: on CUDA (faked here, as tests/unit/properties/test_ieee_fp32.py does)
TF32 is off in cuBLAS and cuDNN inside the block and as it was after it, a nested block sets
nothing, nothing is touched off CUDA, and the wrapped function keeps what torch.compile needs to
compile it without the flags."""

from __future__ import annotations

import pytest
import torch

from cases._lib import precision


def _tf32() -> tuple[bool, bool]:
    return bool(torch.backends.cuda.matmul.allow_tf32), bool(torch.backends.cudnn.allow_tf32)


@pytest.fixture
def tf32_on():
    """TF32 on in cuBLAS and cuDNN for the test, as it was after it. Set and restored by assignment:
    these flags are properties of torch's backend modules, which a newer pytest's monkeypatch takes
    for attributes it added and deletes at teardown (AttributeError)."""
    saved = _tf32()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_off_cuda_nothing_is_set(monkeypatch, tf32_on):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with precision.ieee_context():
        assert _tf32() == (True, True)


def test_on_cuda_tf32_is_off_inside_and_restored_after(monkeypatch, tf32_on):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with precision.ieee_context():
        assert _tf32() == (False, False)
        torch.backends.cudnn.allow_tf32 = True  # what a nested block finds: it sets nothing itself
        with precision.ieee_context():
            assert _tf32() == (False, True)
    assert _tf32() == (True, True)


def test_the_wrapped_function_returns_what_it_returns_and_names_its_compile_target():
    def double(x):
        return 2 * x

    wrapped = precision.ieee_fp32(double)
    assert torch.equal(wrapped(torch.ones(2)), torch.full((2,), 2.0))
    assert wrapped.__compile_target__ is double and wrapped.__compile_wrapper__ is precision.ieee_fp32
    assert "__compile__" not in wrapped.__dict__
