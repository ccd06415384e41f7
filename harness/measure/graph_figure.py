"""A GPU-only figure for a call: several calls captured as one CUDA graph, replayed on the device's clock.

Event-timed rounds of back-to-back calls give a call's eager throughput: max(the host's issue
time, the GPU's time) per call. For a call of several small kernels the host is the slower one
(`distance.pairwise`'s matmul at n = 1024 on an H100: 6 launches, ~40 µs of GPU work, ~75 µs of
host issue; the first H100 run's graph replay read 39.6 µs), so its rounds read the host's pace
and a speed-up over it is the host's, not the GPU's. A graph replays all its kernels from one
launch, with no Python and no dispatch between them: its time per call is the GPU's alone.
Several calls go into one graph so the one launch gap before the replay weighs little, and each
round replays it as often as a round needs (`harness.contract.rounds.MIN_ROUND_S`).

A call that cannot be captured (it waits for the host, or the device has no graphs) gets no
figure, and the reason instead. Plain Python over the device protocol (harness.measure.device):
a `FakeDevice` captures and replays its fake kernels the same way.
"""

from __future__ import annotations

import contextlib
import statistics
from dataclasses import dataclass
from typing import Any, Callable, ContextManager

from harness.contract import rounds
from harness.measure import device as harness_device
from harness.measure import interleave

MAX_CALLS = 32  # calls captured in one graph: their nodes, and the outputs' pool, stay small
ROUNDS = 5  # replay rounds: the median of five is steady on a GPU-bound replay
# A call longer than this gets no replay: ten more calls (the capture's warm-ups, the rounds) would
# cost seconds, and the flag reads the fast side, which is rarely this long.
MAX_CALL_S = 0.1


def expected_calls(call_s: float, min_round_s: float) -> int:
    """The calls `per_call` makes of a call of `call_s` seconds on CUDA (for the cost model): the
    capture's three warm-up calls of the graph's calls (harness.measure.device.CudaDevice.capture),
    then a warm replay, a sizing one and ROUNDS rounds of replays."""
    if call_s > MAX_CALL_S:
        return 0
    calls = min(MAX_CALLS, rounds.iterations_for(call_s, min_round_s))
    replays = rounds.iterations_for(calls * call_s, min_round_s)
    return calls * (3 + 2 + ROUNDS * replays)


@dataclass(frozen=True)
class GraphFigure:
    seconds: float | None  # per call: the median round's replays ÷ the calls they replayed
    calls: int  # calls captured in the graph
    reason: str = ""  # why there is no figure


def per_call(
    call: Callable[[], Any],
    device,
    *,
    call_s: float,
    min_round_s: float,
    context: Callable[[], ContextManager] = contextlib.nullcontext,
) -> GraphFigure:
    """`call` (which takes no arguments) captured `calls` times over in one graph, where `calls`
    makes a round of `call_s` seconds each (the event-timed median) last `min_round_s`, at most
    MAX_CALLS; the replay timed in ROUNDS rounds on the device's clock, inside `context` (the
    side's flags, entered as around its timed blocks)."""
    dev = device if hasattr(device, "clock") else harness_device.of(device)
    calls = min(MAX_CALLS, rounds.iterations_for(call_s, min_round_s))
    capture = getattr(dev, "capture", None)
    if capture is None:
        return GraphFigure(None, calls, f"{dev.kind} has no graphs")
    if call_s > MAX_CALL_S:
        return GraphFigure(
            None, calls, f"not replayed: {call_s * 1e3:.0f} ms a call (over {MAX_CALL_S * 1e3:.0f} ms)"
        )

    def several():
        out = None
        for _ in range(calls):
            out = call()  # the last output is the graph's; the earlier ones free into its pool
        return out

    # The rounds' cached blocks given back first: the graph's pool is its own, and a point near the
    # device's capacity would otherwise run out of memory in the capture.
    dev.release_cached()
    with context():
        try:
            replay, _ = capture(several)
        except (RuntimeError, NotImplementedError) as exc:
            return GraphFigure(None, calls, "not capturable: " + (str(exc).splitlines() or [""])[0][:200])
        clock = dev.clock()
        replay()
        one = interleave.one_round(replay, 1, clock)
        replays = rounds.iterations_for(one, min_round_s)
        seconds = [interleave.one_round(replay, replays, clock) / calls for _ in range(ROUNDS)]
    del replay  # the graph and its memory pool
    dev.release_cached()
    return GraphFigure(statistics.median(seconds), calls)
