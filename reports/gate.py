"""``python -m reports gate``: did this run regress against the stored baseline?

What is compared: the speedup of each case's claimed pair (its rule's fast variant over its slow
one, default optimized over naive) measured *within* each run. A machine that is uniformly slower
today (another job, a cooler CPU) slows both variants and leaves the speedup alone, so the gate is
portable between runners of one kind, where absolute times are not.

Each run gives one number per pair, its log speed-up y: the median of its paired rounds' log
ratios where it timed the pair side by side (``pairs``, schema 3: the ratios cancel what the two
sides of a round shared), else the log of the ratio of the two variants' medians. The unit of
replication is the run (the process), not the round: on a 2-core AMD EPYC box (torch 2.13.0+cpu)
quiet runs of one unchanged commit put a pair's speed-up 10-40% apart (onehot.encode c1000,
broadcast.outer, layout.contiguous, sparse.storage at 1‰; distance.pairwise n512 bimodal, ~9×
apart), while each run's own rounds pinned its median to a few percent. An interval made of
rounds alone (a bootstrap of them) called 3 of 4 A/A comparisons of those runs a regression.

The model, per pair: y of a run = the pair's true log speed-up + between-run noise (variance σ²)
+ the run's within-run error (variance w², the median's, π/2·(IQR/1.349)²/n from its rounds).

- σ² is estimated from the pair's own runs, baseline and current side each about its own mean
  (df = k − 1 + m − 1), and shrunk toward the machine's σ0² (empirical Bayes, limma's moderated
  t): σ² = (df·s² + d0·σ0²) / (df + d0), tested with t on df + d0 degrees of freedom. σ0 and d0
  are fitted to the s² of every pair the baseline holds in two or more runs (machine_prior: the
  moments of log s², Smyth 2004), so d0 is measured, not chosen: it is small where the pairs'
  noise differs a lot (2-4 quiet runs on this box: d0 ≈ 0.75-1.2, pairs 0.6% to 23% apart), so a
  quiet pair is not judged by the noisy ones' σ nor a noisy one by the quiet ones', and large
  where they share one σ, so that a pair seen in 2 runs (1 df) is not trusted on its own. d0
  never exceeds the degrees of freedom it was fitted from; with fewer than MIN_PAIRS such pairs
  their pooled s² stands in, with its df.
- A baseline of one run has no between-run information at all: σ0 is then PRIOR_SIGMA (measured,
  see there) on PRIOR_DF degrees of freedom, named on every line judged with it; never 0.
- Each run adds max(σ², w²) to the variance of its side's mean: a run whose own rounds were
  noisier than the machine's between-run noise counts as that noisy.
- A run the load probe saw busy, or whose rounds were unstable (taken apart: IQR over 25% of the
  median, quiet machines 3-5%; paired: the ratios' quartiles over 2× apart, a mixture of
  regimes) or too few, is not judged on where a side has another run.

The test: d = mean y of the current runs (the current file's and each --recheck that holds the
pair; one that lacks it does not count for it) − mean y of the baseline's runs, se² = Σ_b
max(σ², w²)/k² + Σ_c max(σ², w²)/m² (σ²·(1/k + 1/m) where the rounds are tight). A pair
*regresses* when the one-sided 95% upper bound d + t·se lies below log(1 − tolerance): with 95%
confidence it lost more than the tolerance. The question is one-sided (a speedup that grew is
never a failure). Why a t test on run-level numbers and not a bootstrap of rounds or a rank test:
the rounds of one process share its code layout, page placement and neighbours, so resampling
them measures only the within-run part; with 1-3 runs a side there is nothing else to resample,
and a rank test of so few cannot reach 95%. A t with a shrunk variance is the standard answer for
few replicates of many features.

The tolerance a pair is judged at: tested at the bare tolerance, a pair whose noise dwarfs it
fails an unchanged run at nearly 5%, and a suite of ~80 such pairs would fail most unchanged
runs. So, as the gate did with the spread of its baseline's runs, each pair's tolerance is
widened to what its noise lets the gate see: 1 − exp(−WIDEN·se_model), se_model = σ·√(1/k +
1/m), the SD of d between unchanged runs (WIDEN: see there). The widened tolerance and the σ
behind it are named on the line; it stops at MAX_TOLERANCE (a 2× drop), where the pair is judged
at the cap and the line says so.

Fail closed: where the interval straddles the tolerance but the drop itself (d) lies inside it,
the line passes as ``ok (drop not significant)``; a drop beyond the tolerance that the interval
cannot confirm is not passed but re-measured (``unstable``). Against a one-run baseline the edge
for that is the bare tolerance: σ0 is a guess for every pair there, and a 30% drop is not passed
for lying inside a guessed noise.

Could not judge (exit 3): a drop beyond the tolerance that the runs cannot confirm, or that
rests only on runs the load probe saw busy, or a side with no run of stable, enough rounds:
``unstable`` with no --recheck of the pair, ``could not judge`` with some;
``--allow-unjudged`` passes it for a user who accepts that. Busy runs decide nothing: the
neighbours' share changes from run to run (on this box, loaded runs put one pair's speed-up 500×
apart), which no model of quiet runs covers.

Rechecks: --recheck files re-measure the suspects in new processes. They join the current side,
so m grows and the between-run term of se shrinks by √(1/k + 1/m); a real regression persists in
every one, noise averages out. Why pooled and not "every recheck must confirm": that rule's
false-alarm rate is the product of per-run rates, small only where each per-run test already
counts the between-run noise, which one run alone cannot estimate; pooled, one model covers all.

Memory: peak bytes are counted (allocator statistics, replayed allocation events), not sampled,
so the memory saving (slow peak / fast peak) fails when it shrank by more than the tolerance,
without a significance test.

Which pairs: every case that times anything is gated on its compared pairs (its rule's, else
optimized over naive, else the library over the naive way: harness.contract.rules.compared_pairs), so a
case judged by its findings that times the library against the notes' way is gated too.

Exit status: 0 all holds; 1 a correctness check failed in the current run, a pair regressed, a
memory saving shrank, or a case present in the baseline vanished, and nothing else; 2 bad input
(missing or corrupt file, an impossible time, several machines on one side, no case in common,
an unwritable --suspects); 3 could not judge (see above; ``--allow-unjudged`` makes that 0).
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import digamma, polygamma
from scipy.stats import t as student_t

from reports import load, stats, summary

UNJUDGED = "could not judge"
EXIT_UNJUDGED = 3
OK, REGRESSED, NOISY, NEW, VANISHED, INCOMPARABLE, FAILED, MEMORY, SLOWER, UNSTABLE = (
    "ok",
    "regressed",
    "ok (drop not significant)",
    "new",
    "vanished",
    "incomparable",
    "check failed",
    "memory saving shrank",
    "slower (absolute)",
    "unstable",
)
# A sample whose IQR exceeds this fraction of its median (quiet machines: 3-5%) comes from a
# machine that was not measuring the code (bimodal rounds: descheduled, throttled); the median of
# a handful of such rounds is not trustworthy, so that run is not judged on.
UNJUDGEABLE_SPREAD = 0.25
# Paired rounds cancel what the two sides of a round share, so their ratios are judged on the
# ratio's own spread; a run whose ratios' quartiles lie more than 2× apart timed a mixture of
# regimes, not one speed-up (quiet runs here: nn.kd_vs_brute d2 at 4.6× in 2 of 6 runs, its
# kd-tree's worker threads against the GEMM's spinning OpenMP pool; the noisiest single regime,
# distance.pairwise n512's 20 rounds, at 1.8×), and its median says which regime won.
MAX_RATIO_SPREAD = 1.0
LEVEL = 0.90  # two-sided; its upper end is the one-sided 95% bound the gate tests
FAILING = {REGRESSED, VANISHED, FAILED, MEMORY, SLOWER}
# The machine's prior is fitted from at least this many pairs seen in two or more baseline runs
# (the spread of their log s² is what says how alike the pairs are); d0 at most D0_MAX (the pairs
# share one σ: each pair's own s² then barely counts).
MIN_PAIRS = 10
D0_MAX = 50.0
# σ0 and its degrees of freedom where the baseline holds one run, so no between-run information.
# Measured on the 2-core Intel Xeon (AVX-512, no AMX), torch 2.13.0+cpu, 2026-11-25: per pair, the
# SD of a run's log speed-up over runs of one commit had quartiles 2.7% / 19.6% / 57% over 3 runs
# beside other jobs, and 1.1% / 2.1% / 5.5% (90th percentile 8.8%, widest 23% and, bimodal, 60%)
# over 6 quiet runs. σ0 = 20%, above nine quiet pairs in ten, worth 4 df: what a one-run baseline
# fails on is a guess for every pair, so it fails only a drop far past any pair's noise (3.7×) and
# re-measures a smaller drop beyond the tolerance (see _judge_pair) rather than pass it.
PRIOR_SIGMA = 0.20
PRIOR_DF = 4.0
# A widened tolerance stops here: a pair noisier than that is judged at the cap and says so.
MAX_TOLERANCE = 0.5
# A pair's tolerance is widened to this many SDs of d between unchanged runs (se_model). A suite
# gates ~80 pairs at once, and real pairs have heavier tails than the model's t (quiet runs here:
# one run in six 14% off its pair's others, rnn.timestep_loop t16, where the rest agree to 2%), so
# at 1 SD most unchanged runs left some pair beyond its tolerance. Measured on six quiet runs of
# one commit (2-core Xeon, AVX-512, torch 2.13.0+cpu), each against a 3-run baseline of the
# others, then the suspects re-measured twice as the CI workflow does: at 4 SDs unchanged code
# passed 58 of 60 (2 could not judge, none failed) while a 1.3× slower distance.pairwise matmul
# and a 2× slower layer_norm each failed 60 of 60.
WIDEN = 4.0
PAIR_KEYS = ["case", "size_label", "dtype", "device", "fast", "slow"]


@dataclass
class Line:
    case: str
    size: str
    where: str  # dtype and device
    pair: str
    baseline: float = math.nan
    current: float = math.nan
    change: float = math.nan  # current / baseline - 1
    ci: str = ""
    verdict: str = OK
    note: str = ""


def _machine(results: load.Results, path) -> str:
    machines = list(dict.fromkeys(results.runs["machine"]))
    if len(machines) != 1:
        raise load.ResultsError(
            f"{path}: holds results of {len(machines)} machines ({'; '.join(machines)}); "
            "gate one machine at a time"
        )
    return machines[0]


def _groups(results: load.Results) -> dict:
    return {
        (g.key["case"], g.key["size_label"], g.key["dtype"], g.key["device"]): g
        for g in summary.groups(results.rows)
    }


def _cases(results: load.Results) -> set:
    return set(results.rows["case"]) | set(results.outcomes["case"])


def _pairs(group, known) -> list[tuple[str, str]]:
    return [
        (f, s)
        for f, s, against in group.pairs(known.get(group.key["case"]))
        if against in ("rule", "context")
    ]


def _spread(sample: np.ndarray) -> float:
    q1, median, q3 = np.quantile(sample, [0.25, 0.5, 0.75])
    return float((q3 - q1) / median) if median > 0 else math.inf


def _median_var(logs: np.ndarray) -> float:
    """Variance of the median of these log times or log ratios: π/2·σ²/n for a normal σ, σ taken
    from the IQR (÷ 1.349) so that a few outlying rounds do not set it."""
    q1, q3 = np.quantile(logs, [0.25, 0.75])
    return math.pi / 2 * ((q3 - q1) / 1.349) ** 2 / logs.size


def _positions(frame, keys) -> list[tuple[tuple, np.ndarray]]:
    """(key, row positions) per group, in the order the groups first appear: pandas' index of
    the groups, without building a sub-frame per group (the gate builds these for every run)."""
    return sorted(frame.groupby(keys, sort=False).indices.items(), key=lambda group: group[1][0])


@dataclass(frozen=True)
class RunSpeedup:
    """One run's view of one pair."""

    run: str
    log: float  # the run's log speed-up: median of paired log ratios, else log of the medians' ratio
    var: float  # its within-run variance (the medians' error from the rounds)
    rounds: int
    spread: float  # IQR/median of rounds taken apart (the worse side), or of the paired ratios
    busy: str  # why the load probe found the machine busy while the pair was timed ('' quiet)
    paired: bool = False

    def unusable(self) -> str:
        """Why this run's number is not to be judged on, '' when it is."""
        if self.rounds < stats.MIN_ROUNDS:
            return f"too few rounds ({self.rounds})"
        limit = MAX_RATIO_SPREAD if self.paired else UNJUDGEABLE_SPREAD
        if self.spread > limit:
            what = "paired ratios" if self.paired else "rounds"
            return f"{what} unstable (IQR/median {self.spread:.0%} > {limit:.0%})"
        return ""


