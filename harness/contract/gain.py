"""When a gain is real: the catalogue's policy for speed and memory claims, in one place.

CATALOG.md ("How a technique is judged"): a gain holds only when its 95% confidence interval lies
above 1 + δ, with δ at least the noise floor measured on that machine and never below 5%; an
interval inside [1/(1+δ), 1+δ] is "no measurable difference". Both the reports (a pair's verdict)
and the rule checks that time something themselves (a crossover sweep) classify through
`classify`, so one threshold decides every gain the suite reports.

Why paired rounds: two variants timed minutes apart do not see the same machine (another job
starts, the clock throttles), and an interval computed as if their rounds were independent
turns that drift into a "speed-up". Rounds taken side by side (`harness.measure.interleave`) see the same
machine; the ratio of each pair of rounds cancels what they shared, and the interval is computed
over those ratios. Why the median of the ratios: interference only ever adds time, to one side of
a pair at random, so the ratios have long tails on both sides; the median ignores them.

Plain Python with numpy: imported by `reports` (which must not import torch) and by the cases.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from harness.contract import rounds

LEVEL = 0.95
DELTA_FLOOR = 0.05  # the catalogue's minimum practically significant gain
MIN_PAIRS = 6  # fewer paired rounds give no interval narrower than their range (rounds.median_ci)
# A CUDA side whose event-timed median is over this multiple of its graph replay's per-call time
# (harness.measure.graph_figure) ran at the host's pace: its rounds time Python, dispatch and the
# launches, and a speed-up over it is the host's, not the GPU's. 1.3: a GPU-bound call's eager and
# replayed times differ by its launch gaps only (a few %; the gpu review's B2 and B6).
HOST_BOUND_LIMIT = 1.3


def host_bound(event_s: float, graph_s: float | None, limit: float = HOST_BOUND_LIMIT) -> bool:
    """Whether a side timed at `event_s` a call on the device's clock, and at `graph_s` replayed
    from a graph, ran at the host's pace (False where there is no graph figure)."""
    return graph_s is not None and graph_s > 0 and event_s > limit * graph_s


class Gain(str, enum.Enum):
    """What a ratio's interval says, against the band ±δ around 1."""

    FASTER = "faster"  # (or lighter) the whole interval above 1 + δ
    SLOWER = "slower"  # the whole interval below 1 / (1 + δ)
    SAME = "no measurable difference"  # the whole interval inside the band
    UNCLEAR = "too noisy to tell"  # the interval crosses an edge of the band, or there is none


@dataclass(frozen=True)
class Ratio:
    """A ratio (slow ÷ fast: above 1 means the second side is faster) with its 95% interval."""

    point: float
    low: float
    high: float
    n: int = 0  # paired rounds it rests on (0: not from paired rounds)

    def __str__(self) -> str:
        if math.isnan(self.low):
            return f"{self.point:.3g}× (no interval)"
        return f"{self.point:.3g}× [95% CI {self.low:.3g}, {self.high:.3g}]"


def delta(noise_floor: float | None = None, floor: float = DELTA_FLOOR) -> float:
    """The band's half-width: the machine's measured noise floor, never below `floor` (the
    catalogue's 5%; a results file judged again is judged with the floor it recorded)."""
    if noise_floor is None or not math.isfinite(noise_floor):
        return floor
    return max(floor, float(noise_floor))


def classify(ratio: Ratio, band: float = DELTA_FLOOR) -> Gain:
    """The gain an interval shows against ±`band` (a relative half-width, e.g. 0.05)."""
    if band < 0 or not math.isfinite(band):
        raise ValueError(f"band must be a finite non-negative fraction, not {band!r}")
    lo, hi = ratio.low, ratio.high
    if math.isnan(lo) or math.isnan(hi):
        return Gain.UNCLEAR
    up, down = 1.0 + band, 1.0 / (1.0 + band)
    if lo > up:
        return Gain.FASTER
    if hi < down:
        return Gain.SLOWER
    if lo >= down and hi <= up:
        return Gain.SAME
    return Gain.UNCLEAR


def classify_count(ratio: float, band: float = DELTA_FLOOR) -> Gain:
    """A counted ratio (a peak in bytes: no sampling, so no interval) against ±`band`, by the same
    edges as `classify`."""
    return classify(Ratio(ratio, ratio, ratio), band)


def paired_ratio(slow, fast) -> Ratio:
    """median(slow_i / fast_i) over rounds i taken side by side, with the distribution-free 95%
    interval of that median (order statistics at binomial ranks, `harness.contract.rounds.median_ci`: no
    assumption on the ratios' shape, O(n log n) for thousands of rounds). Times must be positive
    and finite (a zero or NaN time is a broken timer, not a measurement): ValueError otherwise."""
    logs = log_ratios(slow, fast)
    if logs.size == 0:
        return Ratio(math.nan, math.nan, math.nan, 0)
    # In logs the ratio is a difference and the median commutes with exp: the interval of the
    # median log-ratio, exponentiated, is the interval of the median ratio.
    point = float(np.exp(np.median(logs)))
    if logs.size < MIN_PAIRS:
        return Ratio(point, math.nan, math.nan, int(logs.size))
    lo, _, hi = rounds.median_ci(logs.tolist())
    return Ratio(point, float(np.exp(lo)), float(np.exp(hi)), int(logs.size))


def log_ratios(slow, fast) -> np.ndarray:
    """log(slow_i / fast_i) per round taken side by side: what `paired_ratio` and the gate's
    per-run speed-up (reports.gate.model.Runs: the median of these) both rest on."""
    slow, fast = np.asarray(slow, dtype=float), np.asarray(fast, dtype=float)
    if slow.shape != fast.shape or slow.ndim != 1:
        raise ValueError(
            f"paired rounds must be two equal-length 1-D samples, not {slow.shape} and {fast.shape}"
        )
    if not (np.isfinite(slow).all() and np.isfinite(fast).all() and (slow > 0).all() and (fast > 0).all()):
        raise ValueError("paired round times must be positive and finite")
    return np.log(slow) - np.log(fast)


def noise_floor(a, b) -> float:
    """The largest gain an A/A pair (one computation timed as both sides, interleaved) appears
    to show at 95%: how far from 1 this machine's noise alone puts a paired interval."""
    aa = paired_ratio(a, b)
    if math.isnan(aa.low):
        return math.nan
    return max(aa.high - 1.0, 1.0 / aa.low - 1.0, 0.0)
