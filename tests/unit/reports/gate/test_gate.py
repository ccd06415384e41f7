"""The regression gate: every exit code, every bad input, and its statistics (A/A false alarms
from real per-round data, detection of injected slowdowns)."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.contract import record, rules
from reports import gate, load
from reports.__main__ import main
from tests import synthetic

DATA = Path(__file__).with_name("data")
REAL = [DATA / "distance_cpu_run1.json", DATA / "distance_cpu_run2.json"]
REAL_ALL = [DATA / "distance_cpu_all_run1.json", DATA / "distance_cpu_all_recheck.json"]


def write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def run_gate(capsys, *args) -> tuple[int, str, str]:
    code = main(["gate", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def pooled(tmp_path, name, docs) -> Path:
    """A baseline folder of several runs (the README's recommended baseline)."""
    folder = tmp_path / name
    folder.mkdir()
    for i, doc in enumerate(docs):
        write(folder / f"run{i}.json", doc)
    return folder


# ---- exit codes -----------------------------------------------------------------------------------


def test_same_file_passes(tmp_path, capsys):
    b = write(tmp_path / "b.json", synthetic.result(seed=1))
    c = write(tmp_path / "c.json", synthetic.result(seed=2))
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c)
    assert code == 0, out
    assert "Regression gate: pass" in out
    assert "| distance.pairwise | n512 | float32 cpu |" in out


def test_injected_slowdown_fails(tmp_path, capsys):
    b = pooled(tmp_path, "b", [synthetic.result(seed=1), synthetic.result(seed=3)])
    c = write(tmp_path / "c.json", synthetic.result(seed=2, slow={"fast_v": 1.5}))
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c)
    assert code == 1
    assert "**regressed**" in out and "Regression gate: FAIL" in out


def test_a_noisy_drop_is_neither_a_regression_nor_a_pass(tmp_path, capsys):
    """15% slower but measured with 30% noise in 5 rounds against a baseline whose runs agree:
    the drop lies beyond the tolerance but the interval, wide from this run's rounds, cannot
    confirm it; it is listed for re-measurement and the gate says it could not judge (a pass here
    once let a real 1.6× slowdown through on a busy machine)."""
    b = pooled(tmp_path, "b", [synthetic.result(seed=s, sizes=(256,)) for s in (1, 2)])
    c = write(
        tmp_path / "c.json",
        synthetic.result(seed=5, sizes=(256,), sigma=0.15, n_rounds=5, slow={"fast_v": 1.15}),
    )
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c)
    assert code == 3, out
    assert "a drop beyond -10% that these runs cannot confirm" in out and "| unstable |" in out


def test_failed_check_fails_even_when_faster(tmp_path, capsys):
    failed = {
        "case": "distance.pairwise",
        "kind": "check",
        "check": "cancellation",
        "device": "cpu",
        "nodeid": "x",
        "outcome": "failed",
        "reason": "AssertionError: expansion error exceeds bound",
    }
    b = write(tmp_path / "b.json", synthetic.result(seed=1))
    c = write(tmp_path / "c.json", synthetic.result(seed=2, slow={"naive_v": 2.0}, outcomes=[failed]))
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c)
    assert code == 1
    assert "check failed" in out and "expansion error exceeds bound" in out


def test_vanished_case_fails(tmp_path, capsys):
    b = write(tmp_path / "b.json", synthetic.result(cases=("distance.pairwise", "conv.im2col"), seed=1))
    c = write(tmp_path / "c.json", synthetic.result(cases=("distance.pairwise",), seed=2))
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c)
    assert code == 1
    assert "conv.im2col" in out and "**vanished**" in out


def test_memory_saving_shrank_fails(tmp_path, capsys):
    b = synthetic.result(seed=1)
    c = synthetic.result(seed=2)
    for bench in c["benchmarks"]:
        if bench["extra_info"]["variant"] == "fast_v":
            bench["extra_info"]["peak_bytes"] *= 3  # saving 4× → 1.33×
    code, out, _ = run_gate(
        capsys, "--baseline", write(tmp_path / "b.json", b), "--current", write(tmp_path / "c.json", c)
    )
    assert code == 1
    assert "memory saving shrank" in out