class Runs:
    """Every run's log speed-up of every pair in one results set: paired rounds where the run
    timed the pair side by side, else its two variants' rounds taken apart."""

    def __init__(self, results: load.Results):
        self.paired: dict[tuple, dict[str, tuple[list, str]]] = {}
        pairs = results.pairs
        if pairs is not None and not pairs.empty:
            fast, slow, busy = (pairs[c].to_numpy() for c in ("fast_data", "slow_data", "busy"))
            for (*key, run), idx in _positions(pairs, PAIR_KEYS + ["run"]):
                logs = [np.log(slow[i]) - np.log(fast[i]) for i in idx]
                busy_why = next((str(busy[i]) for i in idx if isinstance(busy[i], str) and busy[i]), "")
                self.paired.setdefault(tuple(key), {})[run] = (logs, busy_why)
        self.rows: dict[tuple, dict[str, np.ndarray]] = {}
        self._of: dict[tuple, list[RunSpeedup]] = {}
        if not results.rows.empty:
            data = results.rows["data"].to_numpy()
            keys = ["case", "size_label", "dtype", "device", "variant", "run"]
            for (*key, run), idx in _positions(results.rows, keys):
                self.rows.setdefault(tuple(key), {})[run] = np.concatenate([data[i] for i in idx])

    def of(self, key: tuple, fast: str, slow: str) -> list[RunSpeedup]:
        # Asked twice per pair (the machine's prior, then the pair's own test): computed once.
        if (key, fast, slow) not in self._of:
            self._of[key, fast, slow] = self._speedups(key, fast, slow)
        return self._of[key, fast, slow]

    def _speedups(self, key: tuple, fast: str, slow: str) -> list[RunSpeedup]:
        paired = self.paired.get((*key, fast, slow), {})
        fast_rows, slow_rows = self.rows.get((*key, fast), {}), self.rows.get((*key, slow), {})
        out = []
        for run in dict.fromkeys([*paired, *fast_rows]):
            if run in paired:
                logs, busy = paired[run]
                logs = np.concatenate(logs)
                q1, q3 = np.quantile(logs, [0.25, 0.75])
                out.append(
                    RunSpeedup(
                        run,
                        float(np.median(logs)),
                        _median_var(logs),
                        logs.size,
                        float(np.exp(q3 - q1) - 1),
                        busy,
                        paired=True,
                    )
                )
            elif run in slow_rows:
                f, s = fast_rows[run], slow_rows[run]
                out.append(
                    RunSpeedup(
                        run,
                        float(np.log(np.median(s)) - np.log(np.median(f))),
                        _median_var(np.log(s)) + _median_var(np.log(f)),
                        min(f.size, s.size),
                        max(_spread(f), _spread(s)),
                        "",
                    )
                )
        return out


