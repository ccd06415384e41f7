"""The judges of `cases/onehot.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import onehot
from harness.contract.record import ErratumKind, Verdict


def test_onehot_names_judged_on_the_observed_shapes_and_dtype():
    seen = ((6, 4), "torch.int64", (2, 3, 5))
    f = onehot.judge_notes_names(*seen, ["torch.functional.one_hot"], "2.13.0")
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.TYPO
    assert onehot.judge_notes_names((6, 3), "torch.int64", (2, 3, 5), [], "2").verdict is Verdict.FAILS
    # The dtype is reported, never held against the notes (they state none).
    assert onehot.judge_notes_names((6, 4), "torch.float32", (2, 3, 5), [], "2").verdict is Verdict.HOLDS
    assert onehot.judge_notes_names((6, 4), "torch.int64", (6, 5), [], "2").verdict is Verdict.FAILS


def test_onehot_scatter_formula_follows_the_examples():
    assert onehot.judge_scatter_formula(150, [], [0, 1, 2], "run").verdict is Verdict.HOLDS
    assert (
        onehot.judge_scatter_formula(150, [((2, 2, 2), 0, (1, 1, 1))], [0, 1, 2], "r").verdict
        is Verdict.FAILS
    )
    assert onehot.judge_scatter_formula(150, [], [0, 1], "run").verdict is Verdict.FAILS
    assert onehot.judge_scatter_formula(0, [], [], "run").verdict is Verdict.FAILS


def test_onehot_names_are_errata_and_the_semantics_decide():
    seen = ((6, 4), "torch.int64", (2, 3, 5))
    f = onehot.judge_notes_names(*seen, ["torch.one_hot"], "2.13.0")
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert not onehot.judge_notes_names(*seen, [], "9.9").errata
    assert onehot.judge_notes_names((6, 3), "torch.int64", (2, 3, 5), [], "2.13.0").verdict is Verdict.FAILS


def test_onehot_snippet_slips_are_errata_and_the_repaired_scatter_decides():
    slips = [
        (ErratumKind.RAISES, "src = torch.ones_like(label)", "RuntimeError"),
        (ErratumKind.TYPO, "torch.to_numpy", "no such function"),
    ]
    f = onehot.judge_notes_snippet(slips, True)
    assert f.verdict is Verdict.HOLDS
    assert [e.kind for e in f.errata] == [ErratumKind.RAISES, ErratumKind.TYPO]
    assert onehot.judge_notes_snippet([], True).errata == ()
    # A scatter along the wrong dim (or ones written where the labels are not) is no one-hot.
    assert onehot.judge_notes_snippet(slips, False).verdict is Verdict.FAILS