def test_a_variant_that_allocates_nothing_is_compared_not_crashed(tmp_path, capsys):
    docs = [synthetic.result(seed=seed) for seed in (1, 2)]
    for doc in docs:
        for bench in doc["benchmarks"]:
            if bench["extra_info"]["variant"] == "fast_v":
                bench["extra_info"]["peak_bytes"] = 0.0  # in place, or a view: the allocator sees nothing
    paths = [write(tmp_path / f"{i}.json", doc) for i, doc in enumerate(docs)]
    code, out, _ = run_gate(capsys, "--baseline", paths[0], "--current", paths[1])
    assert code == 0, out


def test_new_case_is_reported_not_failed(tmp_path, capsys):
    b = write(tmp_path / "b.json", synthetic.result(cases=("distance.pairwise",), seed=1))
    c = write(tmp_path / "c.json", synthetic.result(cases=("distance.pairwise", "conv.im2col"), seed=2))
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c)
    assert code == 0
    assert "| conv.im2col | n128 |" in out and "| new |" in out


def test_other_machine_is_incomparable_never_passed(tmp_path, capsys):
    other = dict(
        synthetic.MACHINE,
        label="NVIDIA H200 x1",
        cuda_version="12.8",
        gpu={"count": 1, "name": "NVIDIA H200"},
    )
    b = write(tmp_path / "b.json", synthetic.result(seed=1))
    c = write(tmp_path / "c.json", synthetic.result(seed=2, machine=other, slow={"fast_v": 3.0}))
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c)
    assert code == 3  # could not judge: not a regression, and not a pass either
    assert "incomparable" in out and "NVIDIA H200" in out
    assert run_gate(capsys, "--baseline", b, "--current", c, "--allow-unjudged")[0] == 0


def test_absolute_flags_a_uniform_slowdown_that_speedups_hide(tmp_path, capsys):
    b = write(tmp_path / "b.json", synthetic.result(seed=1))
    everything = {name: 1.5 for name, _, _ in synthetic.VARIANTS}
    c = write(tmp_path / "c.json", synthetic.result(seed=2, slow=everything))
    assert run_gate(capsys, "--baseline", b, "--current", c)[0] == 0
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c, "--absolute")
    assert code == 1
    assert "slower (absolute)" in out


def test_case_tolerance_overrides_the_default(tmp_path):
    @dataclass
    class Noisy:
        gate_tolerance: float
        verdict: object = None

    b = load.load([pooled(tmp_path, "b", [synthetic.result(seed=1), synthetic.result(seed=3)])])
    c = load.load([write(tmp_path / "c.json", synthetic.result(seed=2, slow={"fast_v": 1.3}))])
    assert gate.exit_code(gate.compare(b, c, tolerance=0.10)) == 1
    assert gate.exit_code(gate.compare(b, c, tolerance=0.10, known={"distance.pairwise": Noisy(0.5)})) == 0


def test_rechecks_join_the_current_side(tmp_path, capsys):
    """Rechecks are more runs of the current code: a drop that one of two rechecks does not show
    averages out (the runs now disagree, which widens σ and the pair's tolerance with it), one
    that persists in the recheck fails."""
    b = pooled(tmp_path, "b", [synthetic.result(seed=s) for s in (1, 5)])
    c = write(tmp_path / "c.json", synthetic.result(seed=2, slow={"fast_v": 1.5}))
    fine = write(tmp_path / "fine.json", synthetic.result(seed=3))
    slow = write(tmp_path / "slow.json", synthetic.result(seed=4, slow={"fast_v": 1.5}))
    suspects = tmp_path / "suspects.txt"
    code, _, _ = run_gate(capsys, "--baseline", b, "--current", c, "--suspects", suspects)
    assert code == 1
    assert (
        suspects.read_text().strip()
        == "(distance.pairwise and n128) or (distance.pairwise and n256) or (distance.pairwise and n512)"
    )
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c, "--recheck", fine, "--recheck", slow)
    assert code == 0 and "3 current runs" in out and "**regressed**" not in out
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c, "--recheck", slow)
    assert code == 1 and "2 current runs" in out and "**regressed**" in out


