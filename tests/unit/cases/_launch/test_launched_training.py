"""The judges of the distributed cases (`cases.parallel`, `cases.dist`) on hand-made rank
files: each check goes red on the evidence it exists to catch, without launching a process."""

import copy

import pytest
import torch

from cases._launch import launched_training as LT
from cases._lib import data_parallel as DP
from tests.rank_files import train_rows


def test_training_checks_catch_a_missing_rank_and_diverged_replicas():
    LT.check_training(train_rows(2), "ddp")
    with pytest.raises(AssertionError, match="1 rank files for world size 2"):
        LT.check_training(train_rows(2)[:1], "ddp")
    rows = train_rows(2)
    rows[1]["modes"]["ddp"]["params_sha1"] = "other"
    with pytest.raises(AssertionError, match="different parameters"):
        LT.check_training(rows, "ddp")


def test_a_training_row_goes_through_the_results_record():
    from harness.contract.record import BenchmarkInfo

    info, extra, times = LT.train_row(train_rows(2), "ddp", "cpu")
    data = BenchmarkInfo(**info).to_data()
    assert (data["case"], data["role"], data["size_label"]) == (
        "parallel.dp_vs_ddp",
        "optimized",
        "w2-batch64",
    )
    assert times == extra["step_s"] == [0.01, 0.02]


def test_sharded_training_is_within_the_bound_and_a_summed_gradient_is_far_outside():
    """The training bound on its own terms, in one process: two shards' gradients averaged (what
    DDP computes) stay inside it against full-batch training; summed (a broken all-reduce) are far
    out. At the quick size, as the launched workers run in CI."""

    from torch import nn

    size = LT.TRAIN_SIZES["quick"]
    width, batch, steps, d = size["width"], size["batch"], size["steps"] + 1, 256
    x, y = DP.make_batch(batch, d, d, 0)
    base = DP.make_mlp(d, width, d, 0)

    def train(shards: int, reduce) -> torch.Tensor:
        model = copy.deepcopy(base)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(steps):
            grads = []
            for r in range(shards):
                model.zero_grad()
                nn.functional.mse_loss(model(x[r::shards]), y[r::shards]).backward()
                grads.append([p.grad.clone() for p in model.parameters()])
            for p, *g in zip(model.parameters(), *grads):
                p.grad = reduce(torch.stack(g))
            opt.step()
        return DP.flat_params(model)

    numels = [p.numel() for p in base.parameters()]
    bound = DP.train_tolerance(batch, width)
    full = train(1, lambda g: g[0])
    averaged = max(DP.tensor_errors(train(2, lambda g: g.mean(0)), full, numels))
    summed = max(DP.tensor_errors(train(2, lambda g: g.sum(0)), full, numels))
    assert averaged <= bound < summed / 100, (averaged, bound, summed)
