"""The judges of `cases/optim/scheduler_resume.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict


def test_scheduler_resume_raise_follows_the_observation():
    from cases.optim import scheduler_resume as sr

    f = sr.judge_resume_raises("\"param 'initial_lr' is not specified in param_groups[0] when resuming\"")
    assert f.verdict is Verdict.HOLDS
    assert sr.judge_resume_raises(None).verdict is Verdict.FAILS


def test_scheduler_resume_notes_recipe_is_judged_apart_from_the_technique():
    from cases.optim import scheduler_resume as sr

    exact, lrs_only, wrong = (True, True, 0.0125), (True, False, 0.0125), (False, False, 0.1)
    f = sr.judge_resume(0.0125, exact, exact, None, lrs_only, wrong, wrong)
    # The other load order failing is context, never the verdict.
    assert f.verdict is Verdict.HOLDS and not f.errata and "lr 0.1 at epoch" in f.evidence
    assert sr.judge_resume(0.0125, lrs_only, exact, None, lrs_only, wrong, wrong).verdict is Verdict.FAILS
    # The notes' recipe failing is an erratum of the notes; the technique done right decides.
    g = sr.judge_resume(0.0125, exact, wrong, None, lrs_only, wrong, wrong)
    assert g.verdict is Verdict.HOLDS and [e.kind for e in g.errata] == [ErratumKind.WRONG_STATEMENT]
    h = sr.judge_resume(0.0125, exact, (False, False, float("nan")), "'initial_lr'", wrong, wrong, wrong)
    assert h.verdict is Verdict.HOLDS and len(h.errata) == 2 and "KeyError" in h.errata[0].evidence
