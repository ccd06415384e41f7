"""The judges of `cases/precision/tf32.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import get_case
from cases.precision import tf32
from harness.contract.record import Verdict

# ---- precision.tf32 --------------------------------------------------------------------------------


def test_tf32_notes_flags_error():
    k = 512
    absent = tf32.judge_notes_flags_error("matmul", "cpu", k, 4e-7, 4e-7, False, "premise absent")
    assert absent.verdict is Verdict.DEPENDS and "premise absent" in absent.evidence
    assert tf32.judge_notes_flags_error("matmul", "cuda", k, 3e-7, 3e-4, True, "p").verdict is Verdict.HOLDS
    assert tf32.judge_notes_flags_error("matmul", "cuda", k, 3e-7, 3e-7, True, "p").verdict is Verdict.FAILS
    too_far = tf32.judge_notes_flags_error("matmul", "cuda", k, 3e-7, 2 * k * tf32.U_TF32, True, "p")
    assert too_far.verdict is Verdict.FAILS


class _Premise:
    def __init__(self, present: bool):
        self.present = present

    def __str__(self) -> str:
        return f"premise {'present' if self.present else 'absent'}"


def test_tf32_reduced_error_returns_fails_never_asserts():
    k, u_bf16 = 512, tf32.U_BF16
    assert tf32.judge_reduced_error("matmul", "cpu", k, 4e-7, 2e-3, _Premise(True)).verdict is Verdict.HOLDS
    absent = tf32.judge_reduced_error("matmul", "cpu", k, 4e-7, 4e-7, _Premise(False))
    assert absent.verdict is Verdict.DEPENDS and "premise absent" in absent.evidence
    unchanged = tf32.judge_reduced_error("matmul", "cpu", k, 4e-7, 5e-7, _Premise(True))
    assert unchanged.verdict is Verdict.FAILS and "did not lower precision" in unchanged.evidence
    fp32_off = tf32.judge_reduced_error("conv", "cpu", k, 2 * k * tf32.U_FP32, 2e-3, _Premise(False))
    assert fp32_off.verdict is Verdict.FAILS and "NOT fp32" in fp32_off.evidence
    beyond = tf32.judge_reduced_error("matmul", "cpu", k, 4e-7, 2 * k * u_bf16, _Premise(True))
    assert beyond.verdict is Verdict.FAILS and "K·u" in beyond.evidence


def test_tf32_api_mixing_and_cpu_high():
    assert tf32.judge_api_mixing(("tf32", "bf16"), "raises", True).verdict is Verdict.HOLDS
    assert tf32.judge_api_mixing(("tf32", "none"), "raises", True).verdict is Verdict.FAILS
    assert tf32.judge_api_mixing(("tf32", "bf16"), None, False).verdict is Verdict.FAILS
    assert tf32.judge_api_mixing(None, None, True, "high").verdict is Verdict.HOLDS
    assert tf32.judge_api_mixing(None, None, True, "highest").verdict is Verdict.FAILS
    assert tf32.judge_cpu_high(4e-7, 256, True, False, "p").verdict is None
    assert tf32.judge_cpu_high(1e-3, 256, False, False, "p").verdict is Verdict.FAILS
    assert tf32.judge_cpu_high(1e-4, 256, False, True, "p").verdict is Verdict.DEPENDS


def test_tf32_speed_claim_is_the_notes_flags_and_bf16_is_context():
    from harness.contract import rules

    case = get_case("precision.tf32")
    (node,) = [n for n in rules.claimed(case.verdict) if n.claim == "faster"]
    pairs = {(r.fast, r.slow) for r in rules.speed_rules(node)}
    assert pairs == {("matmul.high", "matmul.highest"), ("conv.reduced", "conv.ieee")}
    assert all(r.premise == tf32.TF32_KERNEL for r in rules.speed_rules(node))
    # On a CPU the notes' cuDNN flag leaves the conv bitwise IEEE: the premise is absent there.
    import torch

    x, w = tf32.make_conv({"n": 64}, torch.float32, torch.device("cpu"), 0)
    assert torch.equal(tf32.conv_notes_flag(x, w), tf32._conv(False)(x, w))


def test_tf32_defaults_are_a_claim_that_fails_where_a_flag_reads_false():
    from cases.precision import tf32

    # torch >= 1.12: matmul's flag defaults to False, cuDNN's to True: the notes' "both True" fails.
    f = tf32.judge_defaults(False, True, "e")
    assert f.verdict is Verdict.FAILS and f.errata == () and "cuda.matmul.allow_tf32" in f.evidence
    assert tf32.judge_defaults(True, False, "e").verdict is Verdict.FAILS
    assert tf32.judge_defaults(False, False, "e").verdict is Verdict.FAILS
    # torch 1.7-1.11, where both were True: the claim holds.
    assert tf32.judge_defaults(True, True, "e").verdict is Verdict.HOLDS
    assert tf32.judge_defaults(None, None, "the interpreter failed").verdict is Verdict.NOT_MEASURED


def test_tf32_defaults_claim_is_declared_and_decided_by_its_check():
    case = get_case("precision.tf32")
    assert case.checks["defaults"].claim == "defaults"
    assert "defaults" in {c.id for c in case.claims}