def _ss(ys: list[float]) -> float:
    return float(np.sum((np.asarray(ys) - np.mean(ys)) ** 2)) if len(ys) > 1 else 0.0


def _judged_on(runs: list[RunSpeedup]) -> list[RunSpeedup]:
    """The runs a side is judged on: those with stable, enough rounds, and of those the ones the
    load probe saw quiet where there is any (a busy run's speed-up says how much the neighbours
    took, which changes from run to run)."""
    stable = [r for r in runs if not r.unusable()]
    return [r for r in stable if not r.busy] or stable


def _inverse_trigamma(x: float) -> float:
    """y with ψ'(y) = x (Newton's method from Smyth 2004, appendix: monotone, converges fast)."""
    y = 0.5 + 1 / x if x < 1e6 else 1 / math.sqrt(x)
    for _ in range(50):
        step = polygamma(1, y) * (1 - polygamma(1, y) / x) / polygamma(2, y)
        y += step
        if -step / y < 1e-8:
            break
    return float(y)


def machine_prior(per_pair: list[list[RunSpeedup]]) -> tuple[float, float] | None:
    """(σ0, d0): the machine's between-run SD of a run's log speed-up and how many degrees of
    freedom it is worth to one pair, fitted to the s² of every pair seen in two or more runs as a
    scaled inverse-χ² prior (Smyth 2004, limma's fitFDist: the moments of log s²). d0 is small
    where the pairs' noise differs a lot (3 runs here: d0 ≈ 0.7-0.85, pairs from 1% to 60% apart),
    so a quiet pair is not judged by the noisy ones' σ; large where they share one σ. Below
    MIN_PAIRS such pairs, their pooled s² with its df; None where no pair has two runs."""
    e, trigammas, dfs = [], [], []
    for runs in per_pair:
        used = _judged_on(runs)
        if len(used) >= 2:
            df = len(used) - 1
            # Not floored at the runs' within-run variance: the fit models s² as σ²·χ²_df/df,
            # whose lower tail (two runs agreeing by chance) is part of what it matches; a floor
            # cut that tail, left log s² less spread than χ²_1 alone, and so read two-run
            # baselines as pairs that all share one σ (d0 at its cap, σ0 ≈ 4% here: attention
            # s64, 14% apart between runs, failed unchanged runs). judge floors each run instead.
            s2 = max(_ss([r.log for r in used]) / df, 1e-12)
            e.append(math.log(s2) - digamma(df / 2) + math.log(df / 2))
            dfs.append(df)
            trigammas.append(polygamma(1, df / 2))
    if not e:
        return None
    if len(e) < MIN_PAIRS:  # too few to tell how alike the pairs are: one pooled s², its df
        ss = sum(_ss([r.log for r in _judged_on(runs)]) for runs in per_pair if len(_judged_on(runs)) >= 2)
        df = sum(len(_judged_on(runs)) - 1 for runs in per_pair if len(_judged_on(runs)) >= 2)
        return math.sqrt(max(ss / df, 1e-12)), float(df)
    excess = float(np.var(e, ddof=1) - np.mean(trigammas))
    # Never worth more than the degrees of freedom it was estimated from.
    d0 = min(2 * _inverse_trigamma(excess) if excess > 0 else math.inf, D0_MAX, sum(dfs))
    return math.sqrt(math.exp(np.mean(e) + digamma(d0 / 2) - math.log(d0 / 2))), d0


