"""The judges of `cases/sparse.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import sparse
from harness.contract.record import Verdict


def test_sparse_coo_layout_follows_the_observed_layout():
    assert sparse.judge_coo_layout(310, "int64", (2, 310), (310,), True).verdict is Verdict.HOLDS
    assert sparse.judge_coo_layout(310, "int32", (2, 310), (310,), True).verdict is Verdict.FAILS
    assert sparse.judge_coo_layout(310, "int64", (310, 2), (310,), True).verdict is Verdict.FAILS
    assert sparse.judge_coo_layout(310, "int64", (2, 310), (310,), False).verdict is Verdict.FAILS


def test_sparse_stores_zeros_follows_what_was_kept():
    assert sparse.judge_stores_zeros(2, 2, 0).verdict is Verdict.HOLDS
    assert sparse.judge_stores_zeros(1, 2, 0).verdict is Verdict.FAILS  # coalesce dropped the 0
    assert sparse.judge_stores_zeros(2, 1, 0).verdict is Verdict.FAILS


def test_sparse_where_it_turns_over_sizes_and_densities():
    def at(n, mem, time):
        return (n, mem, mem, time, time, time, "t")

    only_large = [at(256, 0.2, 0.0), at(1024, 0.2, 0.03)]
    # bytes pay at both sizes (20 bytes per nnz whatever n): the size is not what turns it, so the
    # notes' "unless very large and very sparse" fails, naming the density.
    f = sparse.judge_where_it_turns(only_large, "cpu")
    assert f.verdict is Verdict.FAILS and "n=256" in f.evidence and "0.2" in f.evidence
    held = sparse.judge_where_it_turns([at(256, 0.0, 0.0), at(1024, 0.2, 0.03)], "cpu")
    assert held.verdict is Verdict.HOLDS and "n=1024" in held.evidence
    assert (
        sparse.judge_where_it_turns([at(256, None, 0.0), at(1024, 0.2, 0.03)], "cpu").verdict is Verdict.FAILS
    )
    assert (
        sparse.judge_where_it_turns([at(256, 0.0, 0.0), at(1024, 0.0, 0.0)], "cpu").verdict is Verdict.FAILS
    )
    # Bytes are counted, not timed: a busy machine changes nothing but the context's note.
    busy = sparse.judge_where_it_turns(
        [at(256, 0.0, 0.0), at(1024, 0.2, 0.03)], "cpu", busy="machine busy (x)"
    )
    assert busy.verdict is Verdict.HOLDS and "machine busy (x)" in busy.evidence
