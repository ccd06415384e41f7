"""The judges of `cases/rnn.py`: each verdict follows from what its check observed (a different observation
gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import rnn
from harness.contract.record import ErratumKind, Verdict


def test_rnn_no_detach_and_growth_follow_the_observation():
    from cases import rnn

    second = (2, "Trying to backward through the graph a second time")
    assert rnn.judge_no_detach(second, "step 2 raises 'one of the variables'").verdict is Verdict.HOLDS
    assert rnn.judge_no_detach(None, "ran without error").verdict is Verdict.FAILS
    assert rnn.judge_no_detach((3, second[1]), "").verdict is Verdict.FAILS
    assert rnn.judge_growth([52, 208, 364], [52, 52, 52], 19e3, 0.0, "d").verdict is Verdict.HOLDS
    flat = rnn.judge_growth([52, 52, 52], [52, 52, 52], 19e3, 0.0, "d")
    assert flat.verdict is Verdict.FAILS and "linearly" in flat.evidence
    assert rnn.judge_growth([52, 208, 364], [52, 104, 156], 19e3, 0.0, "d").verdict is Verdict.FAILS
    assert rnn.judge_growth([52, 208, 364], [52, 52, 52], 19e3, 40e3, "d").verdict is Verdict.FAILS


def test_rnn_in_place_reset_is_context_and_never_decides():
    from cases import rnn

    f = rnn.judge_data_vs_detach(True, 4.63, "one of the variables needed for gradient computation")
    assert f.verdict is Verdict.HOLDS and not f.errata and "4.63" in f.evidence
    # Whatever the reset does, the notes' claim (the same cut) decides.
    assert rnn.judge_data_vs_detach(True, "raised too", 0.0).verdict is Verdict.HOLDS
    assert rnn.judge_data_vs_detach(False, 4.63, "x").verdict is Verdict.FAILS


def test_rnn_notes_forward_errata_kinds_and_the_fixed_loop():
    from cases import rnn

    f = rnn.judge_notes_forward(
        "'NoneType' object has no attribute 'data'",
        True,
        "mat1 and mat2 shapes cannot be multiplied (2x8 and 1x1)",
        "'tuple' object has no attribute 'data'",
    )
    assert f.verdict is Verdict.HOLDS
    kinds = {e.quote.split()[0]: e.kind for e in f.errata}
    assert kinds == {
        "return": ErratumKind.TYPO,
        "self.out": ErratumKind.WRONG_SHAPE_OR_FORMULA,
        "#": ErratumKind.WRONG_STATEMENT,
    }
    assert all("attribute" in e.evidence or "mat1" in e.evidence for e in f.errata)
    assert rnn.judge_notes_forward("", True, "", "").errata == ()
    assert rnn.judge_notes_forward("", False, "", "").verdict is Verdict.FAILS


def test_rnn_lstm_without_commas_is_a_typo():
    f = rnn.judge_notes_forward("", True, "", "", "invalid syntax (line 3)")
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert rnn.judge_notes_forward("", False, "", "", "invalid syntax").verdict is Verdict.FAILS


def test_rnn_forward_slips_are_errata_and_the_fixed_loop_decides():
    f = rnn.judge_notes_forward("'NoneType' has no attribute 'data'", True, "mat1 and mat2", "'tuple'")
    assert f.verdict is Verdict.HOLDS
    assert [e.kind for e in f.errata] == [
        ErratumKind.TYPO,
        ErratumKind.WRONG_SHAPE_OR_FORMULA,
        ErratumKind.WRONG_STATEMENT,
    ]
    assert rnn.judge_notes_forward("", True, "", "").errata == ()
    assert rnn.judge_notes_forward("", False, "", "").verdict is Verdict.FAILS


def test_rnn_data_vs_detach_judged_on_the_notes_use_only():
    assert rnn.judge_data_vs_detach(True, 4.6).verdict is Verdict.HOLDS
    assert rnn.judge_data_vs_detach(False, 4.6).verdict is Verdict.FAILS