@dataclass
class Judged:
    verdict: str
    d: float  # mean current log speed-up − mean baseline's
    lo: float  # 90% two-sided interval of d
    hi: float
    tol: float  # the tolerance it was judged at
    sigma: float  # the pair's between-run SD (log)
    capped: bool  # its noise would widen the tolerance past MAX_TOLERANCE


def judge(base: list[RunSpeedup], cur: list[RunSpeedup], tol: float, sigma0: float, d0: float) -> Judged:
    """The t test of the module docstring on usable runs of both sides."""
    yb, yc = [r.log for r in base], [r.log for r in cur]
    k, m = len(yb), len(yc)
    df_pair = k - 1 + m - 1
    sigma2 = (_ss(yb) + _ss(yc) + d0 * sigma0**2) / (df_pair + d0)
    df = df_pair + d0
    se_model = math.sqrt(sigma2 * (1 / k + 1 / m))
    cur_var = sum(max(sigma2, r.var) for r in cur) / m**2
    se = math.sqrt(sum(max(sigma2, r.var) for r in base) / k**2 + cur_var)
    t = float(student_t.ppf(1 - (1 - LEVEL) / 2, df))
    d = float(np.mean(yc) - np.mean(yb))
    lo, hi = d - t * se, d + t * se
    # A case's own tolerance stands even above the cap; the cap bounds only the widening.
    widened = 1 - math.exp(-WIDEN * se_model)
    pair_tol = max(tol, min(widened, MAX_TOLERANCE))
    edge = math.log(1 - pair_tol)
    if hi < edge:
        verdict = REGRESSED
    elif lo >= edge:
        verdict = OK
    else:
        verdict = NOISY
    return Judged(verdict, d, lo, hi, pair_tol, math.sqrt(sigma2), widened > MAX_TOLERANCE)


