"""Judges added or touched when claims became the unit (issue 36), for autograd, shape ops, GAN,
nn containers/grid_sample/kd_vs_brute, optim param groups/scheduler resume, state and train:
each judge gets its normal observation (holds) and a contrary one (fails or depends)."""

from __future__ import annotations

from cases.nn import grid_sample
from harness.contract.record import ErratumKind, Verdict


def _kinds(finding):
    return [e.kind for e in finding.errata]


# ---- nn.grid_sample ------------------------------------------------------------------------------


def test_grid_sample_identity_judge():
    ok = grid_sample.judge_identity({False: 1e-6, True: 1e-6}, 4e-6, True, 2)
    assert ok.verdict is Verdict.HOLDS
    assert grid_sample.judge_identity({False: 1e-3, True: 1e-6}, 4e-6, True, 2).verdict is Verdict.FAILS
    assert grid_sample.judge_identity({False: 1e-6, True: 1e-6}, 4e-6, False, 2).verdict is Verdict.FAILS


def test_grid_sample_align_corners_judge_and_typo():
    f = grid_sample.judge_align_corners(3.0, 1e-6, 4e-6, False)
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.TYPO]
    assert grid_sample.judge_align_corners(3.0, 1e-6, 4e-6, True).errata == ()
    assert grid_sample.judge_align_corners(0.0, 1e-6, 4e-6, False).verdict is Verdict.FAILS
    assert grid_sample.judge_align_corners(3.0, 1.0, 4e-6, False).verdict is Verdict.FAILS


def test_grid_sample_corners_judge():
    seen = {"corners_true": True, "border_top_left": True, "outside_is_padding": True}
    assert grid_sample.judge_corners(seen).verdict is Verdict.HOLDS
    assert grid_sample.judge_corners({**seen, "corners_true": False}).verdict is Verdict.FAILS


# ---- gan.two_optimizers --------------------------------------------------------------------------


def test_gan_d_losses_judge():
    from cases import gan

    assert gan.judge_d_losses(13.5, 13.5, 26.8, 26.8).verdict is Verdict.HOLDS
    # A swapped label: BCE with the fake label is −Σlog(1−D), not −Σlog D.
    assert gan.judge_d_losses(13.5, 26.8, 26.8, 13.5).verdict is Verdict.FAILS


def test_gan_expectation_gradient_judge():
    from cases import gan

    assert gan.judge_expectation_gradient(1.7e-16, 32).verdict is Verdict.HOLDS
    assert gan.judge_expectation_gradient(0.3, 32).verdict is Verdict.FAILS


# ---- nn.kd_vs_brute ------------------------------------------------------------------------------


def test_kd_distance_concentration_judge():
    from cases.nn import kd_vs_brute as kd

    assert kd.judge_distance_concentration({2: 100.0, 256: 0.27}).verdict is Verdict.HOLDS
    assert kd.judge_distance_concentration({2: 100.0, 256: 50.0}).verdict is Verdict.FAILS
    assert kd.judge_distance_concentration({2: 0.5, 256: 0.27}).verdict is Verdict.FAILS


# ---- autograd.custom_function ----------------------------------------------------------------------


def test_ste_backward_claim_quotes_the_technique_and_the_faulty_code_is_the_erratum():
    from cases import get_case
    from cases.autograd import custom_function as cf

    f = cf.judge_ste_backward(True, 3.47, True)
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.WRONG_SHAPE_OR_FORMULA]
    assert "torch.where(input_abs <= 1, ones, zeros)" in f.errata[0].quote
    assert cf.judge_ste_backward(False, 3.47, True).verdict is Verdict.FAILS
    (claim,) = [c for c in get_case("autograd.custom_function").claims if c.id == "ste_backward"]
    assert "torch.where" not in claim.quote and "backward" in claim.quote


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


# ---- state.save_load -----------------------------------------------------------------------------


def test_state_aliasing_immutable_statement_is_an_erratum():
    from cases import state

    f = state.judge_aliasing(True, True, True, 0.1, immutable_same_object=["b = a", "copy.copy"])
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.WRONG_STATEMENT]
    assert state.judge_aliasing(True, True, True, 0.1, immutable_same_object=[]).errata == ()
    assert (
        state.judge_aliasing(True, True, False, 0.1, immutable_same_object=["b = a"]).verdict is Verdict.FAILS
    )


def test_state_ddp_gpu_id_is_a_typo():
    from cases import state

    wrapped, inner = ["module.w", "module.b"], ["w", "b"]
    f = state.judge_ddp_state_dict(wrapped, inner, ["b", "w"], None, ["ckp.pt"], gpu_id_attr=False)
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.TYPO]
    assert state.judge_ddp_state_dict(wrapped, inner, ["b", "w"], None, ["ckp.pt"]).errata == ()
    assert state.judge_ddp_state_dict(wrapped, inner, ["b", "w"], "boom", ["ckp.pt"]).verdict is Verdict.FAILS


# ---- train.grad_accumulation ---------------------------------------------------------------------


def test_grad_accumulation_optimizer_sensitivity_judge():
    from cases.train import grad_accumulation as ga

    assert ga.judge_optimizer_sensitivity(ga.K - 1.0, 5.7e-6).verdict is Verdict.HOLDS
    assert ga.judge_optimizer_sensitivity(0.0, 5.7e-6).verdict is Verdict.FAILS
    assert ga.judge_optimizer_sensitivity(ga.K - 1.0, 3.0).verdict is Verdict.FAILS


# ---- claims: every claim of the group decided ----------------------------------------------------


def test_every_claim_of_the_group_is_decided():
    from cases import get_case

    ids = (
        "autograd.custom_function autograd.hooks autograd.rules shape.ops gan.two_optimizers "
        "nn.containers nn.grid_sample nn.kd_vs_brute optim.param_groups optim.scheduler_resume "
        "state.save_load train.grad_accumulation train.modes"
    ).split()
    for case_id in ids:
        case = get_case(case_id)
        assert case.claims, case_id
        assert case.undecided_claims() == [], case_id
