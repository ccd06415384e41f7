"""The judges of `cases/jit.py`: each verdict follows from what its check observed (a different observation
gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

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


def test_deprecation_quotes_each_apis_own_warning():
    messages = {api: f"`{api}` is deprecated" for api in jit.JIT_APIS}
    f = jit.judge_deprecation(list(jit.JIT_APIS), messages, "2.13.0")
    assert f.verdict is None and [e.kind for e in f.errata] == [ErratumKind.DEPRECATED_API] * 4
    for api, erratum in zip(jit.JIT_APIS, f.errata):
        assert f"`{api}` is deprecated" in erratum.evidence
        assert all(f"`{other}`" not in erratum.evidence for other in jit.JIT_APIS if other != api)
    assert jit.judge_deprecation([], {}, "2.13.0").errata == ()


def test_nested_and_script_coverage_are_claims_of_their_own():
    assert jit.judge_notes_nested(0.0, True).verdict is Verdict.HOLDS
    assert jit.judge_notes_nested(0.9, True).verdict is Verdict.FAILS
    assert jit.judge_notes_nested(0.0, False).verdict is Verdict.FAILS
    assert jit.judge_script_coverage("RuntimeError", True).verdict is Verdict.HOLDS
    assert jit.judge_script_coverage("", True).verdict is Verdict.FAILS  # script compiled it
    assert jit.judge_script_coverage("RuntimeError", False).verdict is Verdict.FAILS


def test_compile_time_context_says_plainly_where_compiled_differs():
    from cases import jit

    steady = {"eager": 1e-3, "scripted": 1e-3, "compiled": 5e-4}
    right = jit.judge_compile_time(2.0, steady, {"a": True, "b": True}, "cpu")
    wrong = jit.judge_compile_time(2.0, steady, {"a": True, "b": False}, "cpu")
    assert right.verdict is None and "DIFFERS" not in right.evidence
    assert wrong.verdict is None and "DIFFERS from eager on b" in wrong.evidence


def test_jit_nested_example_judged_on_the_loaded_model_and_the_coverage_claim():
    from cases import jit

    assert jit.judge_notes_nested(0.0, True, "RuntimeError", True).verdict is Verdict.HOLDS
    assert jit.judge_notes_nested(0.97, True, "RuntimeError", True).verdict is Verdict.FAILS  # other weights
    assert jit.judge_notes_nested(0.0, False, "RuntimeError", True).verdict is Verdict.FAILS
    assert jit.judge_notes_nested(0.0, True, "", True).verdict is Verdict.FAILS  # script covered it