def _tol(case_id, known, default) -> float:
    case = known.get(case_id)
    return case.gate_tolerance if case is not None and case.gate_tolerance is not None else default


PAGE = 4096


def _memory_ratio(group, slow: str, fast: str) -> float:
    """Peak memory of `slow` over `fast`, each floored at one page: a variant that allocates
    nothing the allocator sees (in place, or a view) peaks at 0 bytes, and below a page the
    difference means nothing. NaN where a peak was not measured (the comparison is then skipped)."""
    return (group.peak[slow] + PAGE) / (group.peak[fast] + PAGE)


def _judge_pair(
    base_runs: list[RunSpeedup],
    cur_runs: list[RunSpeedup],
    rechecked: bool,
    tol: float,
    prior: tuple[float, float],
    assumed: bool,
) -> tuple[str, str, Judged | None]:
    """(verdict, note, the test) of one pair. The current side is judged on its usable, quiet
    runs; a drop beyond the tolerance that rests only on busy runs, or a side with no usable run
    at all, is not judged: `unstable` (re-measure) with no recheck of the pair, `could not judge`
    with some."""
    not_judged = UNJUDGED if rechecked else UNSTABLE
    ask = ", and no recheck decided it" if rechecked else ": re-measure (--recheck)"
    base = _judged_on(base_runs)
    if not base:
        return not_judged, f"baseline {base_runs[0].unusable()}{ask}", None
    cur = _judged_on(cur_runs)
    if not cur:
        return not_judged, f"{cur_runs[0].unusable()}{ask}", None
    judged = judge(base, cur, tol, *prior)
    notes = []
    if judged.tol > tol:
        notes.append(
            f"tolerance {judged.tol:.0%}: this pair's runs vary by σ {judged.sigma:.1%}"
            + (" (the widest judged)" if judged.tol >= MAX_TOLERANCE else "")
        )
    if assumed:
        notes.append(f"between-run σ0 {prior[0]:.0%} assumed: the baseline holds one run")
    if base[0].busy:
        notes.append("the baseline timed it only on a busy machine")
    if len(cur) > 1:
        notes.append(f"{len(cur)} current runs")
    # Fail closed: a drop beyond the tolerance that the runs cannot confirm is not a pass. One
    # baseline run says nothing of this pair's own noise (σ0 is a guess for every pair), and a
    # pair noisier than the widest tolerance cannot see a drop of that size: for both the bare
    # tolerance is the edge, so a 2× drop is not passed for lying inside noise the gate cannot bound.
    unconfirmed = tol if assumed or judged.capped else judged.tol
    beyond = judged.d < math.log(1 - unconfirmed)
    if cur[0].busy:
        # A drop measured on a busy machine is re-measured, never failed: the neighbours' share is
        # not the code's. No drop beyond the tolerance, not even an insignificant one, passes.
        if judged.verdict == REGRESSED or beyond:
            return not_judged, "; ".join([f"timed on a busy machine ({cur[0].busy}){ask}", *notes]), judged
        notes.append("timed on a busy machine")
    if judged.verdict != REGRESSED and beyond:
        runs = (
            "one baseline run"
            if assumed
            else "these runs (too noisy to bound)"
            if judged.capped
            else "these runs"
        )
        why = f"a drop beyond -{unconfirmed:.0%} that {runs} cannot confirm"
        return not_judged, "; ".join([why + ask, *notes]), judged
    if judged.verdict == REGRESSED:
        notes.insert(0, f"CI below -{judged.tol:.0%}")
    return judged.verdict, "; ".join(notes), judged