def test_step_summary_is_appended(tmp_path, capsys, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    b = write(tmp_path / "b.json", synthetic.result(seed=1))
    run_gate(capsys, "--baseline", b, "--current", b)
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "### Regression gate: pass" in text


# ---- bad input: exit 2, one line naming the file --------------------------------------------------


def _bad_inputs(tmp_path):
    good = write(tmp_path / "good.json", synthetic.result(seed=1))
    truncated = tmp_path / "truncated.json"
    truncated.write_text(good.read_text()[:500])
    (tmp_path / "other.json").write_text('{"hello": "world"}')
    unrelated = write(tmp_path / "unrelated.json", synthetic.result(cases=("conv.im2col",), seed=1))
    two = synthetic.result(seed=1)
    two["benchmarks"] += synthetic.result(seed=2, machine=dict(synthetic.MACHINE, label="another box"))[
        "benchmarks"
    ]
    folder = tmp_path / "two"
    folder.mkdir()
    write(folder / "a.json", synthetic.result(seed=1))
    write(folder / "b.json", synthetic.result(seed=2, machine=dict(synthetic.MACHINE, label="another box")))
    return good, {
        "missing": (tmp_path / "nope.json", "nope.json: no such file"),
        "truncated": (truncated, "truncated.json: not valid JSON"),
        "not pytest-benchmark": (tmp_path / "other.json", "other.json: not a pytest-benchmark result"),
        "no case in common": (unrelated, "no case in common"),
        "two machines": (folder, "holds results of 2 machines"),
    }


@pytest.mark.parametrize(
    "which", ["missing", "truncated", "not pytest-benchmark", "no case in common", "two machines"]
)
def test_bad_input_exits_2(tmp_path, capsys, which):
    good, bad = _bad_inputs(tmp_path)
    path, message = bad[which]
    code, out, err = run_gate(capsys, "--baseline", good, "--current", path)
    assert code == 2
    assert message in err and err.count("\n") == 1 and out == ""


def test_bad_tolerance_exits_2(tmp_path, capsys):
    good = write(tmp_path / "good.json", synthetic.result(seed=1))
    code, _, err = run_gate(capsys, "--baseline", good, "--current", good, "--tolerance", "1.5")
    assert code == 2 and "--tolerance" in err


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
    return load.Results(rows, results.outcomes, results.runs)


def _real_pairs(results: load.Results) -> load.Results:
    """Every pair of real samples of one run and size that the gate would judge (spread within
    `gate.UNJUDGEABLE_SPREAD`, ≥ 5 rounds), each pair as its own case: slower variant naive, faster one
    optimized. The rounds, their noise and their outliers are real; only the pairing is new."""
    rows = results.rows
    rows = rows[[d.size >= 5 and gate._spread(d) <= gate.UNJUDGEABLE_SPREAD for d in rows["data"]]]
    parts = []
    for size, group in rows.groupby("size_label"):
        group = group.sort_values("median_s", ascending=False)
        for i, j in itertools.combinations(range(len(group)), 2):
            pair = group.iloc[[i, j]].copy()
            pair["case"] = f"aa.{size}.{i}{j}"
            pair["role"] = ["naive", "optimized"]
            parts.append(pair)
    return load.Results(pd.concat(parts, ignore_index=True), results.outcomes.iloc[:0], results.runs)


def test_a_a_false_alarm_rate_from_real_rounds():
    """Baseline and current both resampled from one real run's rounds (no real change): the gate
    must almost never fail. 100 comparisons per real run; each comparison gates every judgeable
    pair of the run at once (a false alarm = the whole gate fails)."""
    rng = np.random.default_rng(0)
    runs = [_real_pairs(load.load([p])) for p in REAL_ALL]
    pairs = [r.rows["case"].nunique() for r in runs]
    assert min(pairs) >= 5
    trials = [(_resampled(run, rng), _resampled(run, rng)) for run in runs for _ in range(100)]
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
    assert code == 3 and "| unstable |" in out and "COULD NOT JUDGE" in out


def _two_runs(results: load.Results, rng) -> load.Results:
    """Two resamples of one run, named as two runs: a pooled baseline whose between-run noise is
    the resampling's alone."""
    a, b = _resampled(results, rng), _resampled(results, rng)
    b.rows["run"] = b.rows["run"] + ".again"
    return load.Results(pd.concat([a.rows, b.rows], ignore_index=True), a.outcomes, results.runs)


@pytest.mark.parametrize("slowdown", [1.10, 1.25, 1.50])
def test_detection_on_real_rounds(slowdown):
    """The same real pairs, the optimized sample's rounds slowed in the current run, against a
    baseline of two resamples: the share of pairs flagged, over 20 comparisons (reported; the
    gate's power on real noisy data)."""
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
    if slowdown >= 1.5:
        assert flagged / judged >= 0.95


def _drifted(seed: int, rng, slowdown: float) -> dict:
    # Between runs, medians drift: a common factor (sd 5%, the 4-8%), which a within-run
    # speedup cancels, and a per-variant part (sd 2%), which it does not. Within a run,
    # IQR/median ≈ 4% (the 3-5%), 15 rounds.
    common = rng.lognormal(0, 0.05)
    drift = {name: common * rng.lognormal(0, 0.02) for name, _, _ in synthetic.VARIANTS}
    drift["fast_v"] *= slowdown
    return synthetic.result(seed=seed, sizes=(512,), n_rounds=15, sigma=0.03, slow=drift)


@pytest.mark.parametrize(
    "slowdown, at_least, at_most", [(1.0, 0.0, 0.01), (1.10, 0.0, 1.0), (1.25, 0.55, 1.0), (1.50, 0.95, 1.0)]
)
def test_detection_of_injected_slowdowns(tmp_path, slowdown, at_least, at_most):
    """The optimized variant's rounds slowed by 10/25/50% in the current run, against a baseline
    of three drifted runs, 100 trials each. A 10% slowdown is a 9.1% drop of the speedup, inside
    the 10% tolerance: not a regression by design, so only its rate is reported. A 25% slowdown
    (a 20% drop) is caught in 61 of 100 trials and passed in 14: the 2% per-variant drift between
    runs is real noise the gate counts, and it judges each pair at 4 SDs of that noise (WIDEN; an
    interval of rounds alone claimed 95% by ignoring it, and raised false alarms on real runs for
    the same reason). A 50% slowdown: caught in 98, never passed."""
    rng = np.random.default_rng(int(slowdown * 100))
    codes = []
    for trial in range(100):
        base = load.load(
            [write(tmp_path / f"b{i}.json", _drifted(4 * trial + i, rng, 1.0)) for i in range(3)]
        )
        cur = load.load([write(tmp_path / "c.json", _drifted(4 * trial + 3, rng, slowdown))])
        codes.append(gate.exit_code(gate.compare(base, cur)))
    rate, passed = codes.count(1) / 100, codes.count(0) / 100
    print(f"slowdown {slowdown - 1:.0%}: detected in {rate:.1%}, passed in {passed:.1%} of 100 trials")
    assert at_least <= rate <= at_most
    if slowdown >= 1.5:  # far beyond the tolerance: never passed
        assert passed == 0


def test_a_single_run_baseline_is_warned_about_and_a_pooled_one_is_not(tmp_path, capsys):
    base = tmp_path / "baseline"
    base.mkdir()
    write(base / "a.json", synthetic.result(seed=1))
    current = write(tmp_path / "c.json", synthetic.result(seed=3))
    _, single, _ = run_gate(capsys, "--baseline", base / "a.json", "--current", current)
    assert "baseline holds a single run" in single
    write(base / "b.json", synthetic.result(seed=2))
    code, pooled, _ = run_gate(capsys, "--baseline", base, "--current", current)
    assert code == 0 and "single run" not in pooled


# Fail closed (issue: the gate passed what it could not judge) ---------------------------------


def test_a_planted_slowdown_fails_against_a_pooled_paired_baseline(tmp_path, capsys):
    """Two baseline runs from processes whose absolute speed differs 1.6× (the bimodality the
    README warns of): pooled raw times are bimodal and were never judged ("unstable"); paired
    ratios are not, so a 30% slowdown of the fast variant fails, and an unchanged run passes."""
    fast_run = synthetic.result(seed=1, paired=True, n_rounds=60)
    slow_run = synthetic.result(seed=2, paired=True, n_rounds=60, slow={"naive_v": 1.6, "fast_v": 1.6})
    base = pooled(tmp_path, "base", [fast_run, slow_run])
    regressed = write(
        tmp_path / "c.json", synthetic.result(seed=3, paired=True, n_rounds=60, slow={"fast_v": 1.3})
    )
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", regressed)
    assert code == 1 and "**regressed**" in out
    same = write(tmp_path / "same.json", synthetic.result(seed=4, paired=True, n_rounds=60))
    assert run_gate(capsys, "--baseline", base, "--current", same)[0] == 0


def test_an_unstable_pair_with_no_stable_recheck_is_not_passed(tmp_path, capsys):
    base = pooled(tmp_path, "b", [synthetic.result(seed=s) for s in (1, 5)])
    noisy = synthetic.result(seed=2, sigma=0.6, n_rounds=40, slow={"fast_v": 1.3})
    cur = write(tmp_path / "c.json", noisy)
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", cur)
    assert code == 3 and "COULD NOT JUDGE" in out and "unstable" in out
    again = write(tmp_path / "r.json", synthetic.result(seed=3, sigma=0.6, n_rounds=40, slow={"fast_v": 1.3}))
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", cur, "--recheck", again)
    assert code == 3 and "could not judge" in out
    assert (
        run_gate(capsys, "--baseline", base, "--current", cur, "--recheck", again, "--allow-unjudged")[0] == 0
    )
    # A stable re-measurement judges it: the slowdown is real.
    steady = write(tmp_path / "s.json", synthetic.result(seed=4, slow={"fast_v": 1.3}))
    assert run_gate(capsys, "--baseline", base, "--current", cur, "--recheck", steady)[0] == 1


@pytest.mark.parametrize("bad", [float("nan"), 0.0, -1e-3, float("inf")])
def test_impossible_times_are_bad_input(tmp_path, capsys, bad):
    doc = synthetic.result(seed=2)
    doc["benchmarks"][0]["stats"]["data"][0] = bad
    doc["benchmarks"][1]["stats"]["median"] = bad
    base = write(tmp_path / "b.json", synthetic.result(seed=1))
    code, out, err = run_gate(capsys, "--baseline", base, "--current", write(tmp_path / "c.json", doc))
    assert code == 2 and out == "" and "positive and finite" in err


def test_a_case_judged_by_its_findings_is_gated_on_the_pair_it_times(tmp_path, capsys):
    """layernorm.manual times F.layer_norm (library) against the notes' way and is judged by its
    findings: a 2× slowdown of the library variant showed no line at all."""
    variants = (("manual", "naive", 4.0), ("layer_norm", "library", 1.0))
    info = {"layernorm.manual": record.CaseInfo("layernorm.manual", 2, rule=rules.FromFindings()).to_data()}
    kw = dict(cases=("layernorm.manual",), variants=variants, cases_info=info, schema_version=3, paired=True)
    base = pooled(tmp_path, "b", [synthetic.result(seed=s, **kw) for s in (1, 3)])
    cur = write(tmp_path / "c.json", synthetic.result(seed=2, slow={"layer_norm": 2.0}, **kw))
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", cur)
    assert code == 1 and "layer_norm ÷ manual" in out


def test_an_unwritable_suspects_file_is_bad_input_not_a_regression(tmp_path, capsys):
    b = write(tmp_path / "b.json", synthetic.result(seed=1))
    c = write(tmp_path / "c.json", synthetic.result(seed=2))
    code, _, err = run_gate(
        capsys, "--baseline", b, "--current", c, "--suspects", tmp_path / "no" / "such" / "dir"
    )
    assert code == 2 and "--suspects" in err


def test_a_pair_whose_unchanged_baseline_runs_differ_gets_that_tolerance(tmp_path, capsys):
    """A pooled baseline whose two unchanged runs put a pair's speed-up 40% apart (a temporary
    page-faulted in one process and not in the other): an unchanged current run at the low end is
    not failed; the pair is judged at the widest tolerance, named with the σ behind it, and since
    its noise is wider still, its 17% drop from the baseline's mean is re-measured, not passed; a
    drop far beyond the runs' own spread still fails."""
    high = synthetic.result(seed=1, paired=True, n_rounds=60)
    low = synthetic.result(seed=2, paired=True, n_rounds=60, slow={"fast_v": 1.4})
    base = pooled(tmp_path, "base", [high, low])
    same_as_low = write(
        tmp_path / "c.json", synthetic.result(seed=3, paired=True, n_rounds=60, slow={"fast_v": 1.4})
    )
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", same_as_low)
    assert code == 3 and "this pair's runs vary by σ" in out and "too noisy to bound" in out, out
    assert "**regressed**" not in out
    far = write(
        tmp_path / "far.json", synthetic.result(seed=4, paired=True, n_rounds=60, slow={"fast_v": 6.0})
    )
    assert run_gate(capsys, "--baseline", base, "--current", far)[0] == 1


def test_a_drop_timed_on_a_busy_machine_is_re_measured_not_failed(tmp_path, capsys):
    base = pooled(tmp_path, "base", [synthetic.result(seed=s, paired=True, n_rounds=60) for s in (1, 2)])
    busy = write(
        tmp_path / "busy.json",
        synthetic.result(
            seed=3, paired=True, n_rounds=60, slow={"fast_v": 1.5}, busy="load average 4 on 2 cores"
        ),
    )
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", busy)
    assert code == 3 and "timed on a busy machine" in out
    quiet = write(
        tmp_path / "quiet.json", synthetic.result(seed=5, paired=True, n_rounds=60, slow={"fast_v": 1.5})
    )
    assert run_gate(capsys, "--baseline", base, "--current", busy, "--recheck", quiet)[0] == 1


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
    tmp_path, trials: int, slow: dict | None = None, baseline_runs: int = 2, rechecks: int = 0
) -> list[int]:
    """Exit codes of `trials` gates of a fresh current run against fresh baseline runs; with
    `rechecks`, as the CI workflow does (.github/workflows/benchmarks.yml): on exit 1 or 3 the
    current code is run that many times more (a planted slowdown persists in each) and the gate
    decides on all of them."""
    rng = np.random.default_rng(25)
    codes = []
    for trial in range(trials):
        seeds = range(10 * trial, 10 * trial + baseline_runs)
        base = load.load([write(tmp_path / f"b{i}.json", noisy_run(s, rng)) for i, s in enumerate(seeds)])
        cur = load.load([write(tmp_path / "c.json", noisy_run(10 * trial + 9, rng, slow=slow))])
        code = gate.exit_code(gate.compare(base, cur))
        if code in (1, 3) and rechecks:
            again = tuple(
                load.load([write(tmp_path / f"r{i}.json", noisy_run(10 * trial + 5 + i, rng, slow=slow))])
                for i in range(rechecks)
            )
            code = gate.exit_code(gate.compare(base, cur, rechecks=again))
        codes.append(code)
    return codes


