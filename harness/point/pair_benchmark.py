"""Two ways of computing one thing at one point, checked and timed side by side: what
``test_pair`` does. The speed-up a verdict is read from comes from here.

Each side is checked against the oracle before any round is timed: a fast wrong answer is not a
speed-up, so a side outside its tolerance (or writing into its inputs) leaves the pair untimed
and red (`WrongAnswer`: a wrong answer was observed, and a run of the pairs alone must say so).
The rounds alternate between the sides (`harness.measure.interleave`) within one point's cap, on
the device's clock (`harness.measure.device`: CUDA events at each round's start and end, no
barrier between the calls; the host's clock on a CPU), and the record
(`harness.contract.record.PairTiming`) names that clock and carries the device's A/A noise floor
and the machine's load over the rounds, both measured after them, so the reports can tell a gain
from noise. On a device the rounds are sized from several calls and each side's in-window launch
gap is fitted and recorded (harness.contract.rounds.fit_calls), and after the rounds each side is
timed again as a CUDA-graph replay (harness.measure.graph_figure): the GPU-only figure beside
the event-timed one, which tells a side that ran at the host's pace. A side's precision flags
(`harness.measure.block_context.scoped`) are set once around each of its round blocks, and the
rounds time the bare computation. Plain Python: no pytest, no
cases, no plan.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable

import torch

from harness import measure
from harness.contract import record, rounds
from harness.host import load
from harness.measure import block_context, graph_figure, interleave
from harness.measure import device as harness_device
from harness.point.variant_benchmark import NotMeasured, VariantAtPoint, WrongAnswer


@dataclass(frozen=True)
class PairAtPoint:
    """What the harness needs of one timed pair (the plan's PairPoint resolved): its key, the two
    sides under the rule's names for them, and what the record says of the pair."""

    key: record.PointKey
    fast: str
    slow: str
    sides: dict[str, VariantAtPoint]  # fast's and slow's name → the variant at this point
    against: str = "rule"  # harness.contract.record.PairTiming.against
    x: str | None = None  # the comparison's x axis, for the plots


def run(
    pair: PairAtPoint,
    *,
    cap_s: float,
    min_rounds: int,
    noise_floor: Callable[[], float | None],
    oversize: Callable[[str], str | None] = lambda name: None,
) -> record.PairTiming:
    """Check both sides, then time them in alternating rounds (at least `min_rounds`, within
    `cap_s` for the whole pair); `noise_floor()` is asked after the rounds, so the floor's own
    measurement never runs between them. `oversize(name)` says why a side's size cannot be tried
    here (or None); it is asked just before that side's inputs are made, so the second side's
    memory budget is read with the first side's inputs, truth and output held, as they are then."""
    calls, contexts, outputs = {}, {}, {}
    for name, side in pair.sides.items():
        if reason := oversize(name):
            raise NotMeasured(f"{name}: {reason}")
        inputs, truth = side.inputs()
        out, err = measure.checked_call(side.fn, inputs, truth, side.tolerance)
        if not err.within:
            what = "changes its inputs in place" if err.changed_inputs else "is outside its tolerance"
            raise WrongAnswer(
                f"{name} {what} here ({err.worst or err.changed_inputs}); the pair is not timed"
            )
        outputs[name] = out  # checked as called directly: the variant set its own flags
        # No barrier after the call: the device's clock waits at each round's start and end. The
        # flags: entered around each round block of this side, not inside each call.
        calls[name], contexts[name] = block_context.entered(side.fn, inputs)
    identical = measure.bitwise_identical(outputs[pair.fast], outputs[pair.slow])
    del outputs  # the rounds' own outputs need the memory
    device = harness_device.of(pair.key.device)
    on_device = device.kind != "cpu"
    min_round_s = rounds.MIN_ROUND_S.get(torch.device(pair.key.device).type, rounds.MIN_ROUND_S["cpu"])
    with load.stretch() as rounds_load:  # the machine's load is judged over the rounds alone
        paired = interleave.timed_pair(
            calls,
            cap_s=cap_s,
            min_rounds=max(interleave.MIN_PAIRED_ROUNDS, min_rounds),
            min_round_s=min_round_s,
            clock=device.clock(),
            contexts=contexts,
            fit_gap=on_device,
        )
    # Each side's GPU-only figure beside its rounds, after them: a side whose rounds ran at the
    # host's pace reads slower there than its graph replay (record.PairTiming.host_bound).
    graphs = {
        name: graph_figure.per_call(
            call,
            device,
            call_s=statistics.median(paired.seconds[name]),
            min_round_s=min_round_s,
            context=contexts[name],
        )
        for name, call in calls.items()
        if on_device
    }
    return record.PairTiming.at(
        pair.key,
        fast=pair.fast,
        slow=pair.slow,
        fast_s=tuple(paired.seconds[pair.fast]),
        slow_s=tuple(paired.seconds[pair.slow]),
        against=pair.against,
        x=pair.x,
        identical=identical,
        noise_floor=noise_floor(),
        load=rounds_load.load.to_data(),
        iterations=dict(paired.iterations),
        timer=device.timer_name,
        gap_s={name: fit.gap_s for name, fit in paired.fits.items()},
        graph_s={name: g.seconds for name, g in graphs.items() if g.seconds is not None},
        graph_calls={name: g.calls for name, g in graphs.items() if g.seconds is not None},
        graph_skipped={name: g.reason for name, g in graphs.items() if g.seconds is None},
    )