def compare(
    baseline: load.Results,
    current: load.Results,
    *,
    tolerance: float = 0.10,
    absolute: bool = False,
    rechecks: tuple = (),
    known: dict | None = None,
    names=("baseline", "current"),
) -> list[Line]:
    # The pairs and tolerances a case is gated on are those its current run recorded
    # (harness.contract.record).
    known = known if known is not None else current.cases_of()
    base_machine, cur_machine = _machine(baseline, names[0]), _machine(current, names[1])
    if not (_cases(baseline) & _cases(current)):
        raise load.ResultsError(f"{names[0]} and {names[1]} have no case in common")
    for rc, rc_name in zip(rechecks, names[2:] or [f"--recheck {i + 1}" for i in range(len(rechecks))]):
        _same_run_kind(rc, current, rc_name, names[1])
    lines: list[Line] = []
    failed = current.outcomes[current.outcomes["outcome"] == "failed"]
    for r in failed.itertuples():
        lines.append(
            Line(
                r.case,
                r.size_label,
                f"{r.dtype} {r.device}".strip(),
                r.name,
                verdict=FAILED,
                note=r.reason.splitlines()[0][:200] if r.reason else "",
            )
        )
    base_groups, cur_groups = _groups(baseline), _groups(current)
    base_runs, cur_runs = Runs(baseline), Runs(current)
    recheck_runs = [Runs(rc) for rc in rechecks]
    gated = [
        (key, group, fast, slow) for key, group in base_groups.items() for fast, slow in _pairs(group, known)
    ]
    # The machine's between-run noise, from every pair the baseline holds in two or more runs.
    prior = machine_prior([base_runs.of(key, fast, slow) for key, _, fast, slow in gated])
    assumed = prior is None
    if assumed:
        prior = (PRIOR_SIGMA, PRIOR_DF)
    comparable = base_machine == cur_machine
    cur_cases = _cases(current)
    for key, base_group in base_groups.items():
        case_id, size, dtype, device = key
        tol = _tol(case_id, known, tolerance)
        for fast, slow in _pairs(base_group, known):
            line = Line(case_id, size, f"{dtype} {device}", f"{fast} ÷ {slow}")
            base = base_runs.of(key, fast, slow)
            cur = cur_runs.of(key, fast, slow)
            lines.append(line)
            if not base:  # each side timed in some run, never both in one: no speed-up to compare
                line.verdict, line.note = UNJUDGED, "the baseline never timed both sides in one run"
                continue
            line.baseline = math.exp(np.mean([r.log for r in base]))
            if not cur:
                line.verdict = VANISHED
                line.note = (
                    "case missing from the current run"
                    if case_id not in cur_cases
                    else "this size/pair missing from the current run"
                )
                continue
            line.current = math.exp(np.mean([r.log for r in cur]))
            line.change = line.current / line.baseline - 1
            if not comparable:
                line.verdict, line.note = (
                    INCOMPARABLE,
                    f"baseline on {base_machine}, current on {cur_machine}",
                )
                continue
            # A recheck that did not re-measure this pair says nothing about it.
            again = [r for rc in recheck_runs for r in rc.of(key, fast, slow)]
            verdict, note, judged = _judge_pair(base, cur + again, bool(again), tol, prior, assumed)
            if judged is not None:
                line.current = line.baseline * math.exp(judged.d)
                line.change = math.exp(judged.d) - 1
                line.ci = f"[{math.exp(judged.lo) - 1:+.1%}, {math.exp(judged.hi) - 1:+.1%}]"
            line.verdict, line.note = verdict, note
            base_mem, cur_mem = (
                _memory_ratio(base_group, slow, fast),
                _memory_ratio(cur_groups[key], slow, fast) if key in cur_groups else math.nan,
            )
            if line.verdict in (OK, NOISY) and base_mem > 1 and cur_mem < base_mem * (1 - tol):
                line.verdict = MEMORY
                line.note = f"memory ratio {base_mem:.3g}× → {cur_mem:.3g}×"
        if absolute and comparable and key in cur_groups:
            cur_group = cur_groups[key]
            for variant in base_group.data:
                if variant not in cur_group.data:
                    continue
                r, lo, hi = stats.ratio_of_medians(
                    cur_group.data[variant], base_group.data[variant], seed=len(lines)
                )
                if not math.isnan(lo) and lo > 1 + tol:
                    lines.append(
                        Line(
                            case_id,
                            size,
                            f"{dtype} {device}",
                            f"{variant} (absolute)",
                            float(np.median(base_group.data[variant])),
                            float(np.median(cur_group.data[variant])),
                            r - 1,
                            f"[{lo - 1:+.1%}, {hi - 1:+.1%}]",
                            SLOWER,
                            f"median time up > {tol:.0%}",
                        )
                    )
    for key, cur_group in cur_groups.items():
        if key not in base_groups:
            for fast, slow in _pairs(cur_group, known):
                runs = cur_runs.of(key, fast, slow)
                value = math.exp(np.mean([r.log for r in runs])) if runs else math.nan
                lines.append(
                    Line(key[0], key[1], f"{key[2]} {key[3]}", f"{fast} ÷ {slow}", current=value, verdict=NEW)
                )
    for case_id in sorted(_cases(baseline) - cur_cases):
        if not any(line.case == case_id and line.verdict == VANISHED for line in lines):
            lines.append(
                Line(case_id, "", "", "", verdict=VANISHED, note="case missing from the current run")
            )
    return lines + _not_compared(lines, baseline, current, known, base_groups, cur_groups)


