"""The judges of `cases/precision/amp.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import get_case
from cases.precision import amp
from harness.contract.record import ErratumKind, Verdict

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


def test_typos_deprecations_and_wrong_statements_are_errata_in_every_id():
    from cases import jit
    from cases.misc import tensorboard
    from cases.precision import amp

    typo = tensorboard.judge_import_line(notes_line_imports=False, right_name_imports=True)
    assert typo.verdict is Verdict.HOLDS and typo.errata[0].kind is ErratumKind.TYPO
    assert tensorboard.judge_import_line(False, False).verdict is Verdict.FAILS
    assert not tensorboard.judge_import_line(True, True).errata
    deprecated = amp.judge_spellings(["torch.cuda.amp.autocast(args...) is deprecated"], "2.13.0")
    assert deprecated.verdict is None and deprecated.errata[0].kind is ErratumKind.DEPRECATED_API
    assert not amp.judge_spellings([], "2.13.0").errata
    scripted = jit.judge_deprecation(["torch.jit.script"], "deprecated", "2.13.0")
    assert scripted.verdict is None and scripted.errata[0].kind is ErratumKind.DEPRECATED_API
    assert not jit.judge_deprecation([], "", "2.13.0").errata
    statement = amp.judge_cpu_autocast(True, True)
    assert statement.verdict is None and statement.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert not amp.judge_cpu_autocast(False, True).errata
