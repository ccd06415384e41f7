"""The TF32 override variables are a premise, and the points they would turn red are `not measured`
(issue 37 item 5).

NVIDIA_TF32_OVERRIDE=0 keeps cuBLAS and cuDNN off TF32 whatever torch's flags ask, so a check of
TF32 on against off sees no difference; TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 (set in NVIDIA's PyTorch
containers) runs every fp32 cuBLAS matmul in TF32, so an IEEE fp32 bound fails. Either way the
check would go red for the environment's sake. On a CPU the variables do nothing, and nothing is
taken away there. The environment is monkeypatched; a CUDA device is faked only as far as the
requirement check asks whether one is there.
"""

from __future__ import annotations

import pytest
import torch

from harness.machine import premises, requirements

NVIDIA, TORCH = "NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"


@pytest.fixture
def env(monkeypatch):
    """A clean environment for the two variables, and a CUDA device as requirements.unmet sees it."""
    monkeypatch.delenv(NVIDIA, raising=False)
    monkeypatch.delenv(TORCH, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    return monkeypatch


@pytest.mark.parametrize("name, value", [(NVIDIA, "0"), (TORCH, "1")])
def test_either_override_means_the_tf32_flags_do_not_decide_on_cuda(env, name, value):
    env.setenv(name, value)
    premise = premises.tf32_flags_decide("cuda")
    assert not premise.present
    assert f"{name}={value}" in premise.evidence and "whatever torch" in premise.evidence
    reason = requirements.unmet(("tf32_flags",), "cuda")
    assert reason and f"{name}={value}" in reason and "not measured" in reason and f"unset {name}" in reason


def test_only_the_cublas_override_takes_ieee_fp32_away(env):
    env.setenv(NVIDIA, "0")  # TF32 off everywhere: what an IEEE check wants anyway
    assert premises.ieee_fp32("cuda").present
    assert requirements.unmet(("ieee_fp32",), "cuda") is None
    env.setenv(TORCH, "1")
    assert not premises.ieee_fp32("cuda").present
    reason = requirements.unmet(("ieee_fp32",), "cuda")
    assert reason and f"{TORCH}=1" in reason and "every fp32 cuBLAS matmul in TF32" in reason


@pytest.mark.parametrize("name, value", [(NVIDIA, "1"), (TORCH, "0"), (TORCH, "true"), (NVIDIA, "")])
def test_values_that_do_nothing_take_nothing_away(env, name, value):
    """NVIDIA documents only 0; torch acts on "1" alone ("true" leaves allow_tf32 False)."""
    env.setenv(name, value)
    for token in ("tf32_flags", "ieee_fp32"):
        assert requirements.unmet((token,), "cuda") is None


def test_on_a_cpu_the_variables_do_nothing_and_say_so(env):
    env.setenv(NVIDIA, "0")
    env.setenv(TORCH, "1")
    for premise in (premises.tf32_flags_decide("cpu"), premises.ieee_fp32("cpu")):
        assert premise.present and "on cpu they change nothing" in premise.evidence
        assert f"{NVIDIA}='0'" in premise.evidence
    assert requirements.unmet(("tf32_flags", "ieee_fp32"), "cpu") is None


def test_the_premises_are_recorded_with_the_machine(env):
    env.setenv(TORCH, "1")
    env.setattr(premises, "gpu_count", lambda: 0)  # this machine: the CPU's reading is recorded
    found = premises.summary()
    assert found["TF32 flags decide fp32 precision on cpu"]["present"]
    assert "change nothing" in found["IEEE fp32 matmuls on cpu"]["evidence"]


def test_the_run_says_so_before_the_first_test(env):
    assert requirements.overridden("cuda") == []
    env.setenv(NVIDIA, "0")
    lines = requirements.overridden("cuda")
    assert len(lines) == 1 and "TF32 flags decide" in lines[0] and "not measured" in lines[0]
    env.setenv(TORCH, "1")
    assert any("IEEE fp32 matmuls on cuda" in line for line in requirements.overridden("cuda"))
    assert requirements.overridden("cpu") == []
