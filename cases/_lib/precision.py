"""fp32 meaning fp32 on CUDA, for the cases whose kernels would otherwise pick TF32.

cuDNN convolutions and RNNs run float32 inputs in TF32 by default (`torch.backends.cudnn.allow_tf32`
is True), while cuBLAS matmuls do not (`torch.backends.cuda.matmul.allow_tf32` is False). A
hand-built form that ends in a matmul would then be compared at full fp32 precision against a
library kernel running at TF32's 10-bit mantissa: neither the error nor the speedup would mean what
the dtype says. These cases measure fp32 as IEEE fp32 on both sides; bf16/fp16 show tensor cores.

The flags are the variant's block context (`harness.measure.block_context.scoped`): the harness sets them once
around a block of timed calls, so their ~110-170 µs of saving, setting and checking stays out of
each call's time; a direct call still sets them itself.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch

from harness.measure import block_context, precision_flags
from harness.measure import device as harness_device

IEEE_OPS = (
    "backends.cuda.matmul.fp32_precision",
    "backends.cudnn.conv.fp32_precision",
    "backends.cudnn.rnn.fp32_precision",
)


_inside = 0  # ieee_fp32 contexts entered and not yet left: a nested one has nothing to set


@contextlib.contextmanager
def ieee_context(*inputs) -> Iterator[None]:
    """TF32 off in cuDNN and cuBLAS for the block (nothing off CUDA, nor inside another)."""
    global _inside
    if _inside or not harness_device.cuda_available():
        yield
        return
    # preserved() restores both flag APIs: a legacy write also rewrites the new-API values.
    with precision_flags.preserved():
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        # The legacy cuDNN write sets conv and rnn to 'none' (inherit), and 'none' inherits a
        # 'tf32' set through the new API on torch.backends or torch.backends.cudnn (torch >= 2.9):
        # each op is pinned to 'ieee' itself, which no parent overrides.
        for path in IEEE_OPS:
            if precision_flags.read(path) != precision_flags.ABSENT:
                precision_flags.write(path, "ieee")
        _inside += 1
        try:
            yield
        finally:
            _inside -= 1


def ieee_fp32(fn):
    """`fn` with TF32 off in cuDNN and cuBLAS while it runs (no-op off CUDA)."""
    call = block_context.scoped(ieee_context)(fn)

    # torch.compile (harness.measure.compiled) compiles `fn` itself and keeps the flags outside the graph:
    # Dynamo need not trace a context manager that writes global backend state.
    call.__compile_target__ = fn
    call.__compile_wrapper__ = ieee_fp32
    call.__dict__.pop("__compile__", None)  # functools.wraps copied fn's: it would skip the flags
    return call
