"""Re-judged findings of layout, autograd, broadcasting, conv shapes, containers and training:
each verdict follows from its observation, each erratum appears only where the notes were
wrong, and an erratum never decides the verdict."""

from __future__ import annotations

from cases import layout
from harness.contract.record import ErratumKind, Verdict


def test_layout_is_contiguous_corners_are_formula_errata():
    f = layout.judge_notes_is_contiguous(True, "e", "empty view", "expand(1,)")
    assert f.verdict is Verdict.HOLDS
    assert [e.kind for e in f.errata] == [ErratumKind.WRONG_SHAPE_OR_FORMULA] * 2
    assert layout.judge_notes_is_contiguous(True, "e", "", "").errata == ()
    assert layout.judge_notes_is_contiguous(False, "e", "", "").verdict is Verdict.FAILS


def test_layout_reshape_and_view_statements_are_errata():
    counts = {"view": 5, "copy": 3, "view_of_noncontiguous": 2}
    f = layout.judge_reshape_rule(counts, "e", "x.reshape(2,)")
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert layout.judge_reshape_rule(counts, "e", "").errata == ()
    assert layout.judge_reshape_rule({**counts, "copy": 0}, "e", "").verdict is Verdict.FAILS
    views = {"views": 9, "noncontiguous_views": 0, "permutes": 4, "noncontiguous_permutes": 4}
    g = layout.judge_view_keeps_contiguity(views, "run")
    assert g.verdict is Verdict.HOLDS and g.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert layout.judge_view_keeps_contiguity({**views, "noncontiguous_views": 1}, "run").errata == ()
    assert layout.judge_view_keeps_contiguity({**views, "noncontiguous_permutes": 3}, "run").verdict is (
        Verdict.FAILS
    )


def test_layout_torch_range_is_a_deprecated_api_erratum():
    f = layout.judge_notes_snippet("range() missing end", True, 13)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.DEPRECATED_API
    assert layout.judge_notes_snippet(None, True, 13).errata == ()
    assert layout.judge_notes_snippet(None, False, 13).verdict is Verdict.FAILS


def test_autograd_ste_and_hook_errata_never_decide():
    from cases.autograd import custom_function, hooks

    f = custom_function.judge_ste_backward(True, 3.47)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_SHAPE_OR_FORMULA
    assert custom_function.judge_ste_backward(True, 0.0).errata == ()
    assert custom_function.judge_ste_backward(False, 0.0).verdict is Verdict.FAILS
    h = hooks.judge_notes_backward_hook(True, float("inf"), "Using a non-full backward hook", "shape")
    assert h.verdict is Verdict.HOLDS and h.errata[0].kind is ErratumKind.DEPRECATED_API
    assert hooks.judge_notes_backward_hook(True, 0.0, "", "").errata == ()
    assert hooks.judge_notes_backward_hook(False, 0.0, "", "").verdict is Verdict.FAILS


def test_broadcast_rule_one_is_an_erratum_and_rule_two_decides():
    from cases import broadcast

    counts = {"compatible": 120, "incompatible": 40}
    f = broadcast.judge_rules(counts, "run", "((), ())")
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert broadcast.judge_rules(counts, "run", "").errata == ()
    assert broadcast.judge_rules({**counts, "incompatible": 0}, "run", "").verdict is Verdict.FAILS


def test_vgg_containers_and_dropout2d_slips_are_errata():
    from cases.conv import shapes
    from cases.nn import containers
    from cases.train import modes

    v = shapes.judge_vgg16(138_357_544, [(1, (112, 112, 128), (112, 112, 64))], 17, 138_505_128)
    assert v.verdict is Verdict.HOLDS and len(v.errata) == 2
    assert shapes.judge_vgg16(138_357_544, [], 16, 138_357_544).errata == ()
    assert shapes.judge_vgg16(1, [], 16, 1).verdict is Verdict.FAILS
    n = containers.N
    rows = {"Net1": (2, 2, 30, 2 * n), "Net1Fixed": (2 * n, 2 * n, 30 * n, 2 * n)}
    c = containers.judge_shared_layer(rows, "SyntaxError")
    assert c.verdict is Verdict.HOLDS
    assert [e.kind for e in c.errata] == [ErratumKind.WRONG_STATEMENT, ErratumKind.TYPO]
    assert containers.judge_shared_layer({**rows, "Net1": rows["Net1Fixed"]}, "").errata == ()
    assert containers.judge_shared_layer({**rows, "Net1Fixed": rows["Net1"]}, "").verdict is Verdict.FAILS
    d = modes.judge_dropout2d(True, 120, 0, "e", 120)
    assert d.verdict is Verdict.HOLDS and d.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert modes.judge_dropout2d(True, 0, 120, "e", 120).errata == ()
    assert modes.judge_dropout2d(False, 0, 0, "e", 120).verdict is Verdict.FAILS


def test_grad_accumulation_judged_on_the_scaled_sum():
    from cases.train import grad_accumulation as ga

    f = ga.judge_accumulated(True, 6e-8, 4.0, "TypeError", "NameError")
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO] * 2
    assert [e.kind for e in ga.judge_accumulated(True, 6e-8, 4.0, "", "NameError").errata] == [
        ErratumKind.TYPO
    ]
    assert ga.judge_accumulated(True, 6e-8, 4.0, "", "").errata == ()
    assert ga.judge_accumulated(False, 0.25, 4.0, "", "").verdict is Verdict.FAILS
