"""Re-judged findings of layout, broadcasting rules, shape ops, gradient accumulation, train/eval
modes and containers: each verdict follows from its observation, each erratum appears only where
the notes were wrong, and an erratum never decides the verdict."""

from __future__ import annotations

from cases import layout
from harness.contract.record import ErratumKind, Verdict


def _kinds(finding):
    return [e.kind for e in finding.errata]


# ---- layout.contiguous ---------------------------------------------------------------------------


def test_layout_is_contiguous_snippet_indentation_is_a_typo_and_agreement_decides():
    f = layout.judge_notes_is_contiguous(
        True, "e", "empty view", "expand(1,)", snippet_error="IndentationError"
    )
    assert f.verdict is Verdict.HOLDS
    assert _kinds(f) == [ErratumKind.WRONG_SHAPE_OR_FORMULA] * 2 + [ErratumKind.TYPO]
    assert layout.judge_notes_is_contiguous(False, "e", "", "", "IndentationError").verdict is Verdict.FAILS
    assert layout.judge_notes_is_contiguous(True, "e", "", "", "").errata == ()


def test_layout_notes_snippet_compiles_only_once_repaired():
    assert "IndentationError" in layout._compile_error(layout.NOTES_IS_CONTIGUOUS_SOURCE)
    repaired = layout.NOTES_IS_CONTIGUOUS_SOURCE.replace("       else:", "      else:").replace("\t", "  ")
    assert layout._compile_error(repaired) == ""


def test_layout_view_rule_follows_the_brute_force_agreement():
    counts = {"ok": 265, "raised": 35, "mismatch": 0}
    assert layout.judge_view_rule(counts, "view size is not compatible", "run").verdict is Verdict.HOLDS
    assert layout.judge_view_rule({**counts, "mismatch": 1}, "x", "run").verdict is Verdict.FAILS
    assert layout.judge_view_rule(counts, "", "run").verdict is Verdict.FAILS  # transposed view did not raise
    assert layout.judge_view_rule({**counts, "raised": 0}, "x", "run").verdict is Verdict.FAILS


def test_layout_reshape_copies_and_view_statement():
    counts = {"view": 194, "copy": 35, "view_of_noncontiguous": 13, "mismatch": 0}
    f = layout.judge_reshape_rule(counts, "e", "t().reshape(2,2,3) shares storage")
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.WRONG_STATEMENT]
    assert layout.judge_reshape_rule(counts, "e", "").errata == ()
    assert layout.judge_reshape_rule({**counts, "mismatch": 2}, "e", "").verdict is Verdict.FAILS
    assert (
        layout.judge_contiguous_copies({"self": 9, "copied": 3, "mismatch": 0}, "r").verdict is Verdict.HOLDS
    )
    assert (
        layout.judge_contiguous_copies({"self": 9, "copied": 3, "mismatch": 1}, "r").verdict is Verdict.FAILS
    )
    views = {
        "views": 9,
        "noncontiguous_views": 0,
        "source_changed": 0,
        "permutes": 4,
        "noncontiguous_permutes": 4,
    }
    g = layout.judge_view_keeps_contiguity(views, "run")
    assert g.verdict is Verdict.HOLDS and _kinds(g) == [ErratumKind.WRONG_STATEMENT]
    assert layout.judge_view_keeps_contiguity({**views, "source_changed": 9}, "run").errata == ()


def test_layout_torch_range_deprecation_is_observed():
    f = layout.judge_notes_snippet(None, True, 13, deprecation="torch.range is deprecated")
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.DEPRECATED_API]
    assert layout.judge_notes_snippet(None, True, 12, deprecation="").errata == ()
    assert layout.judge_notes_snippet("missing end", False, 13, "").verdict is Verdict.FAILS


# ---- broadcast.rules -----------------------------------------------------------------------------


def test_broadcast_rule_two_decides_and_rule_one_is_a_wrong_statement():
    from cases import broadcast

    counts = {"compatible": 127, "incompatible": 38, "mismatch": 0}
    f = broadcast.judge_rules(counts, "run", "((), ()) broadcasts to ()")
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.WRONG_STATEMENT]
    assert broadcast.judge_rules(counts, "run", "").errata == ()  # had 0-dim tensors refused, rule 1 stands
    assert broadcast.judge_rules({**counts, "mismatch": 1}, "run", "x").verdict is Verdict.FAILS
    assert broadcast.judge_rules({**counts, "compatible": 0}, "run", "").verdict is Verdict.FAILS
    assert broadcast.judge_notes_examples(True, (5, 5, 3), True).verdict is Verdict.HOLDS
    assert broadcast.judge_notes_examples(True, (5, 5, 3), False).verdict is Verdict.FAILS
    assert broadcast.judge_notes_examples(False, (5, 5, 3), True).verdict is Verdict.FAILS


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


def test_shape_unbatched_inputs_make_the_minibatch_claim_a_wrong_statement():
    from cases import shape

    seen = {"Conv2d": ((3, 7, 7), (4, 5, 5), "equals the batch of one"), "Linear": ((6,), (2,), "equals")}
    f = shape.judge_unbatched_inputs(True, seen)
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.WRONG_STATEMENT]
    refused = {"Conv2d": ((3, 7, 7), None, "Expected 4D input"), "Linear": ((6,), None, "shapes")}
    assert shape.judge_unbatched_inputs(True, refused).errata == ()  # an older torch: the notes were right
    assert shape.judge_unbatched_inputs(False, seen).verdict is Verdict.FAILS


# ---- train.grad_accumulation ---------------------------------------------------------------------


