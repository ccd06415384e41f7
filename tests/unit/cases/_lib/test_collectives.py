"""cases/_lib/collectives.py: the all-reduce algorithms over one rank, d2l's in-process sum, the
float64 truth and its bound, and the α–β model (traffic per algorithm, a fit that recovers known
α and β, nccl-tests' bus bandwidth). Several ranks are judged in tests/unit/cases/parallel."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from cases._lib import collectives as C
from harness.run import launch


def test_d2l_sums_into_the_first_and_copies_back():
    data = [torch.full((3,), float(i)) for i in range(1, 4)]
    C.d2l_allreduce(data)
    assert all(torch.equal(t, torch.full((3,), 6.0)) for t in data)


def test_the_truth_is_the_float64_sum_and_its_bound_grows_with_the_ranks():
    truth, bound = C.allreduce_bound(8, 3, seed=1)
    parts = [C.rank_tensor(8, r, 1).double() for r in range(3)]
    assert truth.dtype == torch.float64 and torch.equal(truth, parts[0] + parts[1] + parts[2])
    assert torch.equal(C.rank_tensor(8, 2, 1), C.rank_tensor(8, 2, 1))  # any rank can rebuild it
    assert torch.all(bound > 0) and torch.all(C.allreduce_bound(8, 6, 1)[1] > bound)


def test_the_ring_sends_a_pth_of_the_master_per_step():
    assert C.model_terms("ring", 4, 1024) == (6, 1536.0)
    assert C.model_terms("master", 4, 1024) == (6, 6144)
    assert C.model_terms("all_reduce", 4, 1024) == C.model_terms("ring", 4, 1024)
    assert C.model_time("ring", 4, 1024, alpha=1e-5, beta=1e-9) == pytest.approx(6e-5 + 1536e-9)


def test_the_fit_recovers_the_alpha_and_beta_it_was_given():
    alpha, beta = 2e-5, 3e-10
    points = [
        (algorithm, p, nbytes, C.model_time(algorithm, p, nbytes, alpha, beta))
        for algorithm in ("ring", "master")
        for p in (2, 4)
        for nbytes in (1 << 10, 1 << 16, 1 << 22)
    ]
    got = C.fit_alpha_beta(points)
    assert got == pytest.approx((alpha, beta), rel=1e-6)


def test_bus_bandwidth_is_nccl_tests():
    assert C.bus_bandwidth(1e9, 0.5, 4) == (2e9, 3e9)
    assert C.bus_bandwidth(1e9, 0.5, 1)[1] == 0


def test_each_algorithm_over_one_rank_leaves_the_tensor_and_sends_nothing(monkeypatch):
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(launch.free_port()))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        for name, algorithm in C.ALLREDUCE.items():
            t = C.rank_tensor(16, 0, 0)
            sent = algorithm(t)
            assert torch.equal(t, C.rank_tensor(16, 0, 0)), name
            assert sent == 0, name  # one rank sends nothing
    finally:
        dist.destroy_process_group()
