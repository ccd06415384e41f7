"""The judges of `cases/state.py`: each verdict follows from what its check observed (a different observation
gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict


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


def test_a_notes_checkpoint_refused_by_the_default_load_fails_the_round_trip():
    from cases import state

    beyond = {"a pickled Python object": "UnpicklingError: GLOBAL x", "a NumPy best_fitness": None}
    f = state.judge_load_defaults("2.13.0", True, {}, True, beyond)
    assert f.verdict is Verdict.HOLDS and not f.errata and "weights_only=True" in f.evidence
    # The notes' torch.load as written refused: a claim that fails, never an erratum.
    refused = {"chkpt dict (001)": "UnpicklingError: GLOBAL numpy"}
    g = state.judge_load_defaults("2.13.0", True, refused, True, beyond)
    assert g.verdict is Verdict.FAILS and not g.errata and "with weights_only=False" in g.evidence
    h = state.judge_load_defaults("2.13.0", True, refused, False, beyond)
    assert h.verdict is Verdict.FAILS and "do NOT load" in h.evidence


def _kinds(finding):
    return [e.kind for e in finding.errata]


# ---- state.save_load -----------------------------------------------------------------------------


def test_state_immutable_copy_fails_where_an_assignment_or_copy_is_the_same_object():
    from cases import state

    f = state.judge_immutable_copy(["b = a of a tuple", "copy.copy of a tuple"], 9, True)
    assert f.verdict is Verdict.FAILS and not f.errata and "2 of 9" in f.evidence
    # A Python where every assignment and copy made a new object would bear the notes out.
    assert state.judge_immutable_copy([], 9, True).verdict is Verdict.HOLDS
    assert "NOT independent" in state.judge_immutable_copy([], 9, False).evidence


def test_state_immutable_copy_check_sees_the_same_object():
    import torch

    from cases import state

    f = state.check_immutable_copy(torch.device("cpu"))
    assert f.verdict is Verdict.FAILS and "b = a of a tuple" in f.evidence


def test_state_ddp_gpu_id_is_a_typo():
    from cases import state

    wrapped, inner = ["module.w", "module.b"], ["w", "b"]
    f = state.judge_ddp_state_dict(wrapped, inner, ["b", "w"], None, ["ckp.pt"], gpu_id_attr=False)
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.TYPO]
    assert state.judge_ddp_state_dict(wrapped, inner, ["b", "w"], None, ["ckp.pt"]).errata == ()
    assert state.judge_ddp_state_dict(wrapped, inner, ["b", "w"], "boom", ["ckp.pt"]).verdict is Verdict.FAILS
