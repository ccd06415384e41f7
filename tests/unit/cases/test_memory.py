"""The judges of `cases/memory.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import memory
from harness.contract.record import ErratumKind, Verdict

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


def test_checkpoint_toy_slips_are_errata_and_the_gradients_decide():
    from cases import memory

    f = memory.judge_notes_toy("cannot assign module", False, "pass use_reentrant explicitly", True)
    assert f.verdict is Verdict.HOLDS
    assert [e.kind for e in f.errata] == [ErratumKind.WRONG_STATEMENT, ErratumKind.DEPRECATED_API]
    assert memory.judge_notes_toy("", True, "", True).errata == ()
    assert memory.judge_notes_toy("", True, "", False).verdict is Verdict.FAILS
