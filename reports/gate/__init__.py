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
behind it are named on the line; it stops at MAX_TOLERANCE (a 1.5× drop), where the pair is
judged at the cap and the line says so, and that a smaller drop lies inside its noise.

Fail closed: where the interval straddles the tolerance but the drop itself (d) lies inside it,
the line passes as ``ok (drop not significant)``; a drop beyond the tolerance that the interval
cannot confirm is not passed but re-measured (``unstable``). Against a one-run baseline the edge
for that is the bare tolerance: σ0 is a guess for every pair there, and a 30% drop is not passed
for lying inside a guessed noise. A pair judged at the cap has the cap as that edge: with the
bare tolerance there instead, an unchanged run's answer was the sign of its own noise (a little
below the baseline's mean: could not judge; above: pass), so on a machine with a few such pairs
no comparison passed (the 2-core EPYC: 3 of 10 with a 5-run history; 8 of 10 with the cap).

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

from reports.gate.cli import run
from reports.gate.compare import (
    PAGE,
    _cases,
    _groups,
    _machine,
    _memory_ratio,
    _not_compared,
    _pairs,
    _same_run_kind,
    _timed_pairs,
    _tol,
    compare,
)
from reports.gate.lines import (
    EXIT_UNJUDGED,
    FAILED,
    FAILING,
    INCOMPARABLE,
    JUDGED,
    MEMORY,
    NEW,
    NOISY,
    OK,
    REGRESSED,
    SLOWER,
    UNJUDGED,
    UNSTABLE,
    VANISHED,
    Line,
    exit_code,
)
from reports.gate.model import (
    D0_MAX,
    LEVEL,
    MAX_RATIO_SPREAD,
    MAX_TOLERANCE,
    MIN_PAIRS,
    PAIR_KEYS,
    PRIOR_DF,
    PRIOR_SIGMA,
    UNJUDGEABLE_SPREAD,
    WIDEN,
    Judged,
    Runs,
    RunSpeedup,
    _judged_on,
    _median_var,
    _spread,
    judge,
    machine_prior,
)
from reports.gate.text import markdown, single_run_note, suspects

__all__ = [
    "PAGE",
    "_cases",
    "_groups",
    "_machine",
    "_memory_ratio",
    "_not_compared",
    "_pairs",
    "_same_run_kind",
    "_timed_pairs",
    "_tol",
    "compare",
    "EXIT_UNJUDGED",
    "FAILED",
    "FAILING",
    "INCOMPARABLE",
    "JUDGED",
    "MEMORY",
    "NEW",
    "NOISY",
    "OK",
    "REGRESSED",
    "SLOWER",
    "UNJUDGED",
    "UNSTABLE",
    "VANISHED",
    "Line",
    "exit_code",
    "D0_MAX",
    "LEVEL",
    "MAX_RATIO_SPREAD",
    "MAX_TOLERANCE",
    "MIN_PAIRS",
    "PAIR_KEYS",
    "PRIOR_DF",
    "PRIOR_SIGMA",
    "UNJUDGEABLE_SPREAD",
    "WIDEN",
    "Judged",
    "Runs",
    "RunSpeedup",
    "_judged_on",
    "_median_var",
    "_spread",
    "judge",
    "machine_prior",
    "run",
    "markdown",
    "single_run_note",
    "suspects",
]
