"""Sizes that cannot fit are skipped before anything is allocated, with the reason (issue 37 item 4).

`memory.checkpoint` at depth 64 builds a 3.2 B-parameter transformer and its float64 oracle runs a
plain backward on a float64 copy: no 80 GiB or 141 GiB GPU holds it, and without an estimate the
harness made the inputs and ran into the device's limit. `sdpa_math`'s scores are fp32 whatever the
inputs' dtype (ATen's math kernel upcasts fp16/bf16). The device here is faked: the harness's own
budget (`measure.memory_budget`) reads a CUDA device whose memory is all free, of 80 GiB (an H100)
or 140 GiB (an H200). Each estimate is also held above what the CPU profiler sees the variant and
its oracle allocate at small sizes, so an estimate that is too low shows here, not on a GPU.
"""

from __future__ import annotations

import pytest
import torch

import plan
from cases import attention, memory
from harness import measure
from plan import InputCache, VariantPoint

GiB = 2**30
BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32


@pytest.fixture(params=[80, 140], ids=["80GiB", "140GiB"])
def device_gib(request, monkeypatch):
    """A CUDA device of this many GiB, empty, as the harness's budget reads it."""
    gib = request.param
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (gib * GiB, gib * GiB))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 0)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 0)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    # The fake device holds nothing to give back; a full collection of the test session's heap
    # costs ~0.5 s per oversize size and frees nothing the budget reads.
    monkeypatch.setattr(measure, "free_memory", lambda device, full=True: None)
    assert measure.memory_budget("cuda") == int(0.9 * gib * GiB)
    return gib


class NothingMade(InputCache):
    """An input cache that fails the test if the inputs or the oracle are ever asked for."""

    def get(self, point):
        raise AssertionError(f"{point.id}: inputs made for a size that does not fit")


def skip_reason(case, variant, size, dtype):
    cache = NothingMade(seed=0)
    reason = plan.oversize_reason(VariantPoint(case, variant, size, dtype, "cuda"), cache)
    assert not cache._entries
    return reason


DEPTH_64 = {"depth": 64, "width": 2048, "batch": 8192}
DEPTH_16 = {"depth": 16, "width": 2048, "batch": 8192}
TRANSFORMER = ("transformer.plain", "transformer.per_block", "transformer.sqrt_segments")


@pytest.mark.parametrize("variant", TRANSFORMER)
def test_the_depth_64_transformer_is_skipped_before_its_inputs_on_an_h100_and_an_h200(device_gib, variant):
    assert DEPTH_64 in memory.CASE.sizes["full"]
    reason = skip_reason(memory.CASE, variant, DEPTH_64, FP32)
    assert reason is not None, f"{variant} at depth 64 would be tried on a {device_gib} GiB device"
    need = float(reason.split("~")[1].split(" GiB")[0])
    assert need > 190, reason  # its float64 oracle alone: ~190 GiB and more
    assert f"budget of {0.9 * device_gib:.1f} GiB" in reason


def test_every_other_full_size_of_memory_checkpoint_fits_an_h100(device_gib):
    """Depth 16 (every family) and the MLP and h + W·h blocks at depth 64 ran on the H100: the
    guard must not take them away."""
    for size in memory.CASE.sizes["full"] + memory.CASE.sizes["quick"]:
        for name in memory.CASE.variants:
            if size == DEPTH_64 and name in TRANSFORMER:
                continue
            assert skip_reason(memory.CASE, name, size, FP32) is None, (name, size)


@pytest.mark.parametrize("dtype", [FP32, BF16, FP16])
def test_sdpa_math_at_16384_is_skipped_where_it_cannot_fit(device_gib, dtype):
    """Its scores and their softmax are fp32 in every dtype (2 × 32 GiB at S = 16384, B = 2, H = 16):
    ~76 GiB in all, over an 80 GiB device's budget (72 GiB), under a 140 GiB one's (126 GiB)."""
    size = {"s": 16384, "b": 2, "h": 16, "d": 64}
    assert size in attention.ATTENTION.sizes["full"]
    reason = skip_reason(attention.ATTENTION, "sdpa_math", size, dtype)
    if device_gib == 80:
        assert reason is not None and "needs ~7" in reason, reason
    else:
        assert reason is None, reason
    # S = 32768 is four times that: never.
    assert skip_reason(attention.ATTENTION, "sdpa_math", {**size, "s": 32768}, dtype) is not None


def test_the_math_kernel_computes_half_inputs_in_fp32():
    """The estimate's premise, read from torch: the math kernel's scores are fp32 for half inputs."""
    assert not torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed()
    assert attention.math_sdpa_dtype_bytes(2) == 4 and attention.math_sdpa_dtype_bytes(4) == 4
    assert attention.math_sdpa_dtype_bytes(8) == 8


