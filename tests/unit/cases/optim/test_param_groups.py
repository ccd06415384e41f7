"""The judges of `cases/optim/param_groups.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases.optim import param_groups
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


def test_param_groups_init_snippet_slips_are_typos():
    from cases.optim import param_groups as pg

    f = pg.judge_apply_init(True, True, "a leaf Variable", "TypeError", False, "name 'tirch' is not defined")
    assert (
        f.verdict is Verdict.HOLDS
        and [e.kind for e in f.errata] == [ErratumKind.WRONG_STATEMENT] + [ErratumKind.TYPO] * 3
    )
    assert "tirch" in f.errata[-1].quote
    assert pg.judge_apply_init(True, True, None, None, True, None).errata == ()
    assert pg.judge_apply_init(False, True, None, None, True, None).verdict is Verdict.FAILS


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


def test_param_groups_fill_without_no_grad_is_a_wrong_statement_the_misspellings_typos():
    from cases.optim import param_groups as pg

    f = pg.judge_apply_init(True, True, "a leaf Variable", "TypeError", False, "name 'tirch' is not defined")
    assert f.verdict is Verdict.HOLDS
    assert _kinds(f) == [ErratumKind.WRONG_STATEMENT] + [ErratumKind.TYPO] * 3
    assert "[no torch.no_grad()]" in f.errata[0].quote
    assert pg.judge_apply_init(True, False, "a leaf Variable", None, True).verdict is Verdict.FAILS


def test_param_groups_init_slips_are_typos_and_apply_decides():
    f = param_groups.judge_apply_init(True, True, "a leaf Variable", "TypeError", False)
    assert (
        f.verdict is Verdict.HOLDS
        and [e.kind for e in f.errata] == [ErratumKind.WRONG_STATEMENT] + [ErratumKind.TYPO] * 2
    )
    assert param_groups.judge_apply_init(True, True, None, None, True).errata == ()
    assert param_groups.judge_apply_init(True, False, None, None, True).verdict is Verdict.FAILS
