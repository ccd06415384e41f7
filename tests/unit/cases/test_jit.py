"""The judges of `cases/jit.py`: each verdict follows from what its check observed (a different observation
gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import warnings

import torch

from cases import jit
from harness.contract.record import ErratumKind, Verdict

# ---- jit ---------------------------------------------------------------------------------------


def test_trace_freezes_branch_from_observations():
    assert jit.judge_trace_freezes_branch(2.0, 0.0, 0.0, True, False, 2).verdict is Verdict.HOLDS
    assert jit.judge_trace_freezes_branch(0.0, 0.0, 0.0, True, False, 2).verdict is Verdict.FAILS  # kept it
    assert (
        jit.judge_trace_freezes_branch(2.0, 0.0, 2.0, True, False, 2).verdict is Verdict.FAILS
    )  # script lost it
    assert (
        jit.judge_trace_freezes_branch(2.0, 1.0, 0.0, True, False, 2).verdict is Verdict.FAILS
    )  # own example
    assert jit.judge_trace_freezes_branch(2.0, 0.0, 0.0, False, False, 2).verdict is Verdict.FAILS


def test_save_load_from_observations():
    exact = {"scripted": 0.0, "traced": 0.0}
    assert jit.judge_save_load(exact, True, "", 2.0, 5000).verdict is Verdict.HOLDS
    assert jit.judge_save_load({**exact, "traced": 1e-3}, True, "", 2.0, 5000).verdict is Verdict.FAILS
    differs = jit.judge_save_load(exact, False, "0.5 at [0]", 2.0, 5000)
    assert differs.verdict is Verdict.FAILS and "DIFFERS" in differs.evidence


def test_deprecation_quotes_each_apis_own_warning_on_the_notes_call():
    apis = list(jit.JIT_APIS)
    messages = {api: f"`{api}` is deprecated" for api in apis}
    f = jit.judge_deprecation(apis, messages, "2.13.0")
    # Only the calls no snippet run reports (003#6's script and trace) carry an erratum here.
    assert f.verdict is None and [e.kind for e in f.errata] == [ErratumKind.DEPRECATED_API] * 2
    for api, erratum in zip(jit.NOTES_CALLS, f.errata):
        assert f"`{api}` is deprecated" in erratum.evidence and erratum.quote == jit.NOTES_CALLS[api]
        assert all(f"`{other}`" not in erratum.evidence for other in apis if other != api)
    assert jit.judge_deprecation([], {}, "2.13.0").errata == ()
    some = jit.judge_deprecation(["torch.jit.load"], {"torch.jit.load": "x"}, "2.13.0")
    assert (
        some.errata == ()
        and "ScriptModule.save" in some.evidence
        and "torch.jit.load deprecated" in some.evidence
    )


def test_a_deprecation_is_recognised_by_meaning():
    assert jit.is_deprecation(DeprecationWarning, "`torch.jit.script` is deprecated")
    assert jit.is_deprecation(FutureWarning, "`torch.jit.script` is deprecated")  # torch 2.14
    assert jit.is_deprecation(UserWarning, "torch.jit.load is deprecated and will be removed")
    assert not jit.is_deprecation(UserWarning, "Converting a tensor to a Python boolean")
    assert not jit.is_deprecation(torch.jit.TracerWarning, "might cause the trace to be incorrect")


def test_deprecation_heard_as_a_future_warning(monkeypatch):
    """torch 2.14 warns with FutureWarning: the check must still hear it."""
    real = torch.jit.script

    def script_warning_future(*args, **kwargs):
        warnings.warn("`torch.jit.script` is deprecated. Please switch to `torch.compile`.", FutureWarning)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return real(*args, **kwargs)

    monkeypatch.setattr(torch.jit, "script", script_warning_future)
    f = jit.check_deprecation(torch.device("cpu"))
    script = [e for e in f.errata if e.quote == jit.NOTES_CALLS["torch.jit.script"]]
    assert script and "FutureWarning" not in script[0].evidence and "deprecated" in script[0].evidence


def test_nested_and_script_coverage_are_claims_of_their_own():
    assert jit.judge_notes_nested(0.0, True).verdict is Verdict.HOLDS
    assert jit.judge_notes_nested(0.9, True).verdict is Verdict.FAILS
    assert jit.judge_notes_nested(0.0, False).verdict is Verdict.FAILS
    assert jit.judge_script_coverage("RuntimeError", True).verdict is Verdict.HOLDS
    assert jit.judge_script_coverage("", True).verdict is Verdict.FAILS  # script compiled it
    assert jit.judge_script_coverage("RuntimeError", False).verdict is Verdict.FAILS


def test_compile_time_context_says_plainly_where_compiled_differs():
    steady = {"eager": 1e-3, "scripted": 1e-3, "compiled": 5e-4}
    right = jit.judge_compile_time(2.0, steady, {"a": True, "b": True}, "cpu")
    wrong = jit.judge_compile_time(2.0, steady, {"a": True, "b": False}, "cpu")
    assert right.verdict is None and "DIFFERS" not in right.evidence
    assert wrong.verdict is None and "DIFFERS from eager on b" in wrong.evidence


def test_jit_nested_example_judged_on_the_loaded_model_and_the_coverage_claim():
    assert jit.judge_notes_nested(0.0, True, "RuntimeError", True).verdict is Verdict.HOLDS
    assert jit.judge_notes_nested(0.97, True, "RuntimeError", True).verdict is Verdict.FAILS  # other weights
    assert jit.judge_notes_nested(0.0, False, "RuntimeError", True).verdict is Verdict.FAILS
    assert jit.judge_notes_nested(0.0, True, "", True).verdict is Verdict.FAILS  # script covered it