def test_a_a_with_between_run_noise_does_not_fail(tmp_path):
    """Unchanged code, 15% log-SD between runs on every pair and tight rounds within each: a
    pooled two-run baseline against a third run, then two rechecks where the gate asks for them.
    The interval made of rounds alone called this a regression in 23 of these 60 trials; this
    gate never does. With 2 baseline runs a 15% pair's noise is wider than the widest tolerance
    it judges at, so a drift past -10% is re-measured rather than passed (exit 3 in 19 of 60); the
    rechecks bring the pair's tolerance under the cap and pass it (measured: 53 of 60 pass, the
    rest still re-measure, none fails)."""
    first = _a_a(tmp_path, 60)
    codes = _a_a(tmp_path, 60, rechecks=2)
    print(
        f"A/A, 15% between runs: first gate {first.count(0)} passed, {first.count(3)} re-measured, "
        f"{first.count(1)} failed of 60; after two rechecks {codes.count(0)} passed, {codes.count(1)} failed"
    )
    assert first.count(1) == 0 and codes.count(1) == 0 and codes.count(0) >= 50


def test_a_planted_2x_slowdown_with_between_run_noise_fails(tmp_path):
    """The same noise, the fast variant 2× slower in the current run and its rechecks, against
    three baseline runs: never passed, first gate or after the rechecks (a 2× drop is 4.6
    between-run SDs of one run; a pair this noisy is judged at the widest tolerance, a 2× drop,
    so one run alone mostly re-measures it rather than fail or pass it). Measured: exit 1 in 12
    and 3 in 28 at the first gate, exit 1 in 27 and 3 in 13 after the rechecks."""
    first = _a_a(tmp_path, 40, slow={"fast_v": 2.0}, baseline_runs=3)
    codes = _a_a(tmp_path, 40, slow={"fast_v": 2.0}, baseline_runs=3, rechecks=2)
    print(
        f"2× slower, 15% between runs: first gate exit 1 in {first.count(1)}, 3 in {first.count(3)} "
        f"of 40; after two rechecks exit 1 in {codes.count(1)}"
    )
    assert first.count(0) == 0 and codes.count(0) == 0 and codes.count(1) >= 25