def _timed_pairs(results: load.Results, known, groups: dict) -> set[tuple]:
    """Every (case, size, "dtype device", "fast ÷ slow") a run timed as the gate compares it: the
    gated pairs of its solo rows, and the pairs it timed side by side as the rule names them (the
    rule's pairs where the point has any, else the context ones: harness.contract.rules.compared_pairs)."""
    found = set()
    for (case_id, size, dtype, device), timed in results.pairs.groupby(
        ["case", "size_label", "dtype", "device"], sort=False
    ):
        timed = timed[timed["against"].isin(["rule", "context"])]
        if (timed["against"] == "rule").any():
            timed = timed[timed["against"] == "rule"]
        found |= {
            (case_id, size, f"{dtype} {device}", f"{f} ÷ {s}") for f, s in zip(timed["fast"], timed["slow"])
        }
    for (case_id, size, dtype, device), group in groups.items():
        found |= {(case_id, size, f"{dtype} {device}", f"{f} ÷ {s}") for f, s in _pairs(group, known)}
    return found


def _not_compared(
    lines: list[Line], baseline: load.Results, current: load.Results, known, base_groups, cur_groups
) -> list[Line]:
    """Exit 0 means "judged, and held": a pair both runs timed that no line judged, or a comparison
    that judged no pair at all, is `could not judge` (exit 3), never a silent pass. `known` and the
    groups are those `compare` read (the groups are built once per run: the gate's costliest step)."""
    judged = {(x.case, x.size, x.where, x.pair) for x in lines if x.verdict in JUDGED}
    decided = {(x.case, x.size, x.where, x.pair) for x in lines if x.verdict not in (NEW, VANISHED)}
    both = _timed_pairs(baseline, known, base_groups) & _timed_pairs(current, known, cur_groups)
    out = [
        Line(*key, verdict=UNJUDGED, note="both runs timed this pair, but not as the gate compares it")
        for key in sorted(both - decided)
    ]
    if not judged and not any(x.verdict in FAILING for x in lines):
        out.append(
            Line(
                "",
                "",
                "",
                "",
                verdict=UNJUDGED,
                note=f"judged no pair: baseline and current have {len(both)} timed pairs in common "
                "with both sides timed in each (a pairs-only, one-sided or skipped run judges nothing)",
            )
        )
    return out


def _same_run_kind(recheck: load.Results, current: load.Results, name: str, current_name: str) -> None:
    """A recheck re-measures the current run: the same machine key (CPU, GPU, torch, CUDA) and the
    same commit, or it is refused (exit 2) naming what differs; pooled, another machine's runs
    would decide."""
    rc_machine, cur_machine = _machine(recheck, name), _machine(current, current_name)
    if rc_machine != cur_machine:
        raise load.ResultsError(
            f"{name}: a recheck from another machine ({rc_machine}) than the current run ({cur_machine}); "
            "rechecks must re-measure the current run on its machine"
        )
    rc_commits, cur_commits = set(recheck.runs["commit"]), set(current.runs["commit"])
    if rc_commits != cur_commits:
        raise load.ResultsError(
            f"{name}: a recheck of commit {', '.join(sorted(rc_commits)) or '?'}, the current run is of "
            f"{', '.join(sorted(cur_commits)) or '?'}; rechecks must re-measure the current commit"
        )


JUDGED = (OK, NOISY, REGRESSED, MEMORY)  # a line whose pair the test decided, either way


def exit_code(lines: list[Line], allow_unjudged: bool = False) -> int:
    """1 for a regression or a failed check, and nothing else; 3 where a pair could not be judged:
    unstable with no recheck given, or in every recheck, or measured on another machine than the
    baseline (unless the user accepts that); else 0."""
    if any(line.verdict in FAILING for line in lines):
        return 1
    # A baseline from another machine judges nothing here: never a pass (it was one, and the
    # shipped AMX reference "passed" a run without AMX).
    if not allow_unjudged and any(line.verdict in (UNJUDGED, UNSTABLE, INCOMPARABLE) for line in lines):
        return EXIT_UNJUDGED
    return 0


