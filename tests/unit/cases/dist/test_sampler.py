"""The judges of `cases/dist/sampler.py`: each verdict follows from what its check observed (a
different observation gives a different verdict)."""

from __future__ import annotations

from cases import get_case
from cases.dist import sampler, setup
from harness.contract.record import ErratumKind, Verdict


def test_partition_fails_as_written_where_a_sample_lands_on_two_ranks():
    even = [(12, 4, False, 0, 0, True)]
    held = sampler.judge_partition(even)
    assert held.verdict is Verdict.HOLDS and held.errata == ()
    uneven = sampler.judge_partition([*even, (10, 4, False, 2, 0, True)])
    assert uneven.verdict is Verdict.FAILS and uneven.errata == ()
    assert "n=10, p=4" in uneven.evidence and "drop_last=True" in uneven.evidence
    # drop_last=True drops n mod p but shares nothing: the shards stay disjoint
    dropped = sampler.judge_partition([*even, (10, 4, True, 0, 2, True)])
    assert dropped.verdict is Verdict.HOLDS and "2 dropped" in dropped.evidence
    # the notes' own use alone decides it: CIFAR-10 over their 6 processes
    own = sampler.judge_partition(even, notes_use=(50_000, 6, False, 4, 0, True))
    assert own.verdict is Verdict.FAILS and "50,000" in own.evidence
    assert sampler.judge_partition([(10, 4, False, 2, 0, False)]).verdict is Verdict.FAILS


def test_partition_holds_only_where_no_sample_is_shared():
    even = [(12, 4, False, 0, 0, True), (12, 4, True, 0, 0, True)]
    assert sampler.judge_partition(even).verdict is Verdict.HOLDS
    uneven = [*even, (10, 4, False, 2, 0, True), (10, 4, True, 0, 2, True)]
    f = sampler.judge_partition(uneven, notes_use=(50_000, 6, False, 4, 0, True))
    assert f.verdict is Verdict.FAILS
    assert "p divides n" in f.evidence and "drop_last=True" in f.evidence and "50,000" in f.evidence
    assert sampler.judge_partition([*even, (10, 4, False, 2, 0, False)]).verdict is Verdict.FAILS


def test_both_notes_sampler_claims_are_decided_by_the_partition():
    case = get_case("dist.sampler")
    assert {case.checks[n].claim for n in ("partition", "partition_004")} == {
        "disjoint_subsets",
        "non_overlapping",
    }


def test_split_rows_as_observed():
    assert sampler.split_row(12, 4, False) == (12, 4, False, 0, 0, True)
    assert sampler.split_row(10, 4, False) == (10, 4, False, 2, 0, True)
    assert sampler.split_row(10, 4, True) == (10, 4, True, 0, 2, True)
    assert sampler.split_row(50_000, 6, False)[3] == 4


def test_set_epoch_holds_only_where_it_reshuffles_consistently():
    assert sampler.judge_set_epoch(True, 48, True, True).verdict is Verdict.HOLDS
    assert sampler.judge_set_epoch(True, 0, True, True).verdict is Verdict.FAILS
    assert sampler.judge_set_epoch(False, 48, True, True).verdict is Verdict.FAILS


def test_notes_loader_keyword_slip_is_a_typo_and_the_shard_decides():
    f = sampler.judge_notes_loader(
        [1, 5, 9], [1, 5, 9], "TypeError: unexpected keyword 'sampleer'", "ValueError"
    )
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert sampler.judge_notes_loader([1, 5, 9], [1, 5, 9], "", "ValueError").errata == ()
    assert sampler.judge_notes_loader([1, 5], [1, 5, 9], "", "").verdict is Verdict.FAILS


def test_dist_partition_and_setup_errata():
    assert sampler.judge_partition([(12, 4, False, 0, 0, True)]).verdict is Verdict.HOLDS
    assert sampler.judge_partition([(10, 4, False, 2, 0, True)]).verdict is Verdict.FAILS
    assert sampler.judge_partition([(10, 4, False, 2, 0, False)]).verdict is Verdict.FAILS
    warned = setup.judge_launch_deprecated("FutureWarning: 'deprecated'")
    assert warned.verdict is None and warned.errata[0].kind is ErratumKind.DEPRECATED_API
    assert warned.errata[0].file == "000" and "env_init.py" in warned.errata[0].quote
    assert setup.judge_launch_deprecated("").errata == ()
