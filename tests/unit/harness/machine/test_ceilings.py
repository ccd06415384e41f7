"""The machine's measured ceilings (harness/machine/ceilings.py): the documented shape on the CPU and on
CUDA, plausible values, measured in seconds."""

import pytest
import torch

from harness.machine import ceilings
from tests import quiet


def test_cpu_ceilings_have_the_documented_shape_and_plausible_values():
    measured, detail = ceilings.measured("cpu")
    assert set(measured) == {"fp32_flops", "bf16_flops", "copy_bytes_per_s"}
    # A GEMM can't beat 2 FLOP per cycle per lane: 2 FMA units × 16 fp32 lanes × 2 × 5 GHz per core.
    assert 1e9 < measured["fp32_flops"] < detail["threads"] * 2 * 16 * 2 * 5e9
    assert measured["bf16_flops"] > 1e8 and 1e8 < measured["copy_bytes_per_s"] < 1e12
    assert ceilings.measured("cpu")[0] is measured, "measured once per process, then cached"


@pytest.mark.timing
def test_cpu_ceilings_are_measured_in_seconds():
    """Measured before the first timed point of a run: it must not become the run's wait."""
    _, detail = ceilings.measured("cpu")
    quiet.hold(detail["seconds"] < 5.0, f"the CPU ceilings took {detail['seconds']:.1f} s (bound 5 s)")


@pytest.mark.gpu
def test_cuda_ceilings_have_the_documented_shape():
    if not torch.cuda.is_available():
        pytest.skip("CUDA not available")
    measured, detail = ceilings.measured("cuda")
    assert set(measured) == {"fp32_flops", "tf32_flops", "bf16_flops", "fp16_flops", "copy_bytes_per_s"}
    assert measured["tf32_flops"] > measured["fp32_flops"] and measured["bf16_flops"] > measured["fp32_flops"]
    quiet.hold(detail["seconds"] < 10.0, f"the CUDA ceilings took {detail['seconds']:.1f} s (bound 10 s)")
