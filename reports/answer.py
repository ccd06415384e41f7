"""What a run ends with in the terminal: the answer, on one screen, from its recorded pairs and
outcomes (the suite prints it; a results file holds the same records).

Per technique that compares two ways, the pair its rule names at the largest size measured, with
its paired speed-up, interval and what the interval says against the band (harness.contract.gain); how
many pairs the machine was busy for, and what to do about it; the findings counted by verdict and
the notes' errata; DDP's strong scaling; where the results went. pytest-benchmark's own per-test
tables (hundreds of lines, up to 554 columns wide on the quick profile) are turned off by the
suite's recorder unless ``--benchmark-tables``; the full picture is the report (`python -m reports
build`).
"""

from __future__ import annotations

import collections
import shlex

from harness.contract import claims, gain, record, rules


def _largest(pairs: list[record.PairTiming]) -> list[record.PairTiming]:
    """Per case × part × pair × device × dtype, the pair at the largest size."""
    best: dict[tuple, record.PairTiming] = {}
    for p in pairs:
        key = (p.case, p.part, p.fast, p.slow, p.device, p.dtype)
        x = p.size.get(p.x or next(iter(p.size), ""), 0) if p.size else 0
        if key not in best or x >= best[key][0]:
            best[key] = (x, p)
    return [p for _, p in best.values()]


def claimed_pairs(cases: dict) -> set[tuple[str, str, str]]:
    """(case, fast, slow) of every pair a claim of the notes is decided by: the speed and memory
    rules inside the rule nodes that name a claim. A pair outside them is context (it decides
    nothing), and the terminal table says so beside it."""
    found = set()
    for case_id, info in cases.items():
        for node in rules.claimed(getattr(info, "verdict", None)):
            for r in rules.speed_rules(node):
                found.add((case_id, r.fast, r.slow))
            for r in rules.memory_rules(node):
                found.add((case_id, r.light, r.heavy))
    return found


def lines(
    pairs: list[record.PairTiming],
    outcomes: list[record.Outcome],
    results_path: str | None,
    cases: dict | None = None,
) -> list[str]:
    """``cases``: id → `record.CaseInfo` as the run declared them; with them, a timed pair that
    decides no claim is marked as context."""
    out = []
    claimed = claimed_pairs(cases) if cases is not None else None
    red = sorted({o.case for o in outcomes if o.outcome == "failed"})
    judged = [(p, gain.paired_ratio(p.slow_s, p.fast_s)) for p in _largest(pairs) if p.against == "rule"]
    if judged:
        width = max(len(p.case) for p, _ in judged)
        out.append(
            f"{'technique':<{width}}  {'compared at the largest size':<44} {'speed-up [95% CI]':<26} answer"
        )
        for p, ratio in sorted(judged, key=lambda pr: -pr[1].point):
            band = gain.delta(p.noise_floor)
            what = gain.classify(ratio, band).value
            busy = " (busy)" if (p.load or {}).get("busy") else ""
            where = f"{p.fast} vs {p.slow} ({p.size_label} {p.dtype} {p.device})"
            interval = str(ratio).replace("[95% CI ", "[")
            # Nothing red reads holds: a gain timed beside a red test of its ID is not an answer.
            red_mark = " (a test of this ID is red: not holds)" if p.case in red else ""
            context = (
                " (context: decides no claim)"
                if claimed is not None and (p.case, p.fast, p.slow) not in claimed
                else ""
            )
            out.append(f"{p.case:<{width}}  {where[:44]:<44} {interval:<26} {what}{busy}{red_mark}{context}")
    if pairs:
        busy = [p for p in pairs if (p.load or {}).get("busy")]
        if busy:
            out.append(
                f"noise: {len(busy)}/{len(pairs)} pairs were timed on a busy machine "
                f"({busy[0].load['busy']}): "
                "their intervals are wider and a small gain reads 'too noisy to tell'; rerun on an idle "
                "machine or with --threads 1 for tighter answers"
            )
        else:
            out.append(f"noise: all {len(pairs)} pairs timed on a quiet machine")
    findings = [o for o in outcomes if o.finding is not None and o.outcome == "passed"]
    if findings:
        tally = collections.Counter(
            o.finding.verdict.value for o in findings if o.finding.verdict is not None
        )
        errata = {e.key: o.case for o in findings for e in o.finding.errata}
        worst = sorted({o.case for o in findings if o.finding.verdict is claims.Verdict.FAILS})
        # A check that only reads the notes or reports a measurement decides no verdict: counted
        # apart, so the tally adds up to the number of checks.
        undecided = len(findings) - sum(tally.values())
        counts = [f"{n} {v}" for v, n in tally.most_common()]
        counts += [f"{undecided} report only (decide no verdict)"] if undecided else []
        out.append(
            f"findings: {len(findings)} checks: {', '.join(counts)}; "
            f"notes' errata: {len(errata)} in {len(set(errata.values()))} techniques"
        )
        if worst:
            out.append("checks that found the technique failing: " + ", ".join(worst))
    out.extend(scaling_table(outcomes))
    failed = [o for o in outcomes if o.outcome == "failed"]
    if failed:
        out.append(
            f"red: {len(failed)} failed tests (listed above) in {', '.join(red)}: each fails its claim "
            "(a variant outside its tolerance) or leaves it 'could not judge'; none of these IDs reads holds"
        )
    if results_path:
        out.append(
            f"results: {results_path}; the report: python -m reports build {shlex.quote(str(results_path))}"
        )
    return out


def scaling_table(outcomes: list[record.Outcome]) -> list[str]:
    """DDP's strong scaling per device and world size (parallel.dp_vs_ddp's launched runs): the step
    at N ranks against one rank on the same global batch, efficiency T1 / (N·TN) (1 is ideal)."""
    rows = sorted(
        (o.device, int(o.measured["world_size"]), o.measured)
        for o in outcomes
        if o.outcome == "passed" and o.measured and "scaling_efficiency" in o.measured
    )
    if not rows:
        return []
    out = [
        "DDP strong scaling, same global batch (efficiency T1/(N·TN); 1 is ideal):",
        f"  {'device':<7} {'world':>5}  {'step ms':>7}  {'1 rank ms':>9}  {'efficiency':>10}",
    ]
    for device, world, m in rows:
        out.append(
            f"  {device:<7} {world:>5}  {m['step_s'] * 1e3:>7.1f}  {m['t1_s'] * 1e3:>9.1f}  "
            f"{m['scaling_efficiency']:>10.2f}"
        )
    return out