def test_grad_accumulation_slips_are_typos_only_when_observed():
    from cases.train import grad_accumulation as ga

    f = ga.judge_accumulated(True, 6e-8, 4.0, "TypeError (forward() takes 2)", "NameError (optimizer)")
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.TYPO, ErratumKind.TYPO]
    assert ga.judge_accumulated(True, 6e-8, 4.0, "", "").errata == ()
    assert ga.judge_accumulated(True, 6e-8, 1.0, "", "").verdict is Verdict.HOLDS  # the 4x never decides
    assert ga.judge_accumulated(False, 0.25, 4.0, "", "").verdict is Verdict.FAILS


def test_grad_accumulation_runs_the_notes_function_as_written():
    import torch

    from cases.train import grad_accumulation as ga

    net, x, y = ga._setup(torch.device("cpu"))
    mse = torch.nn.functional.mse_loss
    assert ga._run_notes(ga.NOTES_SOURCE, ga._copy(net), x, y, mse).startswith("NameError")
    renamed = ga.NOTES_SOURCE.replace("epochoptimizer", "optimizer")
    assert ga._run_notes(renamed, ga._copy(net), x, y, mse).startswith("TypeError")
    assert ga._run_notes(ga.NOTES_FIXED_SOURCE, ga._copy(net), x, y, mse) == ""


def test_zero_grad_once_per_step_decides_and_once_per_run_is_context():
    from cases.train import grad_accumulation as ga

    f = ga.judge_zero_grad_placement(0.0, 1.55, True)
    assert f.verdict is Verdict.HOLDS and "g1+g2" in f.evidence
    assert ga.judge_zero_grad_placement(0.0, 0.0, False).verdict is Verdict.HOLDS
    assert ga.judge_zero_grad_placement(0.3, 1.55, True).verdict is Verdict.FAILS


# ---- train.modes ---------------------------------------------------------------------------------


def test_dropout_scale_follows_the_observed_rate_and_scaling():
    from cases.train import modes

    ok = modes.judge_dropout_scale(0.3, 200_000, 0.3, 1e-7, 4.3e-5, True, 1.0)
    assert ok.verdict is Verdict.HOLDS
    assert modes.judge_dropout_scale(0.3, 200_000, 0.35, 1e-7, 4.3e-5, True, 1.0).verdict is Verdict.FAILS
    assert modes.judge_dropout_scale(0.3, 200_000, 0.3, 0.3, 4.3e-5, True, 1.0).verdict is Verdict.FAILS
    assert modes.judge_dropout_scale(0.3, 200_000, 0.3, 1e-7, 4.3e-5, False, 1.0).verdict is Verdict.FAILS


def test_dropout2d_wording_is_an_erratum_and_whole_channels_decide():
    from cases.train import modes

    d = modes.judge_dropout2d(True, 120, 0, "e", 120)
    assert d.verdict is Verdict.HOLDS and _kinds(d) == [ErratumKind.WRONG_STATEMENT]
    assert modes.judge_dropout2d(True, 0, 120, "e", 120).errata == ()  # had positions been zeroed whole
    assert modes.judge_dropout2d(False, 120, 0, "e", 120).verdict is Verdict.FAILS


def test_batchnorm_and_default_mode_follow_the_hand_computation():
    from cases.train import modes

    close = {"momentum=0.1 running_mean": True, "momentum=None is the cumulative average": True}
    assert modes.judge_batchnorm(close, True, "n").verdict is Verdict.HOLDS
    f = modes.judge_batchnorm({**close, "momentum=0.1 running_mean": False}, True, "n")
    assert f.verdict is Verdict.FAILS and "running_mean" in f.evidence
    assert modes.judge_batchnorm(close, False, "n").verdict is Verdict.FAILS
    assert modes.judge_default_mode(True, True, True, 5).verdict is Verdict.HOLDS
    assert modes.judge_default_mode(False, True, True, 5).verdict is Verdict.FAILS
    assert modes.judge_default_mode(True, True, False, 5).verdict is Verdict.FAILS


# ---- nn.containers -------------------------------------------------------------------------------


def test_containers_repeated_module_is_an_erratum_with_the_counts():
    from cases.nn import containers

    n = containers.N
    rows = {"Net1": (2, 2, 30, 2 * n), "Net2": (2, 2, 30, 2 * n), "Net1Fixed": (2 * n, 2 * n, 30 * n, 2 * n)}
    c = containers.judge_shared_layer(rows, "SyntaxError (invalid syntax)", True)
    assert c.verdict is Verdict.HOLDS
    assert _kinds(c) == [ErratumKind.WRONG_STATEMENT, ErratumKind.TYPO]
    assert "2 parameter tensors" in c.errata[0].evidence and "changed layer 3" in c.errata[0].evidence
    independent = {**rows, "Net1": rows["Net1Fixed"]}
    assert containers.judge_shared_layer(independent, "", False).errata == ()
    assert containers.judge_shared_layer({**rows, "Net1Fixed": rows["Net1"]}, "").verdict is Verdict.FAILS


def test_modulelist_vs_sequential_follows_order_calling_and_registration():
    from cases.nn import containers

    n = containers.N
    ok = containers.judge_modulelist_vs_sequential(True, "NotImplementedError", (2 * n, 2 * n), 0, True)
    assert ok.verdict is Verdict.HOLDS and ok.errata == ()
    assert containers.judge_modulelist_vs_sequential(
        False, "NotImplementedError", (8, 8), 0, True
    ).verdict is (Verdict.FAILS)
    assert containers.judge_modulelist_vs_sequential(True, "", (8, 8), 0, True).verdict is Verdict.FAILS
    assert containers.judge_modulelist_vs_sequential(
        True, "NotImplementedError", (8, 8), 8, True
    ).verdict is (Verdict.FAILS)
