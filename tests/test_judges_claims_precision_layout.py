"""Judges of layout.contiguous, memory.checkpoint, precision.amp and precision.tf32 (issue 36):
each gives HOLDS on the normal observation and another verdict on a contrary one; errata follow
the observation and never decide the verdict; every declared claim is decided."""

from __future__ import annotations

import pytest

from cases import get_case, layout, memory
from cases.precision import amp, tf32
from harness.contract.record import ErratumKind, Verdict

IDS = ("layout.contiguous", "memory.checkpoint", "precision.amp", "precision.tf32")


@pytest.mark.parametrize("case_id", IDS)
def test_every_claim_is_decided(case_id):
    assert get_case(case_id).undecided_claims() == []


# ---- layout.contiguous -----------------------------------------------------------------------------


def test_layout_c_snippet_typo_and_no_compiler():
    f = layout.judge_notes_is_contiguous(True, "e", "", "", "", "expected ';' before 'else'")
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    missing = layout.judge_notes_is_contiguous(True, "e", "", "", "", None)
    assert missing.errata == () and "not compiled" in missing.evidence
    assert layout.judge_notes_is_contiguous(False, "e", "", "", "", "x").verdict is Verdict.FAILS


def test_layout_c_snippet_does_not_compile_as_written():
    errors = layout._c_compile_errors(layout.NOTES_IS_CONTIGUOUS_C)
    if errors is None:
        pytest.skip("no C compiler")
    assert "stride" in errors and ";" in errors
    repaired = layout.NOTES_IS_CONTIGUOUS_C.replace("stride[d]==z", "self->stride[d]==z").replace(
        "z*=self->size[d]\n", "z*=self->size[d];\n"
    )
    assert layout._c_compile_errors(repaired) == ""


def test_layout_view_of_noncontiguous_is_a_wrong_statement():
    counts = {"ok": 5, "raised": 3, "mismatch": 0}
    f = layout.judge_view_rule(counts, "view size is not compatible", "run", "t().view(2,2,3) succeeds")
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.WRONG_STATEMENT]
    assert layout.judge_view_rule(counts, "view size is not compatible", "run").errata == ()
    assert layout.judge_view_rule({**counts, "mismatch": 1}, "x", "run", "y").verdict is Verdict.FAILS
    assert layout.judge_view_rule(counts, "", "run").verdict is Verdict.FAILS


def test_layout_strides_prose_is_a_formula_erratum():
    wrong = layout.judge_notes_snippet(None, True, 13, "", ((3, 4), (4, 1), (1, 4)))
    assert wrong.verdict is Verdict.HOLDS
    assert [e.kind for e in wrong.errata] == [ErratumKind.WRONG_SHAPE_OR_FORMULA]
    # Strides as the notes say them: no erratum.
    assert layout.judge_notes_snippet(None, True, 13, "", ((3, 4), (3, 1), (3, 1))).errata == ()
    assert layout.judge_notes_snippet(None, False, 13, "", ((3, 4), (4, 1), (1, 4))).verdict is Verdict.FAILS


def test_layout_copies_and_timed_layouts():
    good = {"transposed_contiguous": ((48, 1), True, False, True), "clone": ((48, 1), True, False, True)}
    assert layout.judge_copies_are_row_major(good).verdict is Verdict.HOLDS
    shared = {**good, "transposed_contiguous": ((1, 64), False, True, True)}
    assert layout.judge_copies_are_row_major(shared).verdict is Verdict.FAILS
    assert layout.judge_timed_layouts({"row-major": True, "column-major": True}).verdict is Verdict.HOLDS
    assert layout.judge_timed_layouts({"row-major": True, "column-major": False}).verdict is Verdict.FAILS


# ---- memory.checkpoint -----------------------------------------------------------------------------


def test_checkpoint_toy_missing_super_init_raises_a_wrong_statement():
    f = memory.judge_notes_toy("cannot assign module before Module.__init__() call", True, "", True)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.WRONG_STATEMENT]
    assert memory.judge_notes_toy("cannot assign module", True, "", False).verdict is Verdict.FAILS


def test_checkpoint_rng_preserved():
    assert memory.judge_rng_preserved(0.0, 1.0, 4e-6).verdict is Verdict.HOLDS
    assert memory.judge_rng_preserved(1e-3, 1.0, 4e-6).verdict is Verdict.FAILS  # masks not replayed
    assert memory.judge_rng_preserved(0.0, 0.0, 4e-6).verdict is Verdict.FAILS  # flag did nothing


