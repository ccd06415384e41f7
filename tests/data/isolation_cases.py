"""Tests that tests/integration/test_isolation.py runs in a pytest subprocess, by path (the name does
not match ``test_*.py``, so ``pytest tests`` never collects them): every outcome a run can have, benchmark
points before and after the tests where a sticky error is planted, a test that kills its worker,
and a real device-side assert where CUDA exists."""

import os
from pathlib import Path

import pytest
import torch

DIE_ONCE_ENV = "ISOLATION_CASES_DIE_ONCE"  # a file: while it exists, test_dies_hard kills its process


def _small_sum():
    return torch.ones(256).sum().item()


def test_bench_first(benchmark):
    assert benchmark(_small_sum) == 256


def test_passes():
    assert torch.arange(4).sum().item() == 6


def test_skips():
    pytest.skip("skipped on purpose, with this reason")


def test_fails():
    assert torch.tensor(1.0).item() == 2.0, "fails on purpose"


def test_planted_here():
    assert True  # the sticky error is planted by the test runner (SUITE_PLANT_STICKY_ERROR)


def test_bench_second(benchmark):
    assert benchmark(_small_sum) == 256


def test_dies_hard():
    marker = os.environ.get(DIE_ONCE_ENV)
    if marker and Path(marker).exists():
        Path(marker).unlink()
        os._exit(3)  # a crash no exception handler sees (a segfault in a kernel would look the same)


def test_planted_again():
    assert True


def test_bench_third(benchmark):
    assert benchmark(_small_sum) == 256


def test_passes_last():
    assert torch.ones(2).mean().item() == 1.0


# CUDA: a real device-side assert, and CUDA work before and after it -----------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")


def _cuda_sum():
    return torch.ones(1 << 16, device="cuda").sum().item()


@cuda
def test_cuda_bench_before(benchmark):
    assert benchmark(_cuda_sum) == 1 << 16


@cuda
def test_cuda_device_side_assert():
    x = torch.zeros(5, device="cuda")
    x[torch.tensor([10], device="cuda")]  # index 10 of 5: the indexing kernel asserts on the device
    torch.cuda.synchronize()


@cuda
def test_cuda_bench_after(benchmark):
    assert benchmark(_cuda_sum) == 1 << 16


@cuda
def test_cuda_passes_after():
    assert torch.arange(4, device="cuda").sum().item() == 6
