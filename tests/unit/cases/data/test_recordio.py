"""The judges of `cases/data/recordio.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import torch

from cases import get_case
from cases.data import recordio
from harness.contract import rules
from harness.contract.record import Verdict


def test_speed_pairs_the_notes_never_claim_are_context_alike():
    """conv.dilated, conv.im2col and conv.transposed: the notes teach equivalences, not speed-ups;
    recordio's packed reads are the notes' recommendation, a claim."""
    for case_id in ("conv.dilated", "conv.im2col", "conv.transposed"):
        case = get_case(case_id)
        assert not [r for r in rules.claimed(case.verdict)], case_id
        assert not [c for c in case.claims if c.kind.name == "SPEED"], case_id
    recordio_rules = list(rules.claimed(get_case("data.recordio").verdict))
    assert [r.claim for r in recordio_rules] == ["faster"]


# ---- data.recordio -----------------------------------------------------------------------------


def test_recordio_judges_from_observations():
    assert recordio.judge_layout(True, offsets=[0, 5768, 12520, 19304]).verdict is Verdict.HOLDS
    # An 8-byte aligned writer would put the third record at 12524 (the notes' guess, other lengths).
    assert recordio.judge_layout(True, offsets=[0, 5768, 12524, 19312]).verdict is Verdict.FAILS
    assert recordio.judge_layout(False, offsets=[0, 5768, 12520, 19304]).verdict is Verdict.FAILS
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


def test_alignment_fails_where_the_format_pads_to_four():
    real = [(5760, 5768, 5768), (1, 12, 16), (9, 20, 24)]
    f = recordio.judge_alignment(real, True)
    assert f.verdict is Verdict.FAILS and "1 B takes 12, not 16" in f.evidence and f.errata == ()
    # A format padded to 8, as the notes say, would hold.
    assert recordio.judge_alignment([(5760, 5768, 5768), (1, 16, 16)], True).verdict is Verdict.HOLDS
    assert recordio.judge_alignment([], True).verdict is Verdict.FAILS


def test_alignment_observed_fails_and_offsets_hold():
    cpu = torch.device("cpu")
    assert recordio.check_alignment(cpu).verdict is Verdict.FAILS
    assert recordio.check_idx_offsets(cpu).verdict is Verdict.HOLDS


def test_mxnet_claims_are_not_measured_without_mxnet():
    f = recordio.judge_notes_reader("read()", None, True)
    assert f.verdict is Verdict.NOT_MEASURED and "stand-in" in f.evidence
    assert recordio.judge_notes_reader("read()", True, True).verdict is Verdict.HOLDS
    assert recordio.judge_notes_reader("read()", False, True).verdict is Verdict.FAILS
    stand_in = recordio.judge_irheader(24, True, True, True, ["flag", "label", "id", "id2"])
    assert recordio.judge_notes_irheader(None, stand_in).verdict is Verdict.NOT_MEASURED
    assert recordio.judge_notes_irheader(True, stand_in).verdict is Verdict.HOLDS
    assert recordio.judge_notes_irheader(False, stand_in).verdict is Verdict.FAILS


def test_the_stand_in_writes_what_mxnet_wrote():
    s = recordio.pack(recordio.IRHeader(*recordio.MXNET_PACKED_HEADER), b"jpeg bytes")
    assert s == recordio.MXNET_PACKED


def test_length_field_fails_where_the_eight_bytes_are_not_a_count():
    word = 5760  # flag 0, length 5760
    as_u64 = 0xCED7230A | (word << 32)
    f = recordio.judge_length_field([(5760, as_u64, 0xCED7230A, word)])
    assert f.verdict is Verdict.FAILS and "magic 0xced7230a" in f.evidence and "length (5760)" in f.evidence
    # A format that stored an 8-byte count, as the notes guess, would hold.
    assert recordio.judge_length_field([(5760, 5760, 5760, 0)]).verdict is Verdict.HOLDS
    assert recordio.judge_length_field([]).verdict is Verdict.FAILS
    assert recordio.check_length_field(torch.device("cpu")).verdict is Verdict.FAILS


def test_notes_mxrecordio_snippet_is_an_erratum_only_where_it_raised():
    from harness.contract.record import ErratumKind

    raised = recordio.judge_notes_mxrecordio_snippet("TypeError: bytes or integer address expected")
    assert raised.verdict is None and [e.kind for e in raised.errata] == [ErratumKind.RAISES]
    assert raised.errata[0].quote == "record.write('record_%d'%i)"
    assert recordio.judge_notes_mxrecordio_snippet("").errata == ()
    assert recordio.judge_notes_mxrecordio_snippet(None).errata == ()
