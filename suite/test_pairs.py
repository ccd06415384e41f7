"""``test_pair``: two ways of computing one thing timed side by side, the speed-up a verdict is
read from (plan's `PairPoint`, measured by harness.point.pair_benchmark).

Each side is also timed alone by ``test_benchmark`` (pytest-benchmark's JSON, ``--benchmark-compare``
and the plots keep their per-variant figures); the pair's rounds go into the results file's
``pairs`` (harness.contract.record.PairTiming), where the reports take the ratio round by round.
"""

from __future__ import annotations

import pytest

import plan
from harness.point import pair_benchmark
from harness.point.variant_benchmark import NotMeasured
from suite import options
from suite.progress_plugin import progress


def test_pair(pair_point, input_cache, noise_floor, record_property, request):
    # Not pytest-benchmark's fixture (it times one callable); its options still rule: the pair is
    # timed only where timing is on, and runs under --benchmark-only (suite/recorder.py).
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("timing disabled (--benchmark-disable): each side's check ran in test_check")
    try:
        timing = pair_benchmark.run(
            plan.pair_at(pair_point, input_cache),
            # The whole pair gets one point's cap (--benchmark-max-time, trimmed by --time-budget).
            cap_s=progress(request.config).round_cap_s(pair_point.id),
            min_rounds=options.min_rounds(request.config),
            noise_floor=lambda: noise_floor(pair_point.device),
            oversize=lambda name: plan.oversize_reason(pair_point.side(name), input_cache),
        )
    except NotMeasured as exc:  # a side too big, or wrong here (test_check says what it broke)
        reason = str(exc)
    else:
        record_property("pair", timing.to_data())
        return
    pytest.skip(reason)  # outside the handler: the harness's frames and tensors are released first
