"""The gate's statistical model: each run's log speed-up of a pair (`RunSpeedup`, `Runs`), the
machine's between-run noise fitted as a prior (`machine_prior`, empirical Bayes), and the t test
of the current runs against the baseline's (`judge`). reports/gate/__init__.py says why this
model."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import digamma, polygamma, stdtrit

from harness.contract import gain
from harness.contract.record import KEY_COLUMNS
from reports import load, stats
from reports.gate.lines import OK, REGRESSED, UNJUDGED

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
# The two bounds a pair is judged by, each one-sided. A pass needs the interval's lower end above
# the tolerance's edge (at PASS_LEVEL, a drop beyond the tolerance is passed at most 5% of the time
# per pair); a failure needs its upper end below it at FAIL_LEVEL: a suite gates ~80 pairs at once,
# and at 95% per pair unchanged code failed a synthetic A/A (15% between-run noise, 2-run baselines,
# two rechecks) in 4 of 60 comparisons; at 99.9%, about 5% for 50 pairs together (Bonferroni), none.
PASS_LEVEL = 0.95
FAIL_LEVEL = 0.999
LEVEL = 2 * PASS_LEVEL - 1  # the two-sided level of the symmetric interval the reports print
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
# decides rests on a guess for every pair, so it fails only a drop far past any pair's noise (2.7×)
# and passes nothing at a tolerance under ~45% (the interval is that wide): record baselines of
# three or more runs.
PRIOR_SIGMA = 0.20
PRIOR_DF = 4.0
# A pair on one side: each side is one machine, so the key is the point's place and the pair.
PAIR_KEYS = [*KEY_COLUMNS, "fast", "slow"]


def _quartiles(sample: np.ndarray) -> tuple[float, float, float]:
    """np.quantile(sample, [0.25, 0.5, 0.75]) (linear interpolation), from one sort: numpy's
    quantile costs ~50 µs a call in dispatch, and the gate asks for a dozen quartiles per pair and
    run, for every pair of every run it reads."""
    x = np.sort(np.asarray(sample, dtype=float).ravel())
    if x.size == 0:
        return math.nan, math.nan, math.nan
    out = []
    for q in (0.25, 0.5, 0.75):
        pos = (x.size - 1) * q
        lo = int(pos)
        hi = min(lo + 1, x.size - 1)
        out.append(float(x[lo] + (x[hi] - x[lo]) * (pos - lo)))
    return out[0], out[1], out[2]


def _spread(sample: np.ndarray, quartiles: tuple[float, float, float] | None = None) -> float:
    q1, median, q3 = quartiles or _quartiles(sample)
    return float((q3 - q1) / median) if median > 0 else math.inf


def _median_var(logs: np.ndarray, quartiles: tuple[float, float, float] | None = None) -> float:
    """Variance of the median of these log times or log ratios: π/2·σ²/n for a normal σ, σ taken
    from the IQR (÷ 1.349) so that a few outlying rounds do not set it. ``quartiles``: the logs'
    own, where the caller has them already."""
    q1, _, q3 = quartiles or _quartiles(logs)
    return math.pi / 2 * ((q3 - q1) / 1.349) ** 2 / logs.size


def where_device(device: str, timing_mode: str) -> str:
    """The device as the gate keys and names a sample: the timing mode joins it where it is not
    the warm default, so a variant's warm, cold-L2 and graph rounds are three samples, never one
    (reports.summary.KEYS has the mode for the same reason; pairs are timed warm)."""
    return device if timing_mode in ("warm", "", None) else f"{device} {timing_mode}"


def gate_key(place, timing_mode: str) -> tuple:
    """A point's place (its `KEY_COLUMNS` values, in order) as the gate keys it: the device named
    with the timing mode (`where_device`)."""
    return tuple(
        where_device(value, timing_mode) if column == "device" else value
        for column, value in zip(KEY_COLUMNS, place)
    )


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
            for (*key, run), idx in load.group_positions(pairs, PAIR_KEYS + ["run"]):
                logs = [gain.log_ratios(slow[i], fast[i]) for i in idx]
                busy_why = next((str(busy[i]) for i in idx if isinstance(busy[i], str) and busy[i]), "")
                self.paired.setdefault(tuple(key), {})[run] = (logs, busy_why)
        self.rows: dict[tuple, dict[str, np.ndarray]] = {}
        self._of: dict[tuple, list[RunSpeedup]] = {}
        if not results.rows.empty:
            data = results.rows["data"].to_numpy()
            keys = [*KEY_COLUMNS, "timing_mode", "variant", "run"]
            for (*place, mode, variant, run), idx in load.group_positions(results.rows, keys):
                key = (*gate_key(place, mode), variant)
                self.rows.setdefault(key, {})[run] = np.concatenate([data[i] for i in idx])

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
                quartiles = q1, median, q3 = _quartiles(logs)
                out.append(
                    RunSpeedup(
                        run,
                        # gain.paired_ratio's point over this run's rounds: summary.csv's speed-up
                        median,
                        _median_var(logs, quartiles),
                        logs.size,
                        float(np.exp(q3 - q1) - 1),
                        busy,
                        paired=True,
                    )
                )
            elif run in slow_rows:
                f, s = fast_rows[run], slow_rows[run]
                qf, qs = _quartiles(f), _quartiles(s)
                out.append(
                    RunSpeedup(
                        run,
                        math.log(qs[1]) - math.log(qf[1]),
                        _median_var(np.log(s)) + _median_var(np.log(f)),
                        min(f.size, s.size),
                        max(_spread(f, qf), _spread(s, qs)),
                        "",
                    )
                )
        return out


@functools.lru_cache(maxsize=256)
def t_quantile(df: float, level: float = PASS_LEVEL) -> float:
    """Student's t one-sided `level` quantile; the gate asks it for the same few df per pair.
    (scipy.special's inverse of the t distribution: scipy.stats' import took 0.9 s of every process
    that gates or builds a report.)"""
    return float(stdtrit(df, level))


def _ss(ys: list[float]) -> float:
    return float(np.sum((np.asarray(ys) - np.mean(ys)) ** 2)) if len(ys) > 1 else 0.0


def judged_on(runs: list[RunSpeedup]) -> list[RunSpeedup]:
    """The runs a side is judged on: those with stable, enough rounds that the load probe saw quiet.
    A busy run's speed-up says how much the neighbours took, which changes from run to run: it
    decides nothing, on either side, even where no quiet run exists (then the pair is not judged)."""
    return [r for r in runs if not r.unusable() and not r.busy]


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
        used = judged_on(runs)
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
        ss = sum(_ss([r.log for r in judged_on(runs)]) for runs in per_pair if len(judged_on(runs)) >= 2)
        df = sum(len(judged_on(runs)) - 1 for runs in per_pair if len(judged_on(runs)) >= 2)
        return math.sqrt(max(ss / df, 1e-12)), float(df)
    excess = float(np.var(e, ddof=1) - np.mean(trigammas))
    # Never worth more than the degrees of freedom it was estimated from.
    d0 = min(2 * _inverse_trigamma(excess) if excess > 0 else math.inf, D0_MAX, sum(dfs))
    return math.sqrt(math.exp(np.mean(e) + digamma(d0 / 2) - math.log(d0 / 2))), d0


@dataclass
class Judged:
    verdict: str
    d: float  # mean current log speed-up − mean baseline's
    lo: float  # d's lower bound at PASS_LEVEL
    hi: float  # d's upper bound at FAIL_LEVEL
    tol: float  # the tolerance it was judged at: the catalogue's or the command line's, never widened
    sigma: float  # the pair's between-run SD (log)

    def missed(self) -> float:
        """The largest drop the interval leaves possible (1 − exp(lo)): what a pass would have hidden."""
        return 1 - math.exp(self.lo)


def difference(
    base: list[RunSpeedup], cur: list[RunSpeedup], sigma0: float, d0: float
) -> tuple[float, float, float, float]:
    """(d, se, df, σ): the mean log speed-up of `cur` less `base`'s, its standard error and degrees
    of freedom, and the pair's between-run SD: each side's runs about their own mean, shrunk toward
    the machine's (σ0, d0); a run whose own rounds were noisier than that counts as that noisy."""
    yb, yc = [r.log for r in base], [r.log for r in cur]
    k, m = len(yb), len(yc)
    df_pair = k - 1 + m - 1
    sigma2 = (_ss(yb) + _ss(yc) + d0 * sigma0**2) / (df_pair + d0)
    se = math.sqrt(sum(max(sigma2, r.var) for r in base) / k**2 + sum(max(sigma2, r.var) for r in cur) / m**2)
    return sum(yc) / m - sum(yb) / k, se, df_pair + d0, math.sqrt(sigma2)


def judge(base: list[RunSpeedup], cur: list[RunSpeedup], tol: float, sigma0: float, d0: float) -> Judged:
    """The t test of the module docstring on usable runs of both sides, at the tolerance given.

    A non-inferiority test, both ways: the pair passes only where the interval's lower end (at
    PASS_LEVEL) rules out a drop beyond the tolerance, fails only where its upper end (at FAIL_LEVEL)
    rules out a drop within it, and is not judged otherwise. The pair's own noise widens the
    interval, never the tolerance: a noisy pair is not judged rather than passed (a pair whose
    change read [-38%, +5%] once passed as "drop not significant" under a tolerance its noise had
    widened to 33%)."""
    d, se, df, sigma = difference(base, cur, sigma0, d0)
    lo, hi = d - t_quantile(df, PASS_LEVEL) * se, d + t_quantile(df, FAIL_LEVEL) * se
    edge = math.log(1 - tol)
    if hi < edge:
        verdict = REGRESSED
    elif lo >= edge:
        verdict = OK
    else:
        verdict = UNJUDGED
    return Judged(verdict, d, lo, hi, tol, sigma)