def _f(value, spec=".3g") -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def single_run_note(tolerance: float) -> str:
    se = PRIOR_SIGMA * math.sqrt(2)  # one run a side
    edge = math.log(1 - min(max(tolerance, 1 - math.exp(-WIDEN * se)), MAX_TOLERANCE))
    fails = math.exp(-(edge - float(student_t.ppf(1 - (1 - LEVEL) / 2, PRIOR_DF)) * se))
    return (
        "Note: the baseline holds a single run, so it says nothing of how far this machine's runs of "
        f"unchanged code differ; a between-run σ of {PRIOR_SIGMA:.0%} (of the log speed-up) is assumed "
        f"for every pair: against one run only a speed-up that fell about {fails:.1f}× or more fails, "
        f"and any drop beyond -{tolerance:.0%} is re-measured rather than passed. Record baselines "
        "from three or more runs (a folder: runs are pooled)."
    )


def markdown(
    lines: list[Line], tolerance: float, baseline_runs: int = 2, allow_unjudged: bool = False
) -> str:
    def cell(text) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    code = exit_code(lines, allow_unjudged)
    status = {0: "pass", 1: "FAIL", EXIT_UNJUDGED: "COULD NOT JUDGE (exit 3; --allow-unjudged passes it)"}[
        code
    ]
    head = [
        f"### Regression gate: {status}",
        "",
        "Within-run speedups (each run's median of paired ratios, else slow median ÷ fast median), "
        "current runs ÷ baseline runs, with a 90% interval of the change that counts the runs' own "
        f"between-run noise (t test, module reports.gate); a pair fails when the interval's top (its "
        f"one-sided 95% bound) lies below -{tolerance:.0%} (or the case's own tolerance, or the wider "
        "one the pair's noise allows, named in the note).",
        "",
        *([single_run_note(tolerance), ""] if baseline_runs < 2 else []),
        "| case | size | dtype device | pair | baseline speedup | current speedup | change | 90% CI | "
        "verdict | note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = sorted(lines, key=lambda line: (line.verdict not in FAILING, line.case, line.size))
    body = [
        f"| {cell(line.case)} | {cell(line.size)} | {cell(line.where)} | {cell(line.pair)} | "
        f"{_f(line.baseline)} | {_f(line.current)} | {_f(line.change, '+.1%')} | {cell(line.ci)} | "
        f"{'**' + line.verdict + '**' if line.verdict in FAILING else line.verdict} | {cell(line.note)} |"
        for line in order
    ]
    return "\n".join(head + body) + "\n"


def suspects(lines: list[Line]) -> str:
    """A pytest ``-k`` expression selecting the regressed and unjudged case × size points (node IDs
    hold both), for re-measuring just those; empty when there is none."""
    points = sorted(
        {(line.case, line.size) for line in lines if line.verdict in (REGRESSED, UNSTABLE, UNJUDGED)}
    )
    return " or ".join(f"({case} and {size})" if size else case for case, size in points)


def run(
    baseline_path,
    current_path,
    *,
    tolerance=0.10,
    absolute=False,
    recheck_paths=(),
    suspects_path=None,
    known=None,
    allow_unjudged=False,
    history=None,
    last=5,
    branch="main",
) -> tuple[int, str]:
    if not 0 <= tolerance < 1:
        raise load.ResultsError(f"--tolerance {tolerance} must be in [0, 1)")
    if history is None:
        baseline = load.load([baseline_path])
        current = load.load([current_path])
    else:  # the last runs of the current run's machine key, read back as a baseline folder is
        from reports.history.store import baseline_results

        current = load.load([current_path])
        baseline, used = baseline_results(
            history, current, [current_path, *recheck_paths], last=last, branch=branch
        )
        baseline_path = f"{history} (last {len(used)} runs)"
    rechecks = tuple(load.load([p]) for p in recheck_paths)
    lines = compare(
        baseline,
        current,
        tolerance=tolerance,
        absolute=absolute,
        rechecks=rechecks,
        known=known,
        names=(str(baseline_path), str(current_path), *map(str, recheck_paths)),
    )
    text = markdown(lines, tolerance, baseline_runs=len(baseline.runs), allow_unjudged=allow_unjudged)
    once = [
        f"{dup} (the same run as {first})"
        for results in (baseline, current, *rechecks)
        for dup, first in results.duplicates
    ]
    if once:
        text += "\nCounted once: " + "; ".join(once) + "\n"
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        # The table and the exit code are the answer; a summary file CI cannot take must not lose them.
        try:
            with open(summary_file, "a", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError as exc:
            print(
                f"reports: GITHUB_STEP_SUMMARY {summary_file}: not written ({exc.strerror or exc}); "
                "the table is below",
                file=sys.stderr,
            )
    if suspects_path:
        try:
            Path(suspects_path).write_text(suspects(lines) + "\n", encoding="utf-8")
        except OSError as exc:
            raise load.ResultsError(
                f"{suspects_path}: cannot write --suspects ({exc.strerror or exc})"
            ) from None
    return exit_code(lines, allow_unjudged), text
