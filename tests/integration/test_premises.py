"""Hardware premises in fresh processes (harness/machine/premises.py, cases/_launch/isolated.py): the
DataParallel CPU question where no GPU is visible, invalid weights sent to a fresh process where a
device assert is possible, an isolated call returning what it raised and surviving a dying child."""

from __future__ import annotations

import pytest
import torch

from cases._launch import isolated as _isolated
from cases.misc import sampling_ops as sampling
from cases.parallel import dp_vs_ddp
from cases.spec import Verdict
from harness.machine import premises

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def _fresh_probes():
    premises._rounds_inputs.cache_clear()  # a faked kernel must not leave its answer cached
    yield
    premises._rounds_inputs.cache_clear()


# ---- parallel.dp_vs_ddp: the number of GPUs -------------------------------------------------------


@pytest.mark.integration
def test_dataparallel_cpu_question_is_asked_where_no_gpu_is_visible(monkeypatch):
    """This process plays a one-GPU machine (the H100 of issue 16). DataParallel must not be built
    here: it would move the module to cuda:0 (in this CPU torch, that raises)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    finding = dp_vs_ddp.check_dataparallel_without_gpus(CPU)
    assert "a fresh process with CUDA_VISIBLE_DEVICES=''" in finding.evidence
    assert "device_ids=[]" in finding.evidence


# ---- misc.sampling_ops: invalid input never reaches a CUDA kernel in this process ------------------


@pytest.mark.integration
def test_invalid_weights_go_to_fresh_processes_where_a_device_assert_is_possible(monkeypatch):
    def never_here(*args):
        raise AssertionError("invalid weights reached torch.multinomial in the test process")

    monkeypatch.setattr(sampling, "_asserts_on_device", lambda device: True)
    monkeypatch.setattr(sampling, "multinomial_rejects", never_here)  # the children import their own
    finding = sampling.check_multinomial_weights(CPU)
    assert finding.verdict is Verdict.HOLDS and "each seen in a fresh process" in finding.evidence
    assert "negative → RuntimeError" in finding.evidence


@pytest.mark.integration
def test_isolated_call_returns_what_it_raised_and_survives_a_dying_child():
    raised = _isolated.run("math:sqrt", -1.0)
    assert raised.value is None and raised.error["type"] == "ValueError"
    assert "RuntimeError" not in raised.error["bases"]
    with pytest.raises(RuntimeError, match="gave no answer"):
        _isolated.run("os:_exit", 3)
    assert torch.ones(3).sum().item() == 3
