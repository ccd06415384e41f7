"""``python -m reports gate``: did this run regress against the stored baseline?

What is compared: the speedup of each pair a case declares (its rule's fast variant over its slow
one, and its context pairs), as its run recorded them, measured *within* each run. A machine that
is uniformly slower today (another job, a cooler CPU) slows both variants and leaves the speedup
alone, so the gate is portable between runners of one kind, where absolute times are not.

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
max(σ², w²)/k² + Σ_c max(σ², w²)/m² (σ²·(1/k + 1/m) where the rounds are tight). The tolerance is
the case's (``Case.gate_tolerance``, as its baseline declared it) or the command line's, and nothing
else: a pair's own noise widens its interval, never its tolerance. Judged both ways against the
edge log(1 − tolerance), as a non-inferiority test:

- *ok* only when the interval's lower end, d − t₉₅·se (one-sided 95%), lies above the edge: the
  runs rule out a drop beyond the tolerance;
- *regressed* only when its upper end, d + t₉₉.₉·se (one-sided 99.9%), lies below the edge: they
  rule out a drop within it. The failing bound is the stricter because a suite gates ~80 pairs at
  once: at 95% per pair, synthetic unchanged runs 15% apart failed 4 comparisons in 60; at 99.9%
  (about 5% for 50 pairs together, Bonferroni), none;
- otherwise *could not judge* (``unstable`` where no recheck was given, so the workflow re-measures
  it), the line naming the drop a pass would have hidden (1 − exp of the lower end).

The question is one-sided (a speedup that grew is never a failure). Why a t test on run-level
numbers and not a bootstrap of rounds or a rank test: the rounds of one process share its code
layout, page placement and neighbours, so resampling them measures only the within-run part; with
1-3 runs a side there is nothing else to resample, and a rank test of so few cannot reach 95%. A t
with a shrunk variance is the standard answer for few replicates of many features.

What that costs, and why it is paid: a pair whose runs differ by much more than the tolerance is
never passed; it reads "could not judge" until enough runs narrow its interval (more baseline runs,
rechecks), or until its case declares the tolerance the gate can hold it to. The gate once widened
each pair's tolerance by its own noise (to 4 SDs of the change between unchanged runs, at most 33%)
and passed what fell inside: a pair whose change read [-38.2%, +4.5%] printed "ok (drop not
significant)", and with a 6-run history a planted 1.3× slowdown passed. A one-run baseline has σ0
assumed (PRIOR_SIGMA on PRIOR_DF), its interval about ±45%: against it nothing passes, and only a
drop of about 8× fails.

Could not judge (exit 3) also: a drop resting only on runs the load probe saw busy, or a side with
no run of stable, enough rounds: ``unstable`` with no --recheck of the pair, ``could not judge``
with some; ``--allow-unjudged`` passes it for a user who accepts that. Busy runs decide nothing:
the neighbours' share changes from run to run (on this box, loaded runs put one pair's speed-up
500× apart), which no model of quiet runs covers.

Rechecks: --recheck files re-measure the suspects in new processes. They join the current side,
so m grows and the between-run term of se shrinks by √(1/k + 1/m); a real regression persists in
every one, noise averages out. Why pooled and not "every recheck must confirm": that rule's
false-alarm rate is the product of per-run rates, small only where each per-run test already
counts the between-run noise, which one run alone cannot estimate; pooled, one model covers all.

Memory: peak bytes are counted (allocator statistics, replayed allocation events), not sampled,
so the memory saving (slow peak / fast peak) fails when it shrank by more than the tolerance,
without a significance test.

Which pairs: every case that times anything is gated on the pairs its run recorded as timed (those
its rule names and the context pairs it declares: harness.contract.declared.timed_pairs), so a case
judged by its findings that times the library against the notes' way is gated too.

Exit status: 0 all holds; 1 a correctness check failed in the current run, a pair regressed, a
memory saving shrank, or a case present in the baseline vanished, and nothing else; 2 bad input
(missing or corrupt file, an impossible time, several machines on one side, no case in common,
an unwritable --suspects); 3 could not judge (see above; ``--allow-unjudged`` makes that 0).
"""

from __future__ import annotations

from reports.gate.compare import PAGE, compare, gated_pairs, groups_by_key
from reports.gate.lines import (
    EXIT_UNJUDGED,
    FAILED,
    FAILING,
    INCOMPARABLE,
    JUDGED,
    MEMORY,
    NEW,
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
    FAIL_LEVEL,
    LEVEL,
    MAX_RATIO_SPREAD,
    MIN_PAIRS,
    PAIR_KEYS,
    PASS_LEVEL,
    PRIOR_DF,
    PRIOR_SIGMA,
    UNJUDGEABLE_SPREAD,
    Judged,
    Runs,
    RunSpeedup,
    judge,
    judged_on,
    machine_prior,
)
from reports.gate.text import markdown, single_run_note, suspects

# The command (`reports.gate.cli.run`) is not here: it reads files and the history, and the gate's
# judging must import neither.
__all__ = [
    "PAGE",
    "compare",
    "gated_pairs",
    "groups_by_key",
    "EXIT_UNJUDGED",
    "FAILED",
    "FAILING",
    "INCOMPARABLE",
    "JUDGED",
    "MEMORY",
    "NEW",
    "OK",
    "REGRESSED",
    "SLOWER",
    "UNJUDGED",
    "UNSTABLE",
    "VANISHED",
    "Line",
    "exit_code",
    "D0_MAX",
    "FAIL_LEVEL",
    "LEVEL",
    "MAX_RATIO_SPREAD",
    "MIN_PAIRS",
    "PAIR_KEYS",
    "PASS_LEVEL",
    "PRIOR_DF",
    "PRIOR_SIGMA",
    "UNJUDGEABLE_SPREAD",
    "Judged",
    "Runs",
    "RunSpeedup",
    "judge",
    "judged_on",
    "machine_prior",
    "markdown",
    "single_run_note",
    "suspects",
]
