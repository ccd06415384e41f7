"""The same verdict on every run, and a busy machine never contradicting a quiet one.

Replays the paired rounds a real quick-profile run recorded (every timed pair at its largest size,
tests/data/paired_rounds_cpu.json.gz) through the suite's own judging (harness.contract.gain,
reports.verdicts.speed_judgement), once as recorded and three times with a busy machine's noise
laid over them: a slowdown shared by both sides of a round (another job on the machine: what
timing the sides side by side is for), noise of each side's own, and spikes on one side of a
round (a descheduled thread). Busy replays are judged as the suite judges a run whose load it
measured busy, with the band widened to the noise floor an A/A pair shows under the same noise.
"""

from __future__ import annotations

import gzip
import json
from collections import namedtuple

import numpy as np
import pytest

from harness.contract import gain
from reports import summary, verdicts
from tests import paths

DATA = paths.DATA / "paired_rounds_cpu.json.gz"
PAIRS = json.loads(gzip.decompress(DATA.read_bytes()))["pairs"]
Row = namedtuple(
    "Row", "fast slow size_label dtype device speedup ci_low ci_high gain delta quality identical"
)

SHARED_SIGMA = 0.4  # a round's machine speed varies ±50% (another job comes and goes)
OWN_SIGMA = 0.08  # each side's own jitter within the round
SPIKE_P, SPIKE = 0.05, (1.5, 4.0)  # 5% of each side's rounds descheduled, 1.5-4× longer


def busy(times: np.ndarray, shared: np.ndarray, rng) -> np.ndarray:
    spikes = np.where(rng.random(times.size) < SPIKE_P, rng.uniform(*SPIKE, times.size), 1.0)
    return times * shared * rng.lognormal(0, OWN_SIGMA, times.size) * spikes


def judge(pair, fast, slow, band: float, busy_reason: str) -> str:
    ratio = gain.paired_ratio(slow, fast)
    quality = summary.quality(True, ratio.n, busy_reason, band)
    row = Row(
        pair["fast"],
        pair["slow"],
        pair["size_label"],
        pair["dtype"],
        pair["device"],
        ratio.point,
        ratio.low,
        ratio.high,
        gain.classify(ratio, band).value,
        band,
        quality,
        pair["identical"],
    )
    return verdicts.speed_judgement(row).verdict


def replay(seed: int) -> dict[str, str]:
    rng = np.random.default_rng(seed)
    n = 200
    a_a = np.full(n, 1e-3)
    shared = rng.lognormal(0, SHARED_SIGMA, n)
    floor = gain.noise_floor(busy(a_a, shared, rng), busy(a_a, shared, rng))
    band = gain.delta(floor)
    out = {}
    for pair in PAIRS:
        fast, slow = np.asarray(pair["fast_s"]), np.asarray(pair["slow_s"])
        shared = rng.lognormal(0, SHARED_SIGMA, fast.size)
        out[_name(pair)] = judge(
            pair, busy(fast, shared, rng), busy(slow, shared, rng), band, "replayed busy"
        )
    return out


def _name(pair) -> str:
    return f"{pair['case']} {pair['fast']} vs {pair['slow']} {pair['size_label']} {pair['dtype']}"


def as_recorded() -> dict[str, str]:
    return {
        _name(p): judge(p, np.asarray(p["fast_s"]), np.asarray(p["slow_s"]), gain.DELTA_FLOOR, "")
        for p in PAIRS
    }


def test_the_fixture_covers_the_timed_ids():
    assert len({p["case"] for p in PAIRS}) >= 20


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_busy_replay_never_contradicts_the_recorded_run(seed):
    recorded, noisy = as_recorded(), replay(seed)
    flipped = {k: (recorded[k], noisy[k]) for k in recorded if {recorded[k], noisy[k]} == {"holds", "fails"}}
    assert not flipped, f"holds against fails: {flipped}"


def test_three_busy_replays_agree_among_themselves():
    runs = [replay(seed) for seed in (10, 11, 12)]
    differ = {k: [r[k] for r in runs] for k in runs[0] if len({r[k] for r in runs}) > 1}
    same = len(runs[0]) - len(differ)
    print(f"{same}/{len(runs[0])} pairs identical across three busy replays; differ: {differ}")
    assert not any({"holds", "fails"} <= set(v) for v in differ.values()), differ
    assert len(differ) <= 0.1 * len(runs[0]), differ


def test_unpaired_noise_would_have_flipped_verdicts():
    """The control: the same recorded rounds with the shared slowdown applied to one side only
    (what two variants timed minutes apart see) do flip verdicts: the replay can fail."""
    rng = np.random.default_rng(5)
    flips = 0
    for pair in PAIRS:
        fast, slow = np.asarray(pair["fast_s"]), np.asarray(pair["slow_s"])
        stretch = rng.lognormal(0, SHARED_SIGMA, fast.size) * 2.0  # the fast side ran while a job ran
        v = judge(pair, fast * stretch, slow, gain.DELTA_FLOOR, "")
        flips += {v, as_recorded()[_name(pair)]} == {"holds", "fails"}
    assert flips > 0
