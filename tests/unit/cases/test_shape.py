"""The judges of `cases/shape.py`: each verdict follows from what its check observed (a different observation
gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict


def _kinds(finding):
    return [e.kind for e in finding.errata]


# ---- shape.ops -----------------------------------------------------------------------------------


def test_shape_ops_verdicts_follow_the_observed_shapes():
    from cases import shape

    assert shape.judge_unsqueeze(((1, 2, 3), (2, 1, 3), (2, 3, 1)), True).verdict is Verdict.HOLDS
    assert shape.judge_unsqueeze(((2, 3, 1), (2, 1, 3), (2, 3, 1)), True).verdict is Verdict.FAILS
    stacked = [((4, 2, 3), True), ((2, 4, 3), True), ((2, 3, 4), True)]
    assert shape.judge_cat_stack(stacked, "IndexError", ((8, 3), (2, 12))).verdict is Verdict.HOLDS
    assert shape.judge_cat_stack(stacked, "IndexError", ((4, 2, 3), (2, 12))).verdict is Verdict.FAILS
    # bmm's error is in units of its fp32 bound γ₃·Σ|x||y|: measured 0.32; 2.5 bounds off fails.
    assert shape.judge_bmm((5, 2, 4), 0.32, False, (5, 2, 4)).verdict is Verdict.HOLDS
    assert shape.judge_bmm((5, 2, 4), 2.5, False, (5, 2, 4)).verdict is Verdict.FAILS
    assert shape.judge_index_none(True, True, (2, 1, 4), (8, 1)).verdict is Verdict.HOLDS
    assert shape.judge_index_none(False, True, (2, 1, 4), (8, 1)).verdict is Verdict.FAILS


def test_shape_flatten_spelling_is_a_typo_and_the_defaults_decide():
    from cases import shape

    f = shape.judge_flatten((2, 60), (120,), (1, -1), "SyntaxError (keyword argument repeated: dim)")
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.TYPO]
    assert shape.judge_flatten((2, 60), (120,), (1, -1), "").errata == ()
    assert shape.judge_flatten((120,), (120,), (0, -1), "").verdict is Verdict.FAILS


def test_shape_pad_orders_are_judged_against_padding_by_hand():
    from cases import shape

    trials = {"np": 24, "np_ok": 24, "F": 24, "F_ok": 24, "axis_order_differs": 15}
    f = shape.judge_pad(trials, True, (3, 22))
    assert f.verdict is Verdict.HOLDS and f.errata == ()  # the notes describe only np.pad's order
    assert shape.judge_pad({**trials, "F_ok": 23}, True, (3, 22)).verdict is Verdict.FAILS
    assert shape.judge_pad({**trials, "np_ok": 0}, True, (3, 22)).verdict is Verdict.FAILS
    assert shape.judge_pad(trials, False, (3, 22)).verdict is Verdict.FAILS


def test_shape_pad_by_hand_is_an_independent_truth():
    import numpy as np

    from cases import shape

    x = np.arange(1.0, 7.0).reshape(2, 3)
    out = shape._pad_by_hand(x, [(1, 0), (0, 2)])
    assert out.shape == (3, 5) and out[0].sum() == 0 and (out[1:, :3] == x).all() and out[:, 3:].sum() == 0
    assert shape._torch_pad_arg([(1, 0), (0, 2)]) == (0, 2, 1, 0)


def test_shape_unbatched_inputs_make_the_minibatch_claim_fail():
    from cases import shape

    seen = {"Conv2d": ((3, 7, 7), (4, 5, 5), "equals the batch of one"), "Linear": ((6,), (2,), "equals")}
    f = shape.judge_unbatched_inputs(True, seen)
    assert f.verdict is Verdict.FAILS and f.errata == () and "Conv2d and Linear" in f.evidence
    one = {**seen, "Linear": ((6,), None, "shapes")}
    assert shape.judge_unbatched_inputs(True, one).verdict is Verdict.FAILS
    refused = {"Conv2d": ((3, 7, 7), None, "Expected 4D input"), "Linear": ((6,), None, "shapes")}
    assert shape.judge_unbatched_inputs(True, refused).verdict is Verdict.HOLDS  # an older torch
    assert shape.judge_unbatched_inputs(False, refused).verdict is Verdict.FAILS


def test_shape_minibatch_claim_quotes_the_whole_statement():
    from cases import get_case

    (claim,) = [c for c in get_case("shape.ops").claims if c.id == "minibatch_first"]
    assert claim.quote.startswith("nn.Module的所有模块都是带有minibatch的")
