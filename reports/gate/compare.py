"""The comparison: every pair a case declares, in the baseline's runs against the current ones and
the rechecks (`compare`), each judged by the model (`reports.gate.model`) into a `Line`; a pair
both runs timed that no line judged is `could not judge`, never a silent pass."""

from __future__ import annotations

import math

import numpy as np

from harness.contract.record import KEY_COLUMNS
from reports import load, stats, summary
from reports.gate.lines import (
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
)
from reports.gate.model import (
    PRIOR_DF,
    PRIOR_SIGMA,
    Judged,
    Runs,
    RunSpeedup,
    gate_key,
    judge,
    judged_on,
    machine_prior,
)


def _machine(results: load.Results, path) -> str:
    machines = list(dict.fromkeys(results.runs["machine"]))
    if len(machines) != 1:
        raise load.ResultsError(
            f"{path}: holds results of {len(machines)} machines ({'; '.join(machines)}); "
            "gate one machine at a time"
        )
    return machines[0]


def groups_by_key(results: load.Results) -> dict:
    """The points of a results file by what the gate pairs them on (case, size, dtype, and the
    device with its timing mode), each the `reports.summary.Group` of its variants."""
    return {
        gate_key((g.key[k] for k in KEY_COLUMNS), g.key["timing_mode"]): g
        for g in summary.groups(results.rows)
    }


def _cases(results: load.Results) -> set:
    return set(results.rows["case"]) | set(results.outcomes["case"])


def gated_pairs(group, known) -> list[tuple[str, str]]:
    """(fast, slow) of each pair the gate judges at a point: the rule's and the context's, not the
    library's or the compiled twins' (``known``: case ID → the case as its run recorded it)."""
    return [
        (f, s)
        for f, s, against in group.pairs(known.get(group.key["case"]))
        if against in ("rule", "context")
    ]


def _tol(case_id, known, default) -> float:
    case = known.get(case_id)
    return case.gate_tolerance if case is not None and case.gate_tolerance is not None else default


PAGE = 4096


def _change(log: float) -> str:
    """A log change as a percentage; a bound past ×1000 (t at FAIL_LEVEL on a fraction of a degree
    of freedom) is printed as unbounded rather than overflowing."""
    return f"{math.expm1(log):+.1%}" if log < math.log(1000) else "+∞"


def _memory_ratio(group, slow: str, fast: str) -> float:
    """Peak memory of `slow` over `fast`, each floored at one page: a variant that allocates
    nothing the allocator sees (in place, or a view) peaks at 0 bytes, and below a page the
    difference means nothing. NaN where a peak was not measured (the comparison is then skipped)."""
    return (group.peak[slow] + PAGE) / (group.peak[fast] + PAGE)


def _why_not(runs: list[RunSpeedup]) -> str:
    """Why no run of a side can be judged on: unstable or too few rounds, or timed busy."""
    stable = [r for r in runs if not r.unusable()]
    if stable:
        return f"timed only on a busy machine ({stable[0].busy})"
    return runs[0].unusable()


