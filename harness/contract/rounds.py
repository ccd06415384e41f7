"""How many timed rounds a point needs: as many as make its median precise, not a fixed time.

pytest-benchmark runs rounds for ``--benchmark-max-time`` whatever the noise: a quiet 50 µs kernel
gets 20 000 rounds it does not need while a noisy one gets no more than the time allows. Here a
short pilot measures the spread, and the rounds are planned so that the 95% confidence interval of
the median is within ±2% (``TARGET``), at least ``min_rounds`` and at most what fits in the
point's cap (``--benchmark-max-time``). A point whose interval is still wider after the rounds is
flagged, not hidden.

The anchors, from their sources: torch.utils.benchmark's ``adaptive_autorange`` stops when
IQR/median < 0.1 after at least 4 blocks (10 s cap); NVBench's ``stdrel`` stops at a relative
standard deviation ≤ 0.5% with ≥ 10 samples and ≥ 0.5 s of them (15 s timeout), earlier once its
noise estimate is stable; ``triton.testing.do_bench`` takes 25 ms of warm-up and 100 ms of repeats.
We judge the median's interval rather than the spread itself: a point with 10% spread still has
a precise median after enough rounds, and a spread target would never be met on a shared CPU.

The interval is distribution-free (order statistics of the sample, binomial ranks), so skewed,
bimodal timing distributions get an honest width. Plain Python, no torch.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

TARGET = 0.02  # half-width of the median's 95% CI, relative to the median
PILOT_SAMPLES = 10
# Enough for ±2% unless the spread is over ~45% (the half-width is ~1.25·1.96·σ/√n): a point
# noisier than that is flagged, not run longer. pytest-benchmark's pedantic rounds cost tens of
# µs each beside the call, so 10 000 rounds of a 60 µs call took 5 s against a 1 s cap.
MAX_ROUNDS = 2000
SLOW_ROUNDS = 3  # rounds of a call too slow for `min_rounds` inside twice its cap (plan)
# A round at least this long (iterations_for): calls back to back amortise the timer and
# pedantic's per-round bookkeeping (tens of µs on CPU), and on CUDA the launch gap before the first.
# On CUDA every reading waits for the device, so the round's first kernel starts a launch gap g
# (the host's return, its loop, dispatch and launch: 10-30 µs) after the start event, inside the
# window: a round of R seconds of work reads g/R high. 2 ms holds that to ~1% at g = 20 µs, where
# 0.5 ms rounds read 4-8% high on 20-100 µs calls (torch.utils.benchmark sizes its blocks so the
# timer's cost is under 1e-4 of one; a 2 ms round costs ~80 ms a pair of 20 rounds).
MIN_ROUND_S = {"cpu": 0.25e-3, "cuda": 2e-3}
# The in-window gap's fit (fit_calls): rounds of k back-to-back calls for each k, whose time is
# a + b·k; the intercept a is the gap, the slope b the call. Up to 32 calls, as far as a round of
# k calls lasts FIT_WINDOW_S (a 10 ms call has a gap under 0.2% of it and is not fitted), each k
# FIT_REPEATS times (its median), so a fit costs at most ~60 ms of calls.
FIT_CALLS = (1, 2, 4, 8, 16, 32)
FIT_WINDOW_S = 10e-3
FIT_REPEATS = 3
Z95 = 1.959964
# A point's rounds are flagged "spread" (the timing self-check's warning, the reports' noisy column)
# above this IQR/median: quiet machines give 3-5% here, and torch.utils.benchmark's
# adaptive_autorange stops at the same 0.1. The flag does not change the verdict: the median's
# interval does. (The gate's own bar for rounds it cannot judge, reports.gate.UNJUDGEABLE_SPREAD, is
# wider: a flag is cheap, refusing to judge is not.)
SPREAD_LIMIT = 0.10


def median_ci(samples) -> tuple[float, float, float]:
    """(low, median, high): the 95% interval of the median from the sample's order statistics
    (ranks n/2 ∓ 1.96·√n/2, the normal approximation to the binomial). Needs ≥ 6 samples to be
    narrower than the sample's range."""
    data = sorted(samples)
    n = len(data)
    if n == 0:
        raise ValueError("no samples")
    mid = data[n // 2] if n % 2 else (data[n // 2 - 1] + data[n // 2]) / 2
    half = Z95 * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return data[lo], mid, data[hi]


def relative_halfwidth(samples) -> float:
    lo, mid, hi = median_ci(samples)
    return (hi - lo) / 2 / mid if mid > 0 else math.inf


@dataclass(frozen=True)
class Plan:
    iterations: int  # calls per round (back to back)
    rounds: int
    round_s: float  # the pilot's median seconds per round
    pilot_halfwidth: float
    capped: bool  # the precision target needed more rounds than the cap allows
    cap_s: float
    fit: CallFit | None = None  # the in-window gap's fit the rounds were sized from (fit_calls)

    def info(self) -> dict:
        return {
            "rounds_planned": self.rounds,
            "iterations": self.iterations,
            "pilot_ci_halfwidth": self.pilot_halfwidth,
            "round_cap_s": self.cap_s,
            "rounds_capped": self.capped,
            **(self.fit.info() if self.fit is not None else {}),
        }


@dataclass(frozen=True)
class CallFit:
    """Rounds of k back-to-back calls fitted as t(k) = a + b·k (least squares over the k's medians):
    ``gap_s`` = a, what every window holds besides its calls (the launch gap before the first
    kernel, on CUDA); ``call_s`` = b, one call back to back."""

    gap_s: float
    call_s: float
    calls: tuple[int, ...]  # the k's timed
    seconds: tuple[float, ...]  # the median seconds of each k's rounds

    @property
    def per_call_s(self) -> float:
        """What a round is sized from: the slope, or, where noise gave a negative intercept (and
        so a slope above the mean), the mean per call of the longest round."""
        mean = self.seconds[-1] / self.calls[-1]
        return self.call_s if 0 < self.call_s <= mean else mean

    def info(self) -> dict:
        return {"gap_s": self.gap_s, "fit_call_s": self.call_s, "fit_calls": self.calls[-1]}


def _fit_ks(first_call_s: float) -> list[int]:
    ks = [k for k in FIT_CALLS if k * first_call_s <= FIT_WINDOW_S]
    return ks if len(ks) >= 2 else []


def fit_call_count(call_s: float) -> int:
    """The calls `fit_calls` makes of a call of `call_s` seconds (for the cost model)."""
    return FIT_REPEATS * sum(_fit_ks(call_s))


def fit_calls(call, clock, first_call_s: float) -> CallFit | None:
    """The in-window gap and the per-call time, from rounds of 1, 2, 4, … 32 calls on `clock` (k
    up to where k calls of `first_call_s` last FIT_WINDOW_S); None for a call too long for two k's,
    whose gap weighs nothing beside it."""
    ks = _fit_ks(first_call_s)
    if not ks:
        return None
    seconds = []
    for k in ks:
        times = []
        for _ in range(FIT_REPEATS):
            t0 = clock()
            for _ in range(k):
                call()
            times.append(clock() - t0)
        seconds.append(sorted(times)[len(times) // 2])
    n = len(ks)
    mean_k, mean_t = sum(ks) / n, sum(seconds) / n
    slope = sum((k - mean_k) * (t - mean_t) for k, t in zip(ks, seconds)) / sum((k - mean_k) ** 2 for k in ks)
    return CallFit(gap_s=mean_t - slope * mean_k, call_s=slope, calls=tuple(ks), seconds=tuple(seconds))


def iterations_for(call_s: float, min_round_s: float) -> int:
    """Calls per round so that one round lasts at least `min_round_s` (timer resolution and, on
    CUDA, the launch gap before the first kernel then weigh little), at most 10 000."""
    return max(1, min(10_000, math.ceil(min_round_s / max(call_s, 1e-9))))


def plan(pilot_round_s, iterations: int, *, cap_s: float, min_rounds: int, target: float = TARGET) -> Plan:
    """Rounds for the median's interval to reach ±`target`: the half-width shrinks as 1/√n, so
    n = n_pilot · (pilot half-width / target)²; at least `min_rounds`, at most what `cap_s` holds.
    The cap does not cut below `min_rounds`, except for a call so slow that `min_rounds` of them
    would overrun the cap twice over: it gets `SLOW_ROUNDS` (three 4-second calls say what five
    would, for 40% less, and the point is flagged: too few rounds for an interval)."""
    samples = list(pilot_round_s)
    round_s = sorted(samples)[len(samples) // 2]
    width = relative_halfwidth(samples) if len(samples) >= 6 else math.inf
    return _plan_from(
        len(samples), width, round_s, iterations, cap_s=cap_s, min_rounds=min_rounds, target=target
    )


def _plan_from(
    n_pilot: int,
    width: float,
    round_s: float,
    iterations: int,
    *,
    cap_s: float,
    min_rounds: int,
    target: float,
) -> Plan:
    rounds, capped = round_count(
        rounds_needed(n_pilot, width, target), round_s, cap_s=cap_s, min_rounds=min_rounds
    )
    return Plan(iterations, rounds, round_s, width, capped=capped, cap_s=cap_s)


def rounds_needed(n_pilot: int, halfwidth: float, target: float = TARGET) -> int:
    """Rounds for a median's interval of relative half-width `halfwidth` after `n_pilot` rounds to
    reach ±`target`: the half-width shrinks as 1/√n, so n = n_pilot · (halfwidth / target)²; as many
    as the cap allows (MAX_ROUNDS) where the pilot gave no interval (an infinite width)."""
    if math.isinf(halfwidth):
        return MAX_ROUNDS
    return math.ceil(n_pilot * (halfwidth / target) ** 2)


def round_count(needed: int, round_s: float, *, cap_s: float, min_rounds: int) -> tuple[int, bool]:
    """(rounds, capped): the `needed` rounds within what `cap_s` holds and at least `min_rounds`,
    or `SLOW_ROUNDS` for a round so slow that `min_rounds` would overrun the cap twice over."""
    fits = int(cap_s / round_s) if round_s > 0 else MAX_ROUNDS
    floor = min(min_rounds, SLOW_ROUNDS) if min_rounds * round_s > 2 * cap_s else min_rounds
    return max(floor, min(needed, fits, MAX_ROUNDS)), needed > max(fits, floor)


PILOT_SHARE = 0.2  # of the point's cap the pilot may spend
PILOT_MIN = 3  # rounds: the fewest that give a spread


def _slow(call_s: float, cap_s: float) -> bool:
    """A call whose three runs exceed the pilot's share of the cap gets no pilot."""
    return PILOT_MIN * call_s > PILOT_SHARE * cap_s


def pilot_plan(call, clock, min_round_s: float, cap_s: float, min_rounds: int, fit: bool = False) -> Plan:
    """The rounds a point needs, from a pilot: one call sizes a round (iterations_for), then rounds
    until PILOT_SAMPLES, or PILOT_MIN once PILOT_SHARE of the cap is spent. The pilot also warms
    the point; its samples are not kept. ``clock``: seconds (the device's clock on CUDA). `fit`
    (a device's clock): the round is sized from several calls (`fit_calls`), since one call read
    on a device's clock carries the whole launch gap, and the fit goes into the plan."""
    t0 = clock()
    call()
    call_s = clock() - t0
    if _slow(call_s, cap_s):
        return plan([call_s] * PILOT_MIN, 1, cap_s=cap_s, min_rounds=min_rounds)
    gap_fit = fit_calls(call, clock, call_s) if fit else None
    iterations = iterations_for(gap_fit.per_call_s if gap_fit else call_s, min_round_s)
    # The budget is wall time: the device's clock reads only what the rounds enqueued.
    samples, started = [], time.perf_counter()
    while len(samples) < PILOT_SAMPLES and (
        len(samples) < PILOT_MIN or time.perf_counter() - started < PILOT_SHARE * cap_s
    ):
        t0 = clock()
        for _ in range(iterations):
            call()
        samples.append(clock() - t0)
    planned = plan(samples, iterations, cap_s=cap_s, min_rounds=min_rounds)
    return dataclasses.replace(planned, fit=gap_fit) if gap_fit else planned


def pilot_samples(call_s: float, round_s: float, cap_s: float) -> int:
    """How many rounds pilot_plan's pilot takes, for the cost model: none for a slow call; else
    rounds until PILOT_SAMPLES, or PILOT_MIN once PILOT_SHARE of the cap is spent."""
    if _slow(call_s, cap_s):
        return 0
    return min(PILOT_SAMPLES, max(PILOT_MIN, math.ceil(PILOT_SHARE * cap_s / round_s)))


def expected_halfwidth(spread: float, iterations: int, n_rounds: int) -> float:
    """The relative half-width `median_ci` would give `n_rounds` rounds of `iterations` calls back
    to back, for calls whose relative spread (σ/median of one call) is `spread`: a round averages
    its calls (σ/√k), and the median of n rounds has ~1.25× the mean's standard error, so
    ~1.25·1.96·σ_round/√n. Infinite under 6 rounds, as `plan` takes it (no interval)."""
    if n_rounds < 6:
        return math.inf
    return 1.25 * Z95 * spread / math.sqrt(iterations) / math.sqrt(n_rounds)


def expected_plan(
    call_s: float, spread: float, *, min_round_s: float, cap_s: float, min_rounds: int
) -> tuple[int, Plan]:
    """(pilot rounds, plan): what `pilot_plan` makes of a call of `call_s` seconds whose calls
    spread by `spread` (σ/median), without running it. The cost model (plan.costmodel) prices
    a point from this, so the estimate follows the policy the run uses."""
    if _slow(call_s, cap_s):
        return 0, _plan_from(0, math.inf, call_s, 1, cap_s=cap_s, min_rounds=min_rounds, target=TARGET)
    iterations = iterations_for(call_s, min_round_s)
    round_s = iterations * call_s
    n_pilot = pilot_samples(call_s, round_s, cap_s)
    width = expected_halfwidth(spread, iterations, n_pilot)
    return n_pilot, _plan_from(
        n_pilot, width, round_s, iterations, cap_s=cap_s, min_rounds=min_rounds, target=TARGET
    )


def fixed_time_rounds(call_s: float, max_time_s: float, min_rounds: int) -> int:
    """Rounds of one call each for a point whose untimed setup needs pedantic mode (a cold-L2
    point's flush before every round), which does not calibrate: as many as pytest-benchmark would
    run in ``--benchmark-max-time`` (`max_time_s`), at least ``--benchmark-min-rounds``, at most
    10 000."""
    return max(min_rounds, min(10_000, math.ceil(max_time_s / max(call_s, 1e-7))))


def probe_reps(median_s: float) -> int:
    """Calls of the CUDA host-vs-device probe after the rounds: 3-10 (~0.5 s for short calls), one
    above 10 ms, where the launch and the barrier are under 1% of the call."""
    return 1 if median_s > 10e-3 else max(3, min(10, int(0.5 / max(median_s, 1e-6))))


def precision_warning(rounds_s, target: float = TARGET) -> str | None:
    """The flag for a point whose median is less precise than the target after its rounds."""
    if len(rounds_s) < 6:
        return f"imprecise: {len(rounds_s)} rounds, too few for an interval of the median"
    width = relative_halfwidth(rounds_s)
    if width > target:
        return (
            f"imprecise: the median's 95% CI is ±{width:.1%} after {len(rounds_s)} rounds "
            f"(target ±{target:.0%}; the round cap stopped it)"
        )
    return None
