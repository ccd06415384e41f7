"""``test_pair``: two ways of computing one thing timed side by side, the speed-up a verdict is
read from (plan/__init__.py's `PairPoint`; harness.interleave, harness.gain).

Each side is also timed alone by ``test_benchmark`` (pytest-benchmark's JSON, ``--benchmark-compare``
and the plots keep their per-variant figures); the pair's rounds go into the results file's
``pairs`` (harness.record.PairTiming), where the reports take the ratio round by round.
"""

from __future__ import annotations

import functools

import pytest
import torch

from cases.spec import dtype_name, tolerance_at
from harness import interleave, load, measure, record, rounds
from plan import oversize_reason
from suite import options
from suite.progress_plugin import progress


def test_pair(pair_point, input_cache, noise_floor, record_property, request):
    # Not pytest-benchmark's fixture (it times one callable); its options still rule: the pair is
    # timed only where timing is on, and runs under --benchmark-only (suite/recorder.py).
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("timing disabled (--benchmark-disable): each side's check ran in test_check")
    point = pair_point
    calls, outputs = {}, {}
    for side in point.sides:
        if reason := oversize_reason(side, input_cache):
            pytest.skip(f"{side.variant_name}: {reason}")
        inputs, truth = input_cache.get(side)
        call = functools.partial(side.variant.fn, *inputs)
        out, err = measure.checked_call(
            side.variant.fn, inputs, truth, tolerance_at(side.tolerance, side.size)
        )
        if not err.within:  # a fast wrong answer is not a speed-up: test_check says what it broke
            what = "changes its inputs in place" if err.changed_inputs else "is outside its tolerance"
            pytest.skip(f"{side.variant_name} {what} here; not timed")
        outputs[side.variant_name] = out
        calls[side.variant_name] = measure.synchronized(call, point.device)
    identical = measure.bitwise_identical(outputs[point.fast], outputs[point.slow])
    del outputs
    device_kind = torch.device(point.device).type
    paired = interleave.timed_pair(
        calls,
        # The whole pair gets one point's cap (--benchmark-max-time, trimmed by --time-budget).
        cap_s=progress(request.config).round_cap_s(point.id),
        min_rounds=max(interleave.MIN_PAIRED_ROUNDS, options.min_rounds(request.config)),
        min_round_s=rounds.MIN_ROUND_S.get(device_kind, rounds.MIN_ROUND_S["cpu"]),
    )
    timing = record.PairTiming(
        case=point.case.id,
        fast=point.fast,
        slow=point.slow,
        size=dict(point.size),
        size_label=point.size_label,
        dtype=dtype_name(point.dtype),
        device=point.device,
        fast_s=tuple(paired.seconds[point.fast]),
        slow_s=tuple(paired.seconds[point.slow]),
        against=point.against,
        part=point.part,
        x=point.comparison.x_axis,
        identical=identical,
        noise_floor=noise_floor(point.device),
        load=load.measure(probe_s=0).to_data(),
        iterations=dict(paired.iterations),
    )
    record_property("pair", timing.to_data())
