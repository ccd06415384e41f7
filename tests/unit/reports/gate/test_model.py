"""The gate's run-level statistics (reports/gate/model.py) on real and planted rounds: the A/A false-alarm
rate, detection of real and injected slowdowns, between-run noise, the machine prior of one- and two-run
baselines, paired ratios from a mixture of regimes left unjudged."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from harness.contract import record, rules
from reports import gate, load
from reports.gate.model import _spread
from tests import paths, synthetic
from tests.gate_cli import run_gate
from tests.synthetic import pooled, write

DATA = paths.DATA
REAL = [DATA / "distance_cpu_run1.json", DATA / "distance_cpu_run2.json"]
REAL_ALL = [DATA / "distance_cpu_all_run1.json", DATA / "distance_cpu_all_recheck.json"]
_load = synthetic.SameShapeLoader()  # the trials' runs, read at a fraction of the loader's cost


# ---- statistics ----------------------------------------------------------------------------------


def _resampled(results: load.Results, rng, slow: dict | None = None) -> load.Results:
    """Each sample resampled with replacement; ``slow`` multiplies the rounds of a variant or of
    every variant with a role ({"optimized": 1.25})."""
    rows = results.rows.copy()
    slow = slow or {}
    rows["data"] = [
        rng.choice(d, d.size) * slow.get(v, slow.get(r, 1.0))
        for d, v, r in zip(rows["data"], rows["variant"], rows["role"])
    ]
    return load.Results(rows, results.outcomes, results.runs, results.cases)


def _real_pairs(results: load.Results) -> load.Results:
    """Every pair of real samples of one run and size that the gate would judge (spread within
    `gate.UNJUDGEABLE_SPREAD`, ≥ 5 rounds), each pair as its own case: slower variant naive, faster one
    optimized. The rounds, their noise and their outliers are real; only the pairing is new."""
    rows = results.rows
    rows = rows[[d.size >= 5 and _spread(d) <= gate.UNJUDGEABLE_SPREAD for d in rows["data"]]]
    parts, cases = [], {}
    for size, group in rows.groupby("size_label"):
        group = group.sort_values("median_s", ascending=False)
        for i, j in itertools.combinations(range(len(group)), 2):
            pair = group.iloc[[i, j]].copy()
            pair["case"] = f"aa.{size}.{i}{j}"
            pair["role"] = ["naive", "optimized"]
            parts.append(pair)
            slow, fast = pair["variant"]
            # Declared as a run records it: the faster sample timed against the slower one.
            for machine in pair["machine"].unique():
                cases.setdefault(machine, {})[f"aa.{size}.{i}{j}"] = record.CaseInfo(
                    id=f"aa.{size}.{i}{j}",
                    tier=None,
                    rule=rules.Faster(),
                    timed=(record.TimedPair("", fast, slow),),
                )
    return load.Results(pd.concat(parts, ignore_index=True), results.outcomes.iloc[:0], results.runs, cases)


def test_a_a_false_alarm_rate_from_real_rounds():
    """Baseline (two resamples, as two runs) and current both resampled from one real run's rounds
    (no real change): the gate must almost never fail. 100 comparisons per real run; each
    comparison gates every judgeable pair of the run at once (a false alarm = the whole gate
    fails). (Against one run nothing passes: the between-run σ0 assumed there makes every
    interval ±45%.)"""
    rng = np.random.default_rng(0)
    runs = [_real_pairs(load.load([p])) for p in REAL_ALL]
    pairs = [r.rows["case"].nunique() for r in runs]
    assert min(pairs) >= 5
    trials = [(_two_runs(run, rng), _resampled(run, rng)) for run in runs for _ in range(100)]
    verdicts = [gate.compare(b, c) for b, c in trials]
    judged = sum(line.verdict not in (gate.UNSTABLE, gate.UNJUDGED) for v in verdicts for line in v)
    rate = sum(gate.exit_code(v) == 1 for v in verdicts) / len(trials)  # 1: a regression found
    print(
        f"A/A: {len(trials)} resampled comparisons ({pairs} real pairs per run, {judged} pair verdicts): "
        f"false-alarm rate {rate:.1%}"
    )
    # A resample can push a sample past UNJUDGEABLE_SPREAD, or its interval across -10%: those are not
    # passed but left unjudged (exit 3). Measured: 72% of the pair verdicts judged.
    assert judged >= 0.6 * sum(pairs) * 100
    assert rate <= 0.01


def test_a_a_on_the_two_real_runs_is_not_judged_when_unstable(capsys):
    """The two real runs (heavily loaded machine): every pair is too noisy to judge; the gate says
    so with its own exit status instead of guessing or passing, and lists them for re-measurement."""
    code, out, _ = run_gate(capsys, "--baseline", REAL[0], "--current", REAL[1])
    # Each pair is unstable on one side or the other; where it is the baseline's, no recheck of the
    # current run can help: could not judge.
    assert code == 3 and ("| unstable |" in out or "| could not judge |" in out) and "COULD NOT JUDGE" in out


def _two_runs(results: load.Results, rng) -> load.Results:
    """Two resamples of one run, named as two runs: a pooled baseline whose between-run noise is
    the resampling's alone."""
    a, b = _resampled(results, rng), _resampled(results, rng)
    b.rows["run"] = b.rows["run"] + ".again"
    return load.Results(
        pd.concat([a.rows, b.rows], ignore_index=True), a.outcomes, results.runs, results.cases
    )


