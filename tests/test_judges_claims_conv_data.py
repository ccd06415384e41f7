"""Claims as the unit (issue 36) for conv.*, jit.script_trace, data.loading and data.recordio: every
claim is decided, and each judge added or touched gives HOLDS on the normal observation and
another verdict on a contrary one (errata computed from what was observed)."""

from __future__ import annotations

import pytest

from cases import get_case, jit
from cases.conv import dilated, shapes, transposed
from cases.data import loading, recordio
from harness.contract import rules
from harness.contract.record import ErratumKind, Verdict

IDS = (
    "conv.dilated",
    "conv.im2col",
    "conv.pooling",
    "conv.shapes",
    "conv.transposed",
    "jit.script_trace",
    "data.loading",
    "data.recordio",
)


@pytest.mark.parametrize("case_id", IDS)
def test_every_claim_is_decided(case_id):
    case = get_case(case_id)
    assert case.claims and case.undecided_claims() == []


def test_speed_pairs_the_notes_never_claim_are_context_alike():
    """conv.dilated, conv.im2col and conv.transposed: the notes teach equivalences, not speed-ups;
    recordio's packed reads are the notes' recommendation, a claim."""
    for case_id in ("conv.dilated", "conv.im2col", "conv.transposed"):
        case = get_case(case_id)
        assert not [r for r in rules.claimed(case.verdict)], case_id
        assert not [c for c in case.claims if c.kind.name == "SPEED"], case_id
    recordio_rules = list(rules.claimed(get_case("data.recordio").verdict))
    assert [r.claim for r in recordio_rules] == ["faster"]


# ---- conv --------------------------------------------------------------------------------------


def test_transposed_output_size_fails_where_the_layer_leaves_the_formula():
    assert transposed.judge_transposed_output_size(406, 0, None, 83, 0, layer_off=0).verdict is Verdict.HOLDS
    assert transposed.judge_transposed_output_size(406, 0, None, 83, 0, layer_off=3).verdict is Verdict.FAILS


def test_padded_size_is_judged_from_the_sizes_observed():
    assert transposed.judge_padded_size(91, []).verdict is Verdict.HOLDS
    off = transposed.judge_padded_size(91, [(3, 3, 2, 1, 9, 8, 7, 7)])
    assert off.verdict is Verdict.FAILS and "off in 1 of 91" in off.evidence
    assert transposed.judge_padded_size(0, []).verdict is Verdict.FAILS  # nothing checked


def test_notes_layer_name_is_a_typo_only_where_torch_lacks_it():
    params = ["in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding"]
    notes = ["channel_in", "channel_out", "kernel_size", "stride", "padding", "bias"]
    f = transposed.judge_notes_layer_name(False, params, notes)
    assert f.verdict is None
    assert [e.kind for e in f.errata] == [ErratumKind.TYPO, ErratumKind.WRONG_STATEMENT]
    assert transposed.judge_notes_layer_name(True, [*params[:5], "bias"], notes).errata == ()


def test_gridding_needs_a_larger_field_no_holes_and_a_control_that_shows_holes():
    assert dilated.judge_gridding(19, 11, 0, 361, 120, 169).verdict is Verdict.HOLDS
    assert dilated.judge_gridding(19, 11, 4, 361, 120, 169).verdict is Verdict.FAILS  # gridding
    assert dilated.judge_gridding(11, 11, 0, 361, 120, 169).verdict is Verdict.FAILS  # not enlarged
    blind = dilated.judge_gridding(19, 11, 0, 361, 0, 169)
    assert blind.verdict is Verdict.FAILS and "cannot see gridding" in blind.evidence


def test_equivariance_depends_names_its_condition():
    bound = 1e-5
    f = shapes.judge_equivariance(0.0, 1.3, 0.0, 0.0, 3.0, bound)
    assert f.verdict is Verdict.DEPENDS and "condition: the padding mode and the stride" in f.evidence
    assert shapes.judge_equivariance(0.0, 0.0, 0.0, 0.0, 0.0, bound).verdict is Verdict.HOLDS


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


# ---- data.loading ------------------------------------------------------------------------------


