"""The judges of `cases/misc/sampling_ops.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import get_case
from cases.misc import sampling_ops
from harness.contract.record import ErratumKind, Verdict

# ---- misc.sampling_ops --------------------------------------------------------------------------------


def test_multinomial_shapes():
    assert sampling_ops.judge_multinomial_shapes((3,), (5, 3), 3, 5).verdict is Verdict.HOLDS
    assert sampling_ops.judge_multinomial_shapes((3,), (15,), 3, 5).verdict is Verdict.FAILS


def test_multinomial_weights():
    raised = {"raised": "RuntimeError", "message": "probability tensor contains either `inf`"}
    ok = {"negative": raised, "all-zero": raised, "infinite": raised}
    assert sampling_ops.judge_multinomial_weights(ok, 0.8, 1000, "cpu").verdict is Verdict.HOLDS
    accepted = {**ok, "infinite": {"raised": None, "message": ""}}
    assert sampling_ops.judge_multinomial_weights(accepted, 0.8, 1000, "cpu").verdict is Verdict.FAILS
    assert sampling_ops.judge_multinomial_weights(ok, 9.0, 1000, "cpu").verdict is Verdict.FAILS


def test_zero_weights_last():
    assert sampling_ops.judge_zero_weights_last("", 200, 200, "cpu").verdict is Verdict.HOLDS
    assert sampling_ops.judge_zero_weights_last("", 199, 200, "cpu").verdict is Verdict.FAILS
    assert sampling_ops.judge_zero_weights_last("invalid", 0, 0, "cpu").verdict is Verdict.FAILS


def test_repeat_interleave_and_repeat():
    seen = {"flattens": True, "dim=0": True}
    assert sampling_ops.judge_repeat_interleave(seen).verdict is Verdict.HOLDS
    assert sampling_ops.judge_repeat_interleave({**seen, "dim=0": False}).verdict is Verdict.FAILS
    # numpy's ndarray.repeat repeats elements: the notes' likeness fails, their spelling a typo
    f = sampling_ops.judge_repeat(True, False, [1, 1, 2, 2], ["np.arrary"])
    assert f.verdict is Verdict.FAILS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert sampling_ops.judge_repeat(True, True, [1, 2, 1, 2]).verdict is Verdict.HOLDS
    assert sampling_ops.judge_repeat(True, True, [1, 2, 1, 2]).errata == ()
    assert sampling_ops.judge_repeat(False, True, [1, 2, 1, 2]).verdict is Verdict.FAILS


def test_repeats_size():
    only_right = {2: "runs → (4, 2)", 3: "raises: must", 1: "raises: must"}
    assert sampling_ops.judge_repeats_size(only_right, 2).verdict is Verdict.HOLDS
    broadcast = {**only_right, 1: "runs → (4, 2)"}
    assert sampling_ops.judge_repeats_size(broadcast, 2).verdict is Verdict.FAILS
    assert sampling_ops.judge_repeats_size({**only_right, 2: "raises: x"}, 2).verdict is Verdict.FAILS


def test_multinomial_bound_n_of_n_fails_the_notes_less_than():
    f = sampling_ops.judge_multinomial_bound(n_of_n_runs=True, permutation=True, over_raises=True)
    assert f.verdict is Verdict.FAILS and f.errata == () and "≤ n" in f.evidence
    (claim,) = [c for c in get_case("misc.sampling_ops").claims if c.id == "multinomial_bound"]
    assert "必须小于" in claim.quote
    assert sampling_ops.judge_multinomial_bound(False, True, over_raises=True).verdict is Verdict.HOLDS
    assert sampling_ops.judge_multinomial_bound(False, True, over_raises=False).verdict is Verdict.FAILS


def test_repeat_is_observed_false_with_a_typo():
    import torch

    f = sampling_ops.check_repeat(torch.device("cpu"))
    assert f.verdict is Verdict.FAILS and [e.kind for e in f.errata] == [ErratumKind.TYPO]


def test_nan_judges():
    assert sampling_ops.judge_nan({"nan != nan": True, "isnan": True}).verdict is Verdict.HOLDS
    assert sampling_ops.judge_nan({"nan != nan": False, "isnan": True}).verdict is Verdict.FAILS
    sums = {"numpy sum": float("nan"), "numpy nansum": 42.0, "torch sum": float("nan"), "torch nansum": 42.0}
    twins = {"nanmax": False}
    assert sampling_ops.judge_nan_reductions(sums, True, twins).verdict is Verdict.HOLDS
    assert (
        sampling_ops.judge_nan_reductions({**sums, "torch nansum": float("nan")}, True, twins).verdict
        is Verdict.FAILS
    )
    assert (
        sampling_ops.judge_nan_reductions({**sums, "numpy sum": 42.0}, True, twins).verdict is Verdict.FAILS
    )


def test_notes_spellings_are_typos():
    f = sampling_ops.judge_notes_spellings({"x.asstype(np.float32)": "AttributeError: asstype", "ok": ""})
    assert f.verdict is None and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert sampling_ops.judge_notes_spellings({"ok": ""}).errata == ()
