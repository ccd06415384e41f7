"""The judges of `cases/parallel/average_gradient.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases._lib.data_parallel import reduction_tolerance
from cases.parallel import average_gradient, dp_vs_ddp
from harness.contract.record import Verdict

U32 = 2.0**-24


def test_average_gradient_holds_within_the_bound_and_fails_beyond():
    bound = reduction_tolerance(U32, 32, 64, 32, 2)
    assert average_gradient.judge_average_gradient(1.6e-7, 1.0, 0.48, bound, 2).verdict is Verdict.HOLDS
    summed = average_gradient.judge_average_gradient(1.0, 1.0, 0.48, bound, 2)  # ÷ world forgotten
    assert summed.verdict is Verdict.FAILS


def test_all_reduce_multigpu_as_written_is_context_with_its_erratum_listed_once_elsewhere():
    gone = average_gradient.judge_all_reduce_multigpu(False, "AttributeError('no all_reduce_multigpu')")
    assert gone.verdict is None and gone.errata == () and "removed" in gone.evidence
    assert "runs" in average_gradient.judge_all_reduce_multigpu(True, "").evidence


def test_the_claim_says_how_the_removed_call_is_read():
    (claim,) = average_gradient.CASE.claims
    assert "all_reduce_multigpu" in claim.quote and "dist.all_reduce(grad)" in claim.reading


def test_manual_averaging_vs_ddp_and_two_nodes_are_computed():
    assert (
        average_gradient.judge_average_gradient_vs_ddp(0.0, 2e-6, True, 0.02, 0.018, 2).verdict
        is Verdict.HOLDS
    )
    assert (
        average_gradient.judge_average_gradient_vs_ddp(0.5, 2e-6, False, 0.02, 0.018, 2).verdict
        is Verdict.FAILS
    )
    assert dp_vs_ddp.judge_two_nodes(1e-8, 2.5e-6, 7, 9.0).verdict is Verdict.DEPENDS
    assert dp_vs_ddp.judge_two_nodes(1e-2, 2.5e-6, 7, 9.0).verdict is Verdict.FAILS
