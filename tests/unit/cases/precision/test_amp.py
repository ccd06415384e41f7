"""The judges of `cases/precision/amp.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import get_case
from cases.precision import amp
from harness.contract.record import ErratumKind, Verdict

# ---- precision.amp ---------------------------------------------------------------------------------


def test_amp_scale_and_the_65535_typo():
    f = amp.judge_scale_multiplies(8.0, 524288.0, 65536.0, [65536.0] * 4, 65536.0)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
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


def test_amp_enabled_flag_judged_on_both_halves():
    # enabled=False equal to plain training, enabled=True casting and scaling on CUDA: holds.
    assert amp.judge_notes_usage(True, "float16", True, "cuda").verdict is Verdict.HOLDS
    # A loop whose disabled run drifts from plain training: fails wherever it runs.
    assert amp.judge_notes_usage(False, "float32", False, "cpu").verdict is Verdict.FAILS
    # On CUDA, use_amp = True that leaves the model in float32 or the scaler off: fails.
    assert amp.judge_notes_usage(True, "float32", True, "cuda").verdict is Verdict.FAILS
    assert amp.judge_notes_usage(True, "float16", False, "cuda").verdict is Verdict.FAILS
    # On a CPU torch.cuda.amp casts nothing: the True half depends on CUDA.
    cpu = amp.judge_notes_usage(True, "float32", False, "cpu")
    assert cpu.verdict is Verdict.NOT_MEASURED and "needs CUDA" in cpu.evidence
    # The `opt.zero_grad()` slip is listed once, by the notes' snippet check, not here.
    assert cpu.errata == ()


def test_amp_spellings_are_one_erratum_on_their_line():
    f = amp.judge_spellings(
        ["`torch.cuda.amp.GradScaler(args...)` is deprecated", "autocast is deprecated"], "2"
    )
    assert [e.kind for e in f.errata] == [ErratumKind.DEPRECATED_API]
    assert "GradScaler" in f.errata[0].quote and "autocast" in f.errata[0].quote
    assert "autocast is deprecated" in f.errata[0].evidence


def test_amp_gpu_only_is_a_claim_that_fails_where_the_cpu_trains():
    fails = amp.judge_cpu_autocast(True, 4e-4, True)
    assert fails.verdict is Verdict.FAILS and fails.errata == ()
    # A torch whose CPU autocast casts nothing bears the notes out.
    assert amp.judge_cpu_autocast(False, 0.0, False).verdict is Verdict.HOLDS
    # Casting, but a run off by more than 3u_bf16: not settled by this machine.
    assert amp.judge_cpu_autocast(True, 0.5, True).verdict is Verdict.DEPENDS


def test_amp_claims_on_the_notes_objects_run_on_cuda_only():
    from harness.contract import rules

    case = get_case("precision.amp")
    deciding = {n for n, v in case.variants.items() if v.claim == "trains_like_fp32"}
    assert deciding == {"transformer.amp_notes", "convnet.amp_notes"}
    assert all(case.variants[n].requires == ("cuda",) for n in deciding)
    (hedge,) = [n for n in rules.claimed(case.verdict) if n.claim == "not_necessarily_faster"]
    assert {r.fast for r in rules.speed_rules(hedge)} == {"transformer.amp_notes"}


def test_amp_hedge_is_a_claim_over_every_size():
    case = get_case("precision.amp")
    assert len(case.sizes_for("quick")) >= 2
    (hedge,) = [c for c in case.claims if c.id == "not_necessarily_faster"]
    assert hedge.kind.value == "hedge"


def test_typos_and_deprecations_are_errata_and_a_false_statement_is_not():
    from cases import jit
    from cases.misc import tensorboard
    from cases.precision import amp

    # The misspelled import line is the snippets check's erratum (one fault, one erratum): the
    # case's judge reports it and lists none.
    imports = tensorboard.judge_import_line(notes_line_imports=False, right_name_imports=True)
    assert imports.verdict is Verdict.HOLDS and imports.errata == ()
    assert tensorboard.judge_import_line(False, False).verdict is Verdict.FAILS
    assert not tensorboard.judge_import_line(True, True).errata
    deprecated = amp.judge_spellings(["torch.cuda.amp.autocast(args...) is deprecated"], "2.13.0")
    assert deprecated.verdict is None and deprecated.errata[0].kind is ErratumKind.DEPRECATED_API
    assert not amp.judge_spellings([], "2.13.0").errata
    scripted = jit.judge_deprecation(["torch.jit.script"], "deprecated", "2.13.0")
    assert scripted.verdict is None and scripted.errata[0].kind is ErratumKind.DEPRECATED_API
    assert not jit.judge_deprecation([], "", "2.13.0").errata
    assert amp.judge_cpu_autocast(True, 4e-4, True).errata == ()


def test_amp_update_from_ready_raises_so_the_table_fails():
    ready = "READY"
    # Observed with torch 2.13: update() right after scale(loss).backward() raises.
    raised = {
        "READY": "raises AssertionError: No inf checks were recorded prior to update.",
        "UNSCALED": ready,
    }
    raised["STEPPED"] = ready
    f = amp.judge_update_from_each_state(raised)
    assert f.verdict is Verdict.FAILS and "from READY" in f.evidence
    # A GradScaler whose update() takes every state to READY, as the notes' table says: holds.
    assert amp.judge_update_from_each_state(
        dict.fromkeys(("READY", "UNSCALED", "STEPPED"), ready)
    ).verdict is (Verdict.HOLDS)
    # One that leaves STEPPED behind: fails.
    stuck = {"READY": ready, "UNSCALED": ready, "STEPPED": "STEPPED"}
    assert amp.judge_update_from_each_state(stuck).verdict is Verdict.FAILS