@pytest.mark.parametrize("slowdown", [1.10, 1.25, 1.50])
def test_detection_on_real_rounds(slowdown):
    """The same real pairs, the optimized sample's rounds slowed in the current run, against a
    baseline of two resamples: the share of pairs flagged, over 20 comparisons (the gate's power on
    real noisy data, and its restraint inside the tolerance)."""
    rng = np.random.default_rng(1)
    runs = [_real_pairs(load.load([p])) for p in REAL_ALL]
    flagged = judged = 0
    for run in runs:
        for _ in range(10):
            lines = gate.compare(_two_runs(run, rng), _resampled(run, rng, {"optimized": slowdown}))
            judged += sum(line.verdict != gate.UNSTABLE for line in lines)
            flagged += sum(line.verdict == gate.REGRESSED for line in lines)
    print(
        f"real rounds, slowdown {slowdown - 1:.0%}: {flagged}/{judged} judged pairs flagged "
        f"({flagged / judged:.1%})"
    )
    # Measured: 0.5% of the judged pairs flagged at 10% (inside the tolerance), 91% at 25%, 98% at 50%.
    if slowdown <= 1.10:
        assert flagged / judged <= 0.05
    elif slowdown >= 1.5:
        assert flagged / judged >= 0.95
    else:
        assert flagged / judged >= 0.8


def _drifted(seed: int, rng, slowdown: float) -> dict:
    # Between runs, medians drift: a common factor (sd 5%, the 4-8%), which a within-run
    # speedup cancels, and a per-variant part (sd 2%), which it does not. Within a run,
    # IQR/median ≈ 4% (the 3-5%), 15 rounds.
    common = rng.lognormal(0, 0.05)
    drift = {name: common * rng.lognormal(0, 0.02) for name, _, _ in synthetic.VARIANTS}
    drift["fast_v"] *= slowdown
    return synthetic.result(seed=seed, sizes=(512,), n_rounds=15, sigma=0.03, slow=drift)


@pytest.mark.parametrize(
    "slowdown, at_least, at_most", [(1.0, 0.0, 0.01), (1.10, 0.0, 0.05), (1.25, 0.05, 1.0), (1.50, 0.6, 1.0)]
)
def test_detection_of_injected_slowdowns(tmp_path, slowdown, at_least, at_most):
    """The optimized variant's rounds slowed by 10/25/50% in the current run, against a baseline
    of three drifted runs, 100 trials each. A 10% slowdown is a 9.1% drop of the speedup, inside
    the 10% tolerance: not a regression by design, never flagged, and passed only where the
    interval rules out a drop beyond 10% (measured: 7 of 100; unchanged runs: 79). A 25% slowdown
    (a 20% drop) and a 50% one are never passed: measured, failed in 11 and 76 of 100 (one run
    against three, 2% per-variant drift between runs: the failing bound is one-sided 99.9%), the
    rest could not be judged."""
    rng = np.random.default_rng(int(slowdown * 100))
    codes = []
    for trial in range(100):
        base = _load((f"b{i}.json", _drifted(4 * trial + i, rng, 1.0)) for i in range(3))
        cur = _load([("c.json", _drifted(4 * trial + 3, rng, slowdown))])
        codes.append(gate.exit_code(gate.compare(base, cur)))
    rate, passed = codes.count(1) / 100, codes.count(0) / 100
    print(f"slowdown {slowdown - 1:.0%}: detected in {rate:.1%}, passed in {passed:.1%} of 100 trials")
    assert at_least <= rate <= at_most
    if slowdown == 1.0:
        assert passed >= 0.6
    if slowdown >= 1.2:  # a drop beyond the tolerance: never passed
        assert passed == 0


# Between-run noise (issue 25: the gate failed open / raised false alarms) -----------------------


