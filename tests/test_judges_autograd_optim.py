"""Re-judged findings of the autograd, optimizer, state, RNN and GAN cases: each verdict follows
from what its check observed, a different observation gives a different verdict, and an erratum
appears only where the notes as written were wrong."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict


def test_custom_function_forward_and_module_follow_the_observation():
    from cases.autograd import custom_function as cf

    assert cf.judge_forward({"NotesBinarizedF": 0, "BinarizedF": 0}, 257).verdict is Verdict.HOLDS
    assert cf.judge_forward({"NotesBinarizedF": 1, "BinarizedF": 0}, 257).verdict is Verdict.FAILS
    assert cf.judge_module_in_network([], 0.5, True).verdict is Verdict.HOLDS
    assert cf.judge_module_in_network([], 0.0, True).verdict is Verdict.FAILS
    assert cf.judge_module_in_network(["1.w"], 0.5, True).verdict is Verdict.FAILS
    assert cf.judge_module_in_network([], 0.5, False).verdict is Verdict.FAILS


def test_custom_function_ste_erratum_never_decides():
    from cases.autograd import custom_function as cf

    f = cf.judge_ste_backward(True, 3.47, True)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.WRONG_SHAPE_OR_FORMULA]
    assert "3.47" in f.errata[0].evidence and "out.sum() only" in f.errata[0].evidence
    assert not cf.judge_ste_backward(True, 0.0, True).errata
    assert cf.judge_ste_backward(True, 0.0, False).errata  # wrong even with all-ones upstream
    assert cf.judge_ste_backward(False, 3.47, True).verdict is Verdict.FAILS


def test_custom_function_gradcheck_decides_on_the_smooth_function():
    from cases.autograd import custom_function as cf

    assert cf.judge_gradcheck(True, False).verdict is Verdict.HOLDS
    assert cf.judge_gradcheck(False, False).verdict is Verdict.FAILS
    assert "accepts" in cf.judge_gradcheck(True, True).evidence


def test_hooks_forward_and_full_backward_follow_the_observation():
    from cases.autograd import hooks

    assert hooks.judge_forward_hook(True, (2, 3, 8, 8), (2, 5, 6, 6), True, True).verdict is Verdict.HOLDS
    assert hooks.judge_forward_hook(False, (2, 3, 8, 8), (2, 5, 6, 6), True, True).verdict is Verdict.FAILS
    assert hooks.judge_forward_hook(True, (2, 3, 8, 8), (2, 5, 6, 6), True, False).verdict is Verdict.FAILS
    right = [("Conv2d", True, True), ("TwoOps", True, True)]
    assert hooks.judge_full_backward_hook(right, []).verdict is Verdict.HOLDS
    wrong = hooks.judge_full_backward_hook([("Conv2d", True, True), ("TwoOps", False, True)], [])
    assert wrong.verdict is Verdict.FAILS and "TwoOps" in wrong.evidence


def test_hooks_register_backward_hook_is_a_deprecated_api_erratum():
    from cases.autograd import hooks

    warning = (
        "FutureWarning: 'Using a non-full backward hook when the forward contains multiple autograd Nodes'"
    )
    f = hooks.judge_notes_backward_hook(True, float("inf"), warning, "shape (7, 4) vs dL/dx (7, 6)", True)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.DEPRECATED_API]
    assert "non-full backward hook" in f.errata[0].evidence and "(7, 4)" in f.errata[0].evidence
    only_documented = hooks.judge_notes_backward_hook(True, 0.0, "", "", True)
    assert only_documented.errata[0].kind is ErratumKind.DEPRECATED_API
    assert hooks.judge_notes_backward_hook(True, 0.0, "", "", False).errata == ()
    assert hooks.judge_notes_backward_hook(False, float("inf"), warning, "", True).verdict is Verdict.FAILS


def test_autograd_rule_verdict_names_what_was_not_observed():
    from cases.autograd import rules

    assert rules.judge_rule("r", {"a raises": True, "b works": True}).verdict is Verdict.HOLDS
    f = rules.judge_rule("r", {"a raises": True, "b works": False})
    assert f.verdict is Verdict.FAILS and "b works" in f.evidence


def test_only_leaves_have_grad_unless_retain_grad():
    from cases.autograd import rules

    f = rules.judge_leaf_grad(True, True, "The .grad attribute of a Tensor that is not a leaf", True)
    assert f.verdict is Verdict.HOLDS and not f.errata and "warns" in f.evidence
    assert rules.judge_leaf_grad(True, False, "", True).verdict is Verdict.FAILS
    assert rules.judge_leaf_grad(True, True, "", False).verdict is Verdict.FAILS
    assert rules.judge_leaf_grad(False, True, "", True).verdict is Verdict.FAILS


def test_index_assignment_no_gradient_claim_is_a_wrong_statement():
    from cases.autograd import rules

    grads = [0.0, 0.0, 6.0, 8.0, 10.0]
    f = rules.judge_index_assignment(True, True, True, grads)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.WRONG_STATEMENT]
    # Gradients not through the assignment: 000's statement would be right, no erratum.
    g = rules.judge_index_assignment(False, True, True, grads)
    assert g.verdict is Verdict.FAILS and not g.errata
    assert rules.judge_index_assignment(True, True, False, grads).verdict is Verdict.FAILS


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


def test_state_round_trip_aliasing_and_ddp_follow_the_observation():
    from cases import state

    assert state.judge_round_trip(None, [], True).verdict is Verdict.HOLDS
    assert state.judge_round_trip(None, ["linear.bias"], True).verdict is Verdict.FAILS
    assert state.judge_round_trip("UnpicklingError: x", [], True).verdict is Verdict.FAILS
    assert state.judge_aliasing(True, True, True, 0.15).verdict is Verdict.HOLDS
    assert state.judge_aliasing(False, False, True, 0.0).verdict is Verdict.FAILS
    assert state.judge_aliasing(True, True, False, 0.15).verdict is Verdict.FAILS
    keys = ["linear.weight", "linear.bias"]
    wrapped = [f"module.{k}" for k in keys]
    ok = state.judge_ddp_state_dict(wrapped, keys, sorted(keys), None, ["ckp.pt"])
    assert ok.verdict is Verdict.HOLDS
    assert state.judge_ddp_state_dict(wrapped, keys, sorted(keys), None, []).verdict is Verdict.FAILS
    assert state.judge_ddp_state_dict(keys, keys, [], None, ["ckp.pt"]).verdict is Verdict.FAILS


def test_weights_only_default_is_context_unless_a_notes_checkpoint_is_refused():
    from cases import state

    beyond = {"a pickled Python object": "UnpicklingError: GLOBAL x", "a NumPy best_fitness": None}
    f = state.judge_load_defaults("2.13.0", True, {}, True, beyond)
    assert f.verdict is Verdict.HOLDS and not f.errata and "weights_only=True" in f.evidence
    refused = {"chkpt dict (001)": "UnpicklingError: GLOBAL numpy"}
    g = state.judge_load_defaults("2.13.0", True, refused, True, beyond)
    assert g.verdict is Verdict.HOLDS and [e.kind for e in g.errata] == [ErratumKind.WRONG_DEFAULT]
    assert state.judge_load_defaults("2.13.0", True, refused, False, beyond).verdict is Verdict.FAILS


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


def test_gan_detach_verdict_is_computed_from_the_grads():
    from cases import gan

    seen = dict(leak_without=0.174, without_err=0.87, zeroed_err=0.0, reuse_error="second time")
    assert gan.judge_detach(0.0, 0.0, True, **seen).verdict is Verdict.HOLDS
    assert gan.judge_detach(1e-3, 0.0, True, **seen).verdict is Verdict.FAILS  # detach leaked
    assert gan.judge_detach(0.0, 0.2, True, **seen).verdict is Verdict.FAILS  # G stepped off its loss
    assert gan.judge_detach(0.0, 0.0, False, **seen).verdict is Verdict.FAILS  # an optimizer crossed over
    assert gan.judge_detach(0.0, 0.0, True, 0.0, 0.0, 0.0, None).verdict is Verdict.FAILS  # nothing to cut


def test_gan_non_saturating_loss_verdict_is_computed():
    from cases import gan

    assert gan.judge_non_saturating(-0.0025, -0.9975, True, True).verdict is Verdict.HOLDS
    assert gan.judge_non_saturating(-0.9975, -0.0025, True, True).verdict is Verdict.FAILS
    assert gan.judge_non_saturating(-0.0025, -0.9975, False, True).verdict is Verdict.FAILS
    assert gan.judge_non_saturating(-0.0025, -0.9975, True, False).verdict is Verdict.FAILS