def test_every_variant_declares_its_working_set():
    for case in (memory.CASE, attention.ATTENTION):
        missing = [name for name, v in case.variants.items() if v.peak_bytes is None]
        assert not missing, f"{case.id}: {missing} declare no peak_bytes"


# ---- each estimate above what really is allocated (CPU profiler, small sizes) -------------------


def _held_and_peaks(make, variant, oracle):
    """Bytes the inputs take, and the larger of the oracle's peak and the variant's with the truth
    held: what the estimate must cover."""
    inputs, made = measure.peak_memory(make, "cpu")
    truth, oracle_peak = measure.peak_memory(lambda: oracle(*inputs), "cpu")
    truth_bytes = sum(t.numel() * t.element_size() for t in (truth if isinstance(truth, tuple) else (truth,)))
    _, variant_peak = measure.peak_memory(lambda: variant(*inputs), "cpu")
    return made + max(oracle_peak, truth_bytes + variant_peak)


@pytest.mark.parametrize("name", list(memory.CASE.variants))
def test_the_checkpoint_estimate_covers_what_is_allocated(name):
    size = {"depth": 6, "width": 96, "batch": 384}
    v = memory.CASE.variants[name]
    make = v.inputs or memory.CASE.make_inputs
    seen = _held_and_peaks(lambda: make(size, FP32, "cpu", 0), v.fn, memory.grads_float64)
    assert v.peak_bytes(size, 4) >= seen, f"{name}: estimate {v.peak_bytes(size, 4)} B, allocated {seen} B"


@pytest.mark.parametrize("dtype", [FP32, BF16])
@pytest.mark.parametrize("name", list(attention.VARIANTS))
def test_the_attention_estimate_covers_what_is_allocated(name, dtype):
    size = {"s": 512, "b": 2, "h": 16, "d": 32}
    v = attention.VARIANTS[name]
    itemsize = torch.empty((), dtype=dtype).element_size()
    seen = _held_and_peaks(
        lambda: attention.make_attention(size, dtype, "cpu", 0), v.fn, attention.attention_float64
    )
    assert v.peak_bytes(size, itemsize) >= seen, (
        f"{name} {dtype}: estimate {v.peak_bytes(size, itemsize)} B, allocated {seen} B"
    )


# ---- out of memory in the CUDA libraries is `not measured`, like the allocator's ----------------


@pytest.mark.parametrize(
    "message",
    [
        "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasLtMatmul(...)`",
        "cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
        "cuDNN error: CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
        "cuDNN error: CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
        "cusolver error: CUSOLVER_STATUS_ALLOC_FAILED, when calling `cusolverDnCreate(handle)`",
    ],
)
def test_a_cuda_library_that_cannot_allocate_is_out_of_memory(message):
    assert measure.is_out_of_memory(RuntimeError(message))
    assert measure.is_out_of_memory(torch.AcceleratorError(message))


@pytest.mark.parametrize(
    "message",
    [
        "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a "
        "non-contiguous input.",
        "cuDNN error: CUDNN_STATUS_EXECUTION_FAILED",
        "cuDNN error: CUDNN_STATUS_BAD_PARAM",
        "CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, "
        "&alpha, a, lda, b, ldb, &beta, c, ldc)`",
        "CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasLtMatmul(...)`",
    ],
)
def test_other_cuda_library_errors_stay_errors(message):
    assert not measure.is_out_of_memory(RuntimeError(message))


def test_the_allocators_own_words_still_count():
    assert measure.is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert measure.is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried"))
    assert not measure.is_out_of_memory(ValueError("CUBLAS_STATUS_ALLOC_FAILED"))  # not a torch error


def test_a_point_rebuilt_in_a_fresh_process_computes_what_the_suite_checked():
    """`fresh_build` (harness.measure.faulted_pages's children) makes the same inputs from the
    same seed and calls the same computation: its output equals the variant's on the suite's
    inputs, bit for bit."""
    from cases import distance, get_case

    point = VariantPoint(get_case("distance.pairwise"), "broadcast", {"n": 8, "m": 5, "d": 3}, FP32, "cpu")
    call, context = plan.fresh_build(*plan.fresh_spec(point, seed=7))
    with context():
        rebuilt = call()
    assert torch.equal(rebuilt, distance.broadcast(*point.make_inputs(7)))
    other, _ = plan.fresh_build(*plan.fresh_spec(point, seed=8))
    assert not torch.equal(other(), rebuilt)  # the seed travels