def noisy_run(seed: int, rng, between: float = 0.15, slow: dict | None = None) -> dict:
    """One process's paired run: rounds within it tight (2%), and each pair's speed-up moved by
    its own factor exp(N(0, between)) for this process (a temporary page-faulted or not, another
    code layout: what quiet runs of one commit showed here, 10-40% apart), applied to the fast
    variant's rounds, paired and not."""
    doc = synthetic.result(seed=seed, paired=True, n_rounds=30, sigma=0.02, slow=slow)
    factor = {}
    for pair in doc["pairs"]:
        f = factor[pair["fast"], pair["size_label"]] = float(np.exp(rng.normal(0.0, between)))
        pair["fast_s"] = [x * f for x in pair["fast_s"]]
    for bench in doc["benchmarks"]:
        info = bench["extra_info"]
        f = factor.get((info["variant"], info["size_label"]), 1.0)
        bench["stats"] = synthetic._stats(np.asarray(bench["stats"]["data"]) * f)
    return doc


def _a_a(
    trials: int, slow: dict | None = None, baseline_runs: int = 2, rechecks: int = 2, between: float = 0.15
) -> tuple[list[int], list[int]]:
    """Exit codes of `trials` gates of a fresh current run against fresh baseline runs: the first
    gate's, and the final one's as the CI workflow decides (.github/workflows/benchmarks.yml): on
    exit 1 or 3 the current code is run `rechecks` times more (a planted slowdown persists in each)
    and the gate decides on all of them. The rechecks draw from their own generator, so the first
    gates are those of a run without rechecks."""
    rng = np.random.default_rng(25)
    first, final = [], []
    for trial in range(trials):
        seeds = range(10 * trial, 10 * trial + baseline_runs)
        base = _load((f"b{i}.json", noisy_run(s, rng, between)) for i, s in enumerate(seeds))
        cur = _load([("c.json", noisy_run(10 * trial + 9, rng, between, slow=slow))])
        code = gate.exit_code(gate.compare(base, cur))
        first.append(code)
        if code in (1, 3) and rechecks:
            again_rng = np.random.default_rng((25, trial))
            again = tuple(
                _load([(f"r{i}.json", noisy_run(10 * trial + 5 + i, again_rng, between, slow=slow))])
                for i in range(rechecks)
            )
            code = gate.exit_code(gate.compare(base, cur, rechecks=again))
        final.append(code)
    return first, final


def test_the_same_shape_loader_gates_as_the_loader():
    """The trials' shortcut (tests.synthetic.SameShapeLoader) against the reports' loader, on runs
    that regress, pass and re-measure: the same lines, verdicts and figures."""
    rng = np.random.default_rng(3)
    shortcut = synthetic.SameShapeLoader()
    codes = []
    for trial, slow in enumerate([1.0, 1.3, 4.0, 1.0]):
        paired = (  # rounds taken side by side, and taken apart
            [(f"b{i}.json", noisy_run(10 * trial + i, rng)) for i in range(3)],
            [("c.json", noisy_run(10 * trial + 9, rng, slow={"fast_v": slow}))],
        )
        apart = (
            [(f"b{i}.json", _drifted(10 * trial + i, rng, 1.0)) for i in range(3)],
            [("c.json", _drifted(10 * trial + 9, rng, slow))],
        )
        for docs, cur in (paired, apart):
            lines = gate.compare(shortcut(docs), shortcut(cur))
            assert repr(lines) == repr(gate.compare(load.from_documents(docs), load.from_documents(cur)))
            codes.append(gate.exit_code(lines))
    assert set(codes) >= {0, 1}, codes


def test_a_a_with_between_run_noise_does_not_fail():
    """Unchanged code, 15% log-SD between runs on every pair and tight rounds within each: a
    pooled two-run baseline against a third run, then two rechecks where the gate asks for them.
    The interval made of rounds alone called this a regression in 23 of these 60 trials; this
    gate never does, and never passes it either: at 15% between runs, 2 baseline and 3 current
    runs leave an interval wider than the 10% tolerance (measured: 60 of 60 could not judge, first
    gate and after the rechecks; the gate that widened each pair's tolerance by its noise, to 33%,
    passed 60). Failing at one-sided 95% instead of 99.9%, 4 of the 60 failed."""
    first, codes = _a_a(60)
    print(
        f"A/A, 15% between runs: first gate {first.count(0)} passed, {first.count(3)} re-measured, "
        f"{first.count(1)} failed of 60; after two rechecks {codes.count(0)} passed, {codes.count(1)} failed"
    )
    assert first.count(1) == 0 and codes.count(1) == 0


