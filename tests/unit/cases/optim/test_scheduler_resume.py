"""The judges of `cases/optim/scheduler_resume.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict


def test_scheduler_resume_raise_follows_the_observation():
    from cases.optim import scheduler_resume as sr

    f = sr.judge_resume_raises("\"param 'initial_lr' is not specified in param_groups[0] when resuming\"")
    assert f.verdict is Verdict.HOLDS
    # A torch that builds the scheduler silently (or raises about something else) fails the notes.
    assert sr.judge_resume_raises(None).verdict is Verdict.FAILS
    assert sr.judge_resume_raises("'lr'").verdict is Verdict.FAILS


EXACT, LRS_ONLY, WRONG = (True, True, 0.0125), (True, False, 0.0125), (False, False, 0.1)


def test_scheduler_resume_is_decided_by_the_notes_two_fixes():
    from cases.optim import scheduler_resume as sr

    # Both of the notes' fixes resume the schedule: holds, whatever the context rows show.
    f = sr.judge_resume(0.0125, WRONG, EXACT, None, LRS_ONLY, WRONG, WRONG, base_lr_exists=True)
    assert f.verdict is Verdict.HOLDS and not f.errata and "lr 0.1 at epoch" in f.evidence
    # The notes' state-dict fix resuming at another lr, or raising, fails, though the better way works.
    g = sr.judge_resume(0.0125, EXACT, WRONG, None, LRS_ONLY, WRONG, WRONG, base_lr_exists=True)
    assert g.verdict is Verdict.FAILS and "NOT the uninterrupted" in g.evidence and not g.errata
    raised = (False, False, float("nan"))
    h = sr.judge_resume(0.0125, EXACT, raised, "'initial_lr'", LRS_ONLY, WRONG, WRONG, base_lr_exists=True)
    assert h.verdict is Verdict.FAILS and "raises KeyError" in h.evidence
    # initial_lr by hand resuming at another lr fails too.
    assert sr.judge_resume(0.0125, EXACT, EXACT, None, WRONG, WRONG, WRONG, True).verdict is Verdict.FAILS


def test_scheduler_resume_base_lr_is_a_typo():
    from cases.optim import scheduler_resume as sr

    f = sr.judge_resume(0.0125, EXACT, EXACT, None, LRS_ONLY, WRONG, WRONG, base_lr_exists=False)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert "base_lrs" in f.errata[0].evidence
