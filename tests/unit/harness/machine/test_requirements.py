import pytest
import torch

from harness.machine import requirements


def test_cuda_device_needs_gpu_and_is_skipped_without_it():
    assert requirements.needs_gpu((), "cuda")
    assert not requirements.needs_gpu((), "cpu")
    if not torch.cuda.is_available():
        assert requirements.unmet((), "cuda") == "CUDA not available"
    assert requirements.unmet((), "cpu") is None


def test_tokens():
    assert requirements.gpus_needed(("gpus>=2",)) == 2
    assert (
        requirements.unmet(("module:surely_not_a_package_xyz",), "cpu")
        == "needs the optional package 'surely_not_a_package_xyz'"
    )
    if torch.cuda.device_count() < 64:
        assert "needs >= 64 GPUs" in requirements.unmet(("gpus>=64",), "cpu") or not torch.cuda.is_available()


def test_unknown_token_is_an_error():
    with pytest.raises(ValueError, match="unknown requirement"):
        requirements.unmet(("gpu",), "cpu")