def test_a_a_on_runs_that_agree_passes():
    """The same trials with pairs 2% apart between runs (the quiet CI machine's median pair): the
    interval is narrower than the tolerance, and unchanged code passes (measured: 60 of 60 after
    the rechecks, none failed)."""
    first, codes = _a_a(60, between=0.02)
    print(f"A/A, 2% between runs: first gate {first.count(0)} passed; after rechecks {codes.count(0)} passed")
    assert codes.count(1) == 0 and codes.count(0) >= 54


def test_a_planted_2x_slowdown_with_between_run_noise_fails():
    """The same noise, the fast variant 2× slower in the current run and its rechecks, against
    three baseline runs: never passed, first gate or after the rechecks (a 2× drop is 4.6
    between-run SDs of one run). Measured: exit 1 in 16 and 3 in 24 at the first gate, exit 1 in
    35 and 3 in 5 after the rechecks."""
    first, codes = _a_a(40, slow={"fast_v": 2.0}, baseline_runs=3)
    print(
        f"2× slower, 15% between runs: first gate exit 1 in {first.count(1)}, 3 in {first.count(3)} "
        f"of 40; after two rechecks exit 1 in {codes.count(1)}"
    )
    assert first.count(0) == 0 and codes.count(0) == 0 and codes.count(1) >= 25


def test_a_single_run_baseline_assumes_the_prior_and_says_so(tmp_path, capsys):
    """One baseline run holds no between-run information: σ0 is the documented prior, named on
    each line and in the note. With it the interval is about ±45%, so against one run nothing
    passes (an unchanged run and a 1.3× drop alike could not be judged) and only a drop far past
    any pair's noise fails (10× here; the note says from what drop on)."""
    base = write(tmp_path / "b.json", synthetic.result(seed=1, paired=True))
    same = write(tmp_path / "c.json", synthetic.result(seed=2, paired=True))
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", same)
    assert code == 3 and "**regressed**" not in out, out
    assumed = f"between-run σ0 {gate.PRIOR_SIGMA:.0%} assumed: the baseline holds one run"
    assert out.count(assumed) == 3 and "baseline holds a single run" in out
    assert "no pair passes at a tolerance under" in out
    drop = write(tmp_path / "d.json", synthetic.result(seed=3, paired=True, slow={"fast_v": 1.3}))
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", drop)
    assert code == 3 and "**regressed**" not in out, out
    big = write(tmp_path / "e.json", synthetic.result(seed=4, paired=True, slow={"fast_v": 10.0}))
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", big)
    assert code == 1 and out.count("**regressed**") == 3, out


def test_paired_ratios_from_a_mixture_of_regimes_are_not_judged(tmp_path, capsys):
    """A run whose paired rounds alternate between two regimes (half the fast variant's rounds 4×
    slower: nn.kd_vs_brute's kd-tree threads against the GEMM's spinning OpenMP pool did this in
    2 of 6 quiet runs) has a median that says which regime won, not a speed-up: that run is not
    judged on (could not judge), where the same run with its rounds in one regime passes."""
    base = pooled(tmp_path, "b", [synthetic.result(seed=s, paired=True) for s in (1, 2, 3)])
    steady = synthetic.result(seed=4, paired=True)
    mixed = json.loads(json.dumps(steady))
    for pair in mixed["pairs"]:
        pair["fast_s"] = [x * (4.0 if i % 2 else 1.0) for i, x in enumerate(pair["fast_s"])]
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", write(tmp_path / "s.json", steady))
    assert code == 0, out
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", write(tmp_path / "m.json", mixed))
    assert code == 3 and out.count("paired ratios unstable") == 3 and "**regressed**" not in out, out


def test_the_machine_prior_of_two_run_baselines_keeps_pairs_apart():
    """80 pairs whose between-run SDs span 1% to 30% (quiet runs here: 0.6% to 23%), each seen in
    two runs (1 df): the fitted prior must say the pairs differ (small d0), so a noisy pair is
    judged on its own runs' spread. Flooring each pair's s² at its rounds' variance cut the lower
    tail of χ²₁ that the fit matches, read the pairs as sharing one σ, put d0 at its cap and σ0
    at the quiet pairs' ~1%, and failed unchanged runs of a pair 14% apart."""
    rng = np.random.default_rng(7)
    sigmas = np.exp(rng.uniform(np.log(0.01), np.log(0.30), 80))
    per_pair = [
        [gate.RunSpeedup(f"r{i}", float(rng.normal(0, s)), (s / 3) ** 2, 30, 0.05, "") for i in range(2)]
        for s in sigmas
    ]
    sigma0, d0 = gate.machine_prior(per_pair)
    print(f"two runs a pair, SDs 1-30%: sigma0 {sigma0:.1%}, d0 {d0:.2f}")
    assert d0 < 3 and 0.01 < sigma0 < 0.30