def _judge_pair(
    base_runs: list[RunSpeedup],
    cur_runs: list[RunSpeedup],
    rechecked: bool,
    tol: float,
    prior: tuple[float, float],
    assumed: bool,
) -> tuple[str, str, Judged | None]:
    """(verdict, note, the test) of one pair. Each side is judged on its usable, quiet runs only:
    a current side with none is not judged, `unstable` (re-measure) with no recheck of the pair,
    `could not judge` with some; a baseline with none is `could not judge` (a busy baseline never
    passes anything)."""
    not_judged = UNJUDGED if rechecked else UNSTABLE
    ask = ", and no recheck decided it" if rechecked else ": re-measure (--recheck)"
    base = judged_on(base_runs)
    if not base:
        # A baseline timed only on a busy machine decides nothing: its speed-up is the neighbours'.
        return UNJUDGED, f"baseline {_why_not(base_runs)}: re-measure the baseline on a quiet machine", None
    cur = judged_on(cur_runs)
    if not cur:
        return not_judged, f"{_why_not(cur_runs)}{ask}", None
    judged = judge(base, cur, tol, *prior)
    notes = []
    if assumed:
        notes.append(f"between-run σ0 {prior[0]:.0%} assumed: the baseline holds one run")
    if len(cur) > 1:
        notes.append(f"{len(cur)} current runs")
    if judged.verdict == REGRESSED:
        return REGRESSED, "; ".join([f"CI below -{tol:.0%}", *notes]), judged
    if judged.verdict == OK:
        return OK, "; ".join(notes), judged
    # Neither side of the tolerance: a pass would have hidden a drop this large. Named, and
    # re-measured (the rechecks narrow the interval), never passed.
    why = (
        f"a drop of up to {judged.missed():.0%} cannot be ruled out at tolerance {tol:.0%} "
        f"(this pair's runs vary by σ {judged.sigma:.1%})"
    )
    return not_judged, "; ".join([why + ask, *notes]), judged


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
    # The pairs and tolerances a case is gated on are those its baseline recorded (runs already on
    # main, harness.contract.record): what the run under test declares about itself (a wider
    # tolerance, the sides swapped) cannot loosen its own gate; where it differs, the pair is not
    # judged and the line names the difference. A case the baseline has no results for is new:
    # its declaration there (a run of part of the catalogue records all of it) gates nothing.
    declared_now = current.cases_of()
    if known is None:
        ran_before = _cases(baseline)
        known = {**declared_now, **{k: c for k, c in baseline.cases_of().items() if k in ran_before}}
    base_machine, cur_machine = _machine(baseline, names[0]), _machine(current, names[1])
    _one_commit(current, names[1])
    if not (_cases(baseline) & _cases(current)):
        raise load.ResultsError(f"{names[0]} and {names[1]} have no case in common")
    for rc, rc_name in zip(rechecks, names[2:] or [f"--recheck {i + 1}" for i in range(len(rechecks))]):
        _same_run_kind(rc, current, rc_name, names[1])
    lines: list[Line] = list(_declared_otherwise(known, declared_now))
    outcomes = current.outcomes
    for i in np.flatnonzero(outcomes["outcome"].to_numpy() == "failed"):
        r = outcomes.iloc[i]
        lines.append(
            Line(
                r["case"],
                r["size_label"],
                f"{r['dtype']} {r['device']}".strip(),
                r["name"],
                verdict=FAILED,
                note=r["reason"].splitlines()[0][:200] if r["reason"] else "",
            )
        )
    base_groups, cur_groups = groups_by_key(baseline), groups_by_key(current)
    base_runs, cur_runs = Runs(baseline), Runs(current)
    recheck_runs = [Runs(rc) for rc in rechecks]
    gated = [
        (key, group, fast, slow)
        for key, group in base_groups.items()
        for fast, slow in gated_pairs(group, known)
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
        for fast, slow in gated_pairs(base_group, known):
            line = Line(case_id, size, f"{dtype} {device}", f"{fast} ÷ {slow}")
            base = base_runs.of(key, fast, slow)
            cur = cur_runs.of(key, fast, slow)
            lines.append(line)
            if not base:  # each side timed in some run, never both in one: no speed-up to compare
                line.verdict, line.note = UNJUDGED, "the baseline never timed both sides in one run"
                continue
            line.baseline = math.exp(sum(r.log for r in base) / len(base))
            if not cur:
                line.verdict = VANISHED
                line.note = (
                    "case missing from the current run"
                    if case_id not in cur_cases
                    else "this size/pair missing from the current run"
                )
                continue
            line.current = math.exp(sum(r.log for r in cur) / len(cur))
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
                line.ci = f"[{_change(judged.lo)}, {_change(judged.hi)}]"
            line.verdict, line.note = verdict, note
            base_mem, cur_mem = (
                _memory_ratio(base_group, slow, fast),
                _memory_ratio(cur_groups[key], slow, fast) if key in cur_groups else math.nan,
            )
            # Peak bytes are counted, not sampled: a saving that shrank fails whatever the timing
            # could or could not decide.
            if line.verdict not in FAILING and base_mem > 1 and cur_mem < base_mem * (1 - tol):
                line.verdict = MEMORY
                line.note = f"memory ratio {base_mem:.3g}× → {cur_mem:.3g}×"
            elif math.isfinite(base_mem) and not math.isfinite(cur_mem):
                line.note = "; ".join(
                    filter(None, [line.note, "memory not checked: the current run has no peak memory"])
                )
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
            for fast, slow in gated_pairs(cur_group, known):
                runs = cur_runs.of(key, fast, slow)
                value = math.exp(sum(r.log for r in runs) / len(runs)) if runs else math.nan
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
    gated pairs of its solo rows (the pairs its run recorded: `gated_pairs`), and the rule's pairs
    it timed side by side where the point has any, else the context ones (files whose rounds hold a
    library-over-naive context pair beside the rule's pair that the run gated alone)."""
    found = set()
    pairs = results.pairs
    if pairs is not None and not pairs.empty:
        cols = {c: pairs[c].tolist() for c in ("fast", "slow", "against")}
        for (case_id, size, dtype, device), idx in load.group_positions(pairs, list(KEY_COLUMNS)):
            timed = [i for i in idx if cols["against"][i] in ("rule", "context")]
            if any(cols["against"][i] == "rule" for i in timed):
                timed = [i for i in timed if cols["against"][i] == "rule"]
            found |= {
                (case_id, size, f"{dtype} {device}", f"{cols['fast'][i]} ÷ {cols['slow'][i]}") for i in timed
            }
    for (case_id, size, dtype, device), group in groups.items():
        found |= {(case_id, size, f"{dtype} {device}", f"{f} ÷ {s}") for f, s in gated_pairs(group, known)}
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
    # Lines that name a pair but could not judge it say why themselves; this says why there is none.
    named = any(x.pair and x.verdict not in (NEW, VANISHED) for x in lines)
    if not judged and not named and not any(x.verdict in FAILING for x in lines):
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


def _one_commit(current: load.Results, name: str) -> None:
    """The current side is one commit (its runs and rechecks alike): a folder mixing commits would
    let an older, faster run stand in for the change under test."""
    commits = sorted(set(current.runs["commit"].fillna("?")))
    if len(commits) > 1:
        raise load.ResultsError(
            f"{name}: holds runs of {len(commits)} commits ({', '.join(commits)}); gate one commit at a time"
        )


def _declared_otherwise(known: dict, declared_now: dict) -> list[Line]:
    """A `could not judge` line for each case whose current run declares another gate tolerance or
    other timed pairs than the baseline it is gated against."""

    def unjudged(case_id: str, note: str) -> Line:
        return Line(case_id, "", "", "", verdict=UNJUDGED, note=note)

    out = []
    for case_id, now in sorted(declared_now.items()):
        then = known.get(case_id)
        if then is None or then is now:
            continue
        if then.gate_tolerance != now.gate_tolerance:
            out.append(
                unjudged(
                    case_id,
                    f"the current run declares gate tolerance {now.gate_tolerance}, the baseline "
                    f"{then.gate_tolerance}: the baseline's is used; land the change to judge it",
                )
            )
        then_pairs = {(t.fast, t.slow) for t in getattr(then, "timed", ()) or ()}
        now_pairs = {(t.fast, t.slow) for t in getattr(now, "timed", ()) or ()}
        if then_pairs and now_pairs and then_pairs != now_pairs:
            changed = sorted(now_pairs ^ then_pairs)
            out.append(
                unjudged(
                    case_id,
                    f"the current run declares other timed pairs than the baseline ({changed}): "
                    "the baseline's are judged",
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