def _row(n, bs, **over):
    row = dict(
        n=n,
        bs=bs,
        length=-(-n // bs),
        dropped=n // bs,
        once=True,
        last_ok=True,
        kept=(n // bs) * bs,
        differ=True if n > 10 else None,
    )
    row.update(over)
    return tuple(row.values())


def test_loader_length_from_observations():
    rows = [_row(100, 32), _row(7, 10)]
    err = "TypeError: 'DataLoader' object is not subscriptable"
    assert loading.judge_loader_length(rows, err, True).verdict is Verdict.HOLDS
    assert loading.judge_loader_length([_row(100, 32, length=3)], err, True).verdict is Verdict.FAILS
    assert loading.judge_loader_length([_row(100, 32, once=False)], err, True).verdict is Verdict.FAILS
    assert loading.judge_loader_length([_row(100, 32, differ=False)], err, True).verdict is Verdict.FAILS
    assert loading.judge_loader_length(rows, "", True).verdict is Verdict.FAILS  # indexable


def test_shuffle_with_sampler_from_observations():
    msg = "sampler option is mutually exclusive with shuffle"
    assert loading.judge_shuffle_with_sampler(msg, True).verdict is Verdict.HOLDS
    assert loading.judge_shuffle_with_sampler("", True).verdict is Verdict.FAILS
    assert loading.judge_shuffle_with_sampler(msg, False).verdict is Verdict.FAILS


def test_collate_batch_from_observations():
    good = ("tuple", "list", [(4, 3, 4, 4), (4,)], "torch.int64", True)
    assert loading.judge_collate_batch(*good).verdict is Verdict.HOLDS
    assert loading.judge_collate_batch("tuple", "tuple", *good[2:]).verdict is Verdict.FAILS
    assert loading.judge_collate_batch(*good[:4], False).verdict is Verdict.FAILS


def test_collate_fn_input_list_is_an_erratum_not_a_failure():
    f = loading.judge_collate_fn_input("list", 4, True, ["DataLoader"])
    assert f.verdict is Verdict.HOLDS
    assert [e.kind for e in f.errata] == [ErratumKind.WRONG_STATEMENT] * 2
    assert loading.judge_collate_fn_input("tuple", 4, True, ["Dataset", "DataLoader"]).errata == ()
    assert loading.judge_collate_fn_input("list", 3, True, ["DataLoader"]).verdict is Verdict.FAILS
    assert loading.judge_collate_fn_input("list", 4, False, ["DataLoader"]).verdict is Verdict.FAILS


def test_collate_fn_claim_quotes_the_technique_and_the_tuple_is_the_erratum_alone():
    from cases import get_case

    f = loading.judge_collate_fn_input("list", 4, True, ["DataLoader"])
    assert f.errata[0].quote == "so the input is a tuple."
    (claim,) = [c for c in get_case("data.loading").claims if c.id == "collate_fn_input"]
    assert "tuple" not in claim.quote and "__getitem__" in claim.quote


def test_notes_signature_wrong_default_is_computed():
    actual = {**loading.NOTES_LOADER_DEFAULTS, "shuffle": None, "prefetch_factor": None}
    f = loading.judge_notes_signature(loading.NOTES_LOADER_DEFAULTS, actual, "ValueError: prefetch", "2.13")
    assert f.verdict is None and [e.kind for e in f.errata] == [ErratumKind.WRONG_DEFAULT]
    assert "prefetch_factor" in f.errata[0].quote
    same = loading.judge_notes_signature(
        loading.NOTES_LOADER_DEFAULTS, dict(loading.NOTES_LOADER_DEFAULTS), "", "1.9"
    )
    assert same.errata == ()


# ---- data.recordio -----------------------------------------------------------------------------


def test_recordio_judges_from_observations():
    assert recordio.judge_layout(True, [], offsets=[0, 5768, 12520, 19304]).verdict is Verdict.HOLDS
    assert recordio.judge_layout(True, [], offsets=[0, 5768, 12524, 19312]).verdict is Verdict.FAILS
    assert recordio.judge_embedded_magic(True, True, [1, 2, 2, 3, 0], [8, 16, 20]).verdict is Verdict.HOLDS
    assert recordio.judge_embedded_magic(True, True, [0, 0], [8, 16, 20]).verdict is Verdict.FAILS
    assert recordio.judge_embedded_magic(False, True, [1, 2, 2, 3, 0], [8]).verdict is Verdict.FAILS
    named = [("x: bad magic at byte offset 8", True)] * 6
    assert recordio.judge_corruption(True, named).verdict is Verdict.HOLDS
    assert (
        recordio.judge_corruption(True, [*named[:5], ("read without error", False)]).verdict is Verdict.FAILS
    )
    assert recordio.judge_corruption(False, named).verdict is Verdict.FAILS
    fields = ["flag", "label", "id", "id2"]
    assert recordio.judge_irheader(24, True, True, True, fields).verdict is Verdict.HOLDS
    assert recordio.judge_irheader(32, True, True, True, fields).verdict is Verdict.FAILS
    assert recordio.judge_irheader(24, True, False, True, fields).verdict is Verdict.FAILS
    assert recordio.judge_irheader(24, True, True, True, ["flag", "label", "id"]).verdict is Verdict.FAILS


def test_workers_and_pin_memory_judges():
    every = list(range(4))
    assert loading.judge_workers(4, every, every, [2] * 4).verdict is Verdict.HOLDS
    assert loading.judge_workers(4, [0, 0, 1, 2], every, [2] * 4).verdict is Verdict.FAILS
    assert loading.judge_workers(4, every, every, [1] * 4).verdict is Verdict.FAILS
    assert loading.judge_pin_memory([True] * 4, True).verdict is Verdict.HOLDS
    assert loading.judge_pin_memory([True, False], True).verdict is Verdict.FAILS
    assert loading.judge_pin_memory([True] * 4, False).verdict is Verdict.FAILS


def test_compile_time_context_says_plainly_where_compiled_differs():
    from cases import jit

    steady = {"eager": 1e-3, "scripted": 1e-3, "compiled": 5e-4}
    right = jit.judge_compile_time(2.0, steady, {"a": True, "b": True}, "cpu")
    wrong = jit.judge_compile_time(2.0, steady, {"a": True, "b": False}, "cpu")
    assert right.verdict is None and "DIFFERS" not in right.evidence
    assert wrong.verdict is None and "DIFFERS from eager on b" in wrong.evidence
