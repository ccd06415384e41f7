"""The judges of `cases/optim/param_groups.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict


def test_param_groups_yolov5_and_add_param_group_follow_the_observation():
    from cases.optim import param_groups as pg

    right = ((2, 3, 4), True, [0, 5e-4, 0], [0, 5e-4, 0], True, True, True)
    assert pg.judge_yolov5_grouping(*right).verdict is Verdict.HOLDS
    decayed_bias = pg.judge_yolov5_grouping((2, 3, 4), True, [0, 5e-4, 0], [0, 5e-4, 0], True, True, False)
    assert decayed_bias.verdict is Verdict.FAILS and "bit-identical" in decayed_bias.evidence
    twice = pg.judge_yolov5_grouping((2, 3, 4), False, [0, 5e-4, 0], [0, 5e-4, 0], True, True, True)
    assert twice.verdict is Verdict.FAILS
    dup, as_set = "some parameters appear in more than one parameter group", "need ordered collections"
    assert pg.judge_add_param_group(dup, as_set, [0.1, 0.5, 0.1], [0.1, 0.5, 0.1]).verdict is Verdict.HOLDS
    assert pg.judge_add_param_group(None, as_set, [0.1, 0.5, 0.1], [0.1, 0.5, 0.1]).verdict is Verdict.FAILS
    assert pg.judge_add_param_group(dup, as_set, [0.1, 0.5, 0.5], [0.1, 0.5, 0.1]).verdict is Verdict.FAILS


def test_param_groups_freezing_is_judged_on_the_notes_scenario():
    from cases.optim import param_groups as pg

    both = {"filter(requires_grad)": True, "all parameters": True}
    # A param frozen after training drifting is context: it never decides.
    f = pg.judge_freezing(both, 7, True, 0.0577)
    assert f.verdict is Verdict.HOLDS and "0.0577" in f.evidence
    assert pg.judge_freezing({**both, "all parameters": False}, 7, True, 0.0).verdict is Verdict.FAILS
    assert pg.judge_freezing(both, 7, False, 0.0).verdict is Verdict.FAILS


def _kinds(finding):
    return [e.kind for e in finding.errata]


# ---- optim.param_groups --------------------------------------------------------------------------


def test_param_groups_add_param_group_typo_and_verdict():
    from cases.optim import param_groups as pg

    dup, as_set = "some parameters appear in more than one parameter group", "ordered collections"
    f = pg.judge_add_param_group(dup, as_set, [0.1, 0.5], [0.1, 0.5], param_group_exists=False)
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.TYPO]
    assert pg.judge_add_param_group(dup, as_set, [0.1, 0.5], [0.1, 0.5]).errata == ()
    assert pg.judge_add_param_group(None, as_set, [0.1, 0.5], [0.1, 0.5]).verdict is Verdict.FAILS


RAISED = "RuntimeError: a leaf Variable that requires grad is being used in an in-place operation."


def test_param_groups_apply_init_fails_where_the_notes_snippets_raise():
    from cases.optim import param_groups as pg

    # What torch does: fill_ on a parameter outside no_grad raises, so the notes' recipe fails,
    # and the evidence says the no_grad form works.
    f = pg.judge_apply_init(RAISED, RAISED, True, True, "TypeError", "name 'tirch' is not defined")
    assert f.verdict is Verdict.FAILS and "inside torch.no_grad()" in f.evidence and "use that" in f.evidence
    assert _kinds(f) == [ErratumKind.TYPO, ErratumKind.TYPO] and "tirch" in f.errata[-1].quote
    # One snippet raising is enough.
    assert pg.judge_apply_init(None, RAISED, True, True, None, None).verdict is Verdict.FAILS
    # A torch where the notes' snippets ran and initialised would hold, with no errata.
    ok = pg.judge_apply_init(None, None, True, True, None, None)
    assert ok.verdict is Verdict.HOLDS and ok.errata == ()
    # apply() visiting the parent first, or not reaching every Linear, fails.
    assert pg.judge_apply_init(None, None, True, False, None, None).verdict is Verdict.FAILS
    assert pg.judge_apply_init(None, None, False, True, None, None).verdict is Verdict.FAILS


def test_param_groups_apply_init_check_runs_the_notes_text():
    import torch

    from cases.optim import param_groups as pg

    f = pg.check_apply_init(torch.device("cpu"))
    assert f.verdict is Verdict.FAILS and "leaf Variable" in f.evidence
    assert all("appply" not in e.quote for e in f.errata)  # the notes' snippets check lists it


def test_param_groups_add_param_group_fails_where_a_set_or_a_wrong_default_gets_through():
    from cases.optim import param_groups as pg

    dup = "some parameters appear in more than one parameter group"
    assert pg.judge_add_param_group(dup, None, [0.1, 0.5, 0.1], [0.1, 0.5, 0.1]).verdict is Verdict.FAILS
    # A group without its own lr that did not take the optimizer's default.
    wrong = pg.judge_add_param_group(dup, "ordered collections", [0.1, 0.5, 0.0], [0.1, 0.5, 0.1])
    assert wrong.verdict is Verdict.FAILS