def test_checkpoint_segments_sweep_and_no_saving_block():
    sweep = {1: 63, 2: 32, 4: 18, 8: 14, 16: 18}
    f = memory.judge_segments_sweep(sweep, 63, 1, 16, 7.9, 3.9, 0.3, "cpu")
    assert f.verdict is Verdict.HOLDS
    flat = {k: 63 for k in sweep}
    assert memory.judge_segments_sweep(flat, 63, 1, 16, 7.9, 3.9, 0.3, "cpu").verdict is Verdict.FAILS
    assert memory.judge_no_saving_block(100, 100, 0.2, "cpu").verdict is Verdict.HOLDS
    assert memory.judge_no_saving_block(100, 50, 0.2, "cpu").verdict is Verdict.FAILS


def test_checkpoint_saves_inputs_only():
    grad = {True: False, False: True}
    assert (
        memory.judge_saves_inputs_only(32768, {True: 8192, False: 8192}, grad, 8192).verdict is Verdict.HOLDS
    )
    assert memory.judge_saves_inputs_only(32768, {True: 8192, False: 32768}, grad, 8192).verdict is (
        Verdict.FAILS
    )


def test_checkpoint_outputs_depend_on_the_mode():
    assert memory.judge_outputs({True: (True, False), False: (True, False)}).verdict is Verdict.HOLDS
    f = memory.judge_outputs({True: (True, False), False: (True, True)})
    assert f.verdict is Verdict.DEPENDS and "use_reentrant=True" in f.evidence
    assert memory.judge_outputs({True: (True, True), False: (True, True)}).verdict is Verdict.FAILS
    assert memory.judge_outputs({True: (False, False), False: (True, False)}).verdict is Verdict.FAILS


# ---- precision.amp ---------------------------------------------------------------------------------


def test_amp_scale_and_the_65535_erratum():
    f = amp.judge_scale_multiplies(8.0, 524288.0, 65536.0, [65536.0] * 4, 65536.0)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.WRONG_SHAPE_OR_FORMULA]
    assert "65536" in f.errata[0].evidence
    assert amp.judge_scale_multiplies(8.0, 524288.0, 65536.0, [65536.0] * 4, 65535.0).errata == ()
    unshared = amp.judge_scale_multiplies(8.0, 524288.0, 65536.0, [65536.0, 1.0], 65536.0)
    assert unshared.verdict is Verdict.FAILS


def test_amp_step_unscales_in_place():
    assert amp.judge_unscale_in_place(True, [1.0, 1.0], True, [1e-3, 1e-3], 1e-3).verdict is Verdict.HOLDS
    assert amp.judge_unscale_in_place(False, [1.0, 1.0], True, [1e-3, 1e-3], 1e-3).verdict is Verdict.FAILS
    scaled_step = amp.judge_unscale_in_place(True, [1.0, 1.0], True, [65.536, 65.536], 1e-3)
    assert scaled_step.verdict is Verdict.FAILS


def test_amp_state_machine_update_and_clip():
    assert amp.judge_double_unscale("already", "after step", None).verdict is Verdict.HOLDS
    assert amp.judge_double_unscale(None, "after step", None).verdict is Verdict.FAILS
    assert amp.judge_double_unscale("already", "after step", "still").verdict is Verdict.FAILS
    assert amp.judge_inf_skips_step(True, 32768.0, True).verdict is Verdict.HOLDS
    assert amp.judge_inf_skips_step(False, 32768.0, True).verdict is Verdict.FAILS
    assert amp.judge_inf_skips_step(True, 65536.0, True).verdict is Verdict.FAILS
    right = [1 - 1e-3 * 2**-0.5, 2 - 1e-3 * 2**-0.5]
    assert amp.judge_clip_after_unscale([2**-0.5] * 2, right, 0.0).verdict is Verdict.HOLDS
    assert amp.judge_clip_after_unscale([0.5, 0.5], right, 0.0).verdict is Verdict.FAILS
    assert amp.judge_fp16_needs_scaler(0.0, 8e-9, 8e-9).verdict is Verdict.HOLDS
    assert amp.judge_fp16_needs_scaler(8e-9, 8e-9, 8e-9).verdict is Verdict.FAILS


def test_amp_notes_usage_typo_and_enabled_flag():
    f = amp.judge_notes_usage("NameError: name 'opt' is not defined", True)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert amp.judge_notes_usage("", True).errata == ()
    assert amp.judge_notes_usage("", False).verdict is Verdict.FAILS


def test_amp_spellings_quote_each_api():
    f = amp.judge_spellings(
        ["`torch.cuda.amp.GradScaler(args...)` is deprecated", "autocast is deprecated"], "2"
    )
    assert [e.quote for e in f.errata] == ["torch.cuda.amp.GradScaler", "torch.cuda.amp.autocast"]


def test_amp_hedge_is_a_claim_over_every_size():
    case = get_case("precision.amp")
    assert len(case.sizes_for("quick")) >= 2
    (hedge,) = [c for c in case.claims if c.id == "not_necessarily_faster"]
    assert hedge.kind.value == "hedge"


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
