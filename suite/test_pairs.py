"""``test_pair``: two ways of computing one thing timed side by side, the speed-up a verdict is
read from (plan's `PairPoint`, measured by harness.point.pair_benchmark).

The pair is timed once a run (suite/pair_rounds.py), by this test or by the first of its sides'
``test_benchmark``, which take their own rows from their side of the same rounds
(pytest-benchmark's JSON, ``--benchmark-compare`` and the plots keep their per-variant figures);
the pair's rounds go into the results file's ``pairs`` (harness.contract.record.PairTiming),
where the reports take the ratio round by round.
"""

from __future__ import annotations

import pytest

from harness.point.variant_benchmark import NotMeasured


def test_pair(pair_point, pair_rounds, record_property, request):
    # Not pytest-benchmark's fixture (it times one callable); its options still rule: the pair is
    # timed only where timing is on, and runs under --benchmark-only (suite/recorder.py).
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("timing disabled (--benchmark-disable): each side's check ran in test_check")
    try:  # timed here, or already by a side's test_benchmark (suite/pair_rounds.py)
        timing = pair_rounds.timing(pair_point)
    except NotMeasured as exc:  # a side too big, or wrong here (test_check says what it broke)
        reason = str(exc)
    else:
        record_property("pair", timing.to_data())
        return
    pytest.skip(reason)  # outside the handler: the harness's frames and tensors are released first