def test_a_single_run_baseline_assumes_the_prior_and_says_so(tmp_path, capsys):
    """One baseline run holds no between-run information: σ0 is the documented prior, named on
    each line and in the note, so an unchanged run passes; a 1.3× drop that a one-run baseline
    cannot tell from this machine's noise is neither called a regression nor passed (could not
    judge: it lies beyond the bare tolerance); a 4× one is a regression."""
    base = write(tmp_path / "b.json", synthetic.result(seed=1, paired=True))
    same = write(tmp_path / "c.json", synthetic.result(seed=2, paired=True))
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", same)
    assert code == 0, out
    assumed = f"between-run σ0 {gate.PRIOR_SIGMA:.0%} assumed: the baseline holds one run"
    assert out.count(assumed) == 3 and "baseline holds a single run" in out
    drop = write(tmp_path / "d.json", synthetic.result(seed=3, paired=True, slow={"fast_v": 1.3}))
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", drop)
    assert code == 3 and "**regressed**" not in out, out
    assert out.count("a drop beyond -10% that one baseline run cannot confirm") == 3
    big = write(tmp_path / "e.json", synthetic.result(seed=4, paired=True, slow={"fast_v": 4.0}))
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", big)
    assert code == 1 and out.count("**regressed**") == 3


def test_a_recheck_lacking_a_pair_does_not_count_for_it(tmp_path):
    """A recheck re-measures only the suspects it was asked for: it counts as a current run of
    the pairs it holds (n128 here) and for no other (n256, n512 are judged on the current run
    alone, exactly as without it)."""
    base = load.load([pooled(tmp_path, "b", [synthetic.result(seed=s, paired=True) for s in (1, 2, 3)])])
    cur = load.load([write(tmp_path / "c.json", synthetic.result(seed=4, paired=True, slow={"fast_v": 1.5}))])
    recheck = load.load([write(tmp_path / "r.json", synthetic.result(seed=5, paired=True, sizes=(128,)))])
    alone = {(line.size, line.pair): line for line in gate.compare(base, cur)}
    both = {(line.size, line.pair): line for line in gate.compare(base, cur, rechecks=(recheck,))}
    for size in ("n256", "n512"):
        line = both[size, "fast_v ÷ naive_v"]
        assert line.verdict == gate.REGRESSED and "current runs" not in line.note
        assert (line.change, line.ci) == (
            alone[size, "fast_v ÷ naive_v"].change,
            alone[size, "fast_v ÷ naive_v"].ci,
        )
    rechecked = both["n128", "fast_v ÷ naive_v"]
    assert "2 current runs" in rechecked.note
    assert (
        rechecked.change > alone["n128", "fast_v ÷ naive_v"].change
    )  # the unchanged recheck halves the drop


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
