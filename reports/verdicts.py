"""Judge a catalogue ID on one machine's results: each of the notes' claims, then the technique.

Claims are the unit (CATALOG.md): each claim a case declares is decided by what names it, the
rule checks' findings, the variants' checks against their float64 truth, and the verdict rule's
nodes (a timed pair, a peak-memory ratio, a hedge). A `ClaimJudgement` per claim; the technique's
`Judgement` is computed from them: fails if any claim fails, holds only when every measured claim
holds, with how many were measured. What names no claim is context: reported, deciding nothing.

Nothing red reads holds: a variant outside its tolerance makes its claim fail (the check observed
the claim false); any other red test (a check's own precondition, a crash) leaves its claim
`could not judge`, naming the test; an ID with any red test is never `holds`, whatever the test.
A variant outside its tolerance has no timings (a fast wrong answer is not an optimization).

Files written before claims (no ``claims`` in their cases) are judged per case as they were then,
by the rule and the findings, and a red test there also keeps the ID from `holds`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from harness.contract import catalogue, gain, record, rules
from harness.contract.record import Verdict

HOLDS, FAILS, DEPENDS, NOT_MEASURED, COULD_NOT_JUDGE = (
    Verdict.HOLDS.value,
    Verdict.FAILS.value,
    Verdict.DEPENDS.value,
    Verdict.NOT_MEASURED.value,
    Verdict.COULD_NOT_JUDGE.value,
)
WRONG_ANSWER = "WrongAnswer"  # harness.point.variant_benchmark's error: a variant outside its tolerance


@dataclass(frozen=True)
class ClaimJudgement:
    """One of the notes' claims on one machine: its verdict, what decided it and the evidence."""

    claim: record.Claim
    verdict: str
    decided_by: str
    evidence: str


@dataclass(frozen=True)
class Judgement:
    verdict: str
    evidence: str
    errors: tuple[str, ...] = ()  # the failed suite tests, one line each with the message
    errata: tuple = ()  # harness.contract.record.Erratum: the notes as written, apart from the verdict
    claims: tuple[ClaimJudgement, ...] = ()  # empty for files written before claims were the unit

    def claims_with(self, *verdicts: str) -> int:
        return sum(1 for c in self.claims if c.verdict in verdicts)

    @property
    def claims_measured(self) -> int:
        return len(self.claims) - self.claims_with(NOT_MEASURED)

    @property
    def notes_verdict(self) -> str:
        """The second verdict: the notes as written."""
        if not self.errata:
            return "correct"
        return f"{len(self.errata)} {'erratum' if len(self.errata) == 1 else 'errata'}"


def combine(parts: list[Judgement], joiner: str = "; ") -> Judgement:
    """All holds → holds, all fails → fails; holds at one point and fails at another → depends (on
    what tells the points apart: the device, the size, the dtype, named in the evidence); a part
    that could not be judged (a busy machine, an interval across the band) leaves the whole
    undecided unless the decided parts already disagree, since noise is never a condition.
    Unmeasured parts are set aside."""
    measured = [p for p in parts if p.verdict != NOT_MEASURED]
    evidence = joiner.join(p.evidence for p in parts if p.evidence)
    if not measured:
        return Judgement(NOT_MEASURED, evidence)
    kinds = {p.verdict for p in measured}
    if kinds == {HOLDS}:
        return Judgement(HOLDS, evidence)
    if kinds == {FAILS}:
        return Judgement(FAILS, evidence)
    if {HOLDS, FAILS} <= kinds or DEPENDS in kinds:
        return Judgement(DEPENDS, evidence)
    return Judgement(COULD_NOT_JUDGE, evidence)


def all_of(parts: list[Judgement]) -> Judgement:
    """A claim made of several parts (rules.AllOf): fails when any measured part fails, holds when
    all hold, otherwise depends. `combine` is for one rule across devices, where a mix of holds and
    fails means the claim depends on the hardware."""
    measured = [p for p in parts if p.verdict != NOT_MEASURED]
    joined = combine(parts)
    if any(p.verdict == FAILS for p in measured):
        return Judgement(FAILS, joined.evidence)
    return joined


def any_of(parts: list[Judgement]) -> Judgement:
    """A hedge settled by one observation (rules.AnyOf): holds when any measured part holds (its
    evidence first), fails when every measured part fails, otherwise depends."""
    measured = [p for p in parts if p.verdict != NOT_MEASURED]
    joined = combine(parts)
    held = [p for p in measured if p.verdict == HOLDS]
    if held:
        return Judgement(HOLDS, "; ".join(p.evidence for p in held + [p for p in parts if p not in held]))
    return joined


def _largest(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows at the largest size of each device × dtype × part (x first, then the size's order in the
    run): each part of a case is its own comparison, with sizes of its own."""
    if frame.empty:
        return frame
    frame = frame.assign(_order=range(len(frame)))
    if "part" not in frame:
        frame = frame.assign(part="")
    frame["part"] = frame["part"].fillna("")
    best = frame.sort_values(["x", "_order"]).groupby(["device", "dtype", "part"], sort=False).tail(1)
    keys = set(zip(best["device"], best["dtype"], best["size_label"]))
    mask = [k in keys for k in zip(frame["device"], frame["dtype"], frame["size_label"])]
    return frame[mask].drop(columns="_order")


def _ci(row) -> str:
    if math.isnan(row.ci_low):
        return f"{row.speedup:.3g}× (too few rounds for a CI)"
    return f"{row.speedup:.3g}× [95% CI {row.ci_low:.3g}, {row.ci_high:.3g}]"


def _speed_rows(rule, summary: pd.DataFrame, roles: dict) -> pd.DataFrame:
    fast, slow = set(rules.expand(rule.fast, roles)), set(rules.expand(rule.slow, roles))
    return summary[summary["fast"].isin(fast) & summary["slow"].isin(slow)]


def _flags(row, *prefixes: str) -> str:
    return "; ".join(q for q in str(getattr(row, "quality", "") or "").split("; ") if q.startswith(prefixes))


def _noisy(row) -> str:
    """Why a pair's band is wider than the catalogue's 5%, or "" where it is not."""
    return _flags(row, "machine busy", "noise floor")


def _busy(row) -> str:
    """The load probe's reason where a pair was timed on a busy machine, or "" where it was quiet."""
    return _flags(row, "machine busy")


def speed_judgement(row, premise: str = "", min_speedup: float = 1.0) -> Judgement:
    """One pair at one size, by the catalogue's policy (harness.contract.gain): faster only when the whole
    interval clears 1 + δ, on a quiet or a busy machine alike (load only widens an interval, so one
    that still clears the band is a finding); "no measurable difference" inside ±δ fails a claim
    of a gain, unless the band was widened by the machine's own noise. Noise is never a condition:
    anything else timed busy, an interval across an edge of the band, or a band widened by noise
    is `could not judge`, naming why, never a coin toss and never `depends`."""
    delta = float(getattr(row, "delta", gain.DELTA_FLOOR) or gain.DELTA_FLOOR)
    where = f"{row.fast} vs {row.slow} at {row.size_label} {row.dtype} {row.device}: {_ci(row)}"
    band = f"±{delta:.0%}"
    verdict = (
        getattr(row, "gain", None) or gain.classify(gain.Ratio(row.speedup, row.ci_low, row.ci_high)).value
    )
    if premise and getattr(row, "identical", None) is True:
        return Judgement(
            DEPENDS,
            f"{where}: the two ways gave bitwise-identical results here, so they ran one computation: "
            f"the claim's premise ({premise}) is absent on this machine",
        )
    busy = _busy(row)
    if verdict == gain.Gain.FASTER.value and row.ci_low > min_speedup:
        return Judgement(
            HOLDS,
            f"{where}, faster beyond the {band} band"
            + (f" (timed on a {busy}; the interval clears the band all the same)" if busy else ""),
        )
    if busy:
        # Anything short of a clear gain, timed busy, is not a finding either way: a neighbour can
        # slow one side alone, and how much varies from run to run (three runs beside two CPU
        # burners gave three different answers for one pair). Left undecided, busy runs agree with
        # each other and contradict no quiet one.
        return Judgement(
            COULD_NOT_JUDGE,
            f"machine busy: {where} ({verdict}), timed on a {busy}; re-run on a quiet machine",
        )
    if verdict == gain.Gain.FASTER.value:
        return Judgement(COULD_NOT_JUDGE, f"{where}: faster, but not surely by the claimed {min_speedup:g}×")
    if verdict == gain.Gain.SLOWER.value:
        return Judgement(FAILS, f"{where}: slower, beyond the {band} band")
    if verdict == gain.Gain.SAME.value:
        noisy = _noisy(row)
        if noisy:
            return Judgement(
                COULD_NOT_JUDGE,
                f"{where}: no measurable difference within {band}, a band this wide because of {noisy}",
            )
        return Judgement(FAILS, f"{where}: no measurable difference (inside {band})")
    return Judgement(COULD_NOT_JUDGE, f"{where}: too noisy to tell (the interval crosses the {band} band)")


def where_it_turns(picked: pd.DataFrame) -> list[str]:
    """Per device × dtype × part × pair measured at several sizes: the sizes at which the answer
    changes ("faster from d=512; no measurable difference at d=64")."""
    lines = []
    if picked.empty or "gain" not in picked:
        return lines
    for (device, dtype, part, fast, slow), rows in picked.groupby(
        ["device", "dtype", "part", "fast", "slow"], sort=False, dropna=False
    ):
        rows = rows.sort_values("x", kind="stable")
        gains = list(rows["gain"])
        if len(gains) < 2 or len(set(gains)) < 2:
            continue
        x_name = rows["x_name"].iloc[0]
        steps = [f"{g} at {x_name}={x:g}" for g, x in zip(gains, rows["x"])]
        lines.append(
            f"{fast} vs {slow} ({dtype} {device}{' ' + part if part else ''}) turns with size: "
            + ", ".join(steps)
        )
    return lines


def faster(rule: rules.Faster, summary, rows, roles) -> Judgement:
    picked = _speed_rows(rule, summary, roles)
    if picked.empty:
        return Judgement(NOT_MEASURED, f"no timings of {rule.fast} and {rule.slow} together")
    parts = [speed_judgement(row, rule.premise, rule.min_speedup) for row in _largest(picked).itertuples()]
    judged = combine(parts)
    turns = where_it_turns(picked)
    return Judgement(judged.verdict, "; ".join([judged.evidence, *turns]))


def not_faster(rule: rules.NotFaster, summary, rows, roles) -> Judgement:
    """ "Not necessarily faster" holds where the gain does not show at some measured point (no
    measurable difference, or slower); fails where it is faster everywhere; a point too noisy to
    tell cannot settle it either way."""
    picked = _speed_rows(rule, summary, roles)
    if picked.empty:
        return Judgement(NOT_MEASURED, f"no timings of {rule.fast} and {rule.slow} together")
    judged = [(speed_judgement(row), row) for row in picked.itertuples()]
    not_faster_at = [
        (j, r) for j, r in judged if r.gain in (gain.Gain.SAME.value, gain.Gain.SLOWER.value) and not _busy(r)
    ]
    if not_faster_at:
        j, row = min(not_faster_at, key=lambda jr: jr[1].speedup)
        return Judgement(HOLDS, f"{rule.fast} not faster than {rule.slow}: {j.evidence}")
    if all(j.verdict == HOLDS for j, _ in judged):
        row = min((r for _, r in judged), key=lambda r: r.ci_low)
        return Judgement(
            FAILS,
            f"{rule.fast} faster than {rule.slow} everywhere measured; least at "
            f"{row.size_label} {row.dtype} {row.device}: {_ci(row)}",
        )
    return Judgement(
        COULD_NOT_JUDGE, "; ".join(j.evidence for j, _ in judged if j.verdict == COULD_NOT_JUDGE)
    )


def _peak_pairs(light_spec: str, heavy_spec: str, rows: pd.DataFrame, roles: dict, largest_only: bool):
    """(ratio heavy/light, evidence) for each light × heavy variant pair measured together, at the
    largest such size of each device × dtype, or at every size."""
    light, heavy = rules.expand(light_spec, roles), rules.expand(heavy_spec, roles)
    picked = rows[rows["variant"].isin(light + heavy) & rows["peak_bytes"].notna()]
    peaks = (
        picked.groupby(["device", "dtype", "size_label", "variant"], sort=False)
        .agg(peak=("peak_bytes", "max"), x=("x", "first"))
        .reset_index()
    )
    for (device, dtype), part in peaks.groupby(["device", "dtype"], sort=False):
        both = [
            s
            for s in part["size_label"].unique()
            if set(part[part.size_label == s].variant) & set(light)
            and set(part[part.size_label == s].variant) & set(heavy)
        ]
        if not both:
            continue
        part = part[part.size_label.isin(both)]
        sizes = list(dict.fromkeys(part.sort_values("x", kind="stable")["size_label"]))
        for size in sizes[-1:] if largest_only else sizes:
            at = part[part.size_label == size].set_index("variant")["peak"]
            for lv in light:
                for hv in heavy:
                    if lv in at and hv in at:
                        ratio = at[hv] / at[lv] if at[lv] > 0 else math.inf
                        yield (
                            ratio,
                            (
                                f"peak {hv} {at[hv] / 2**20:.4g} MiB vs {lv} {at[lv] / 2**20:.4g} MiB "
                                f"({ratio:.3g}×) at {size} {dtype} {device}"
                            ),
                        )


def memory_judgement(
    ratio: float, where: str, min_ratio: float = 1.0, band: float = gain.DELTA_FLOOR
) -> Judgement:
    """A peak-memory ratio (heavy ÷ light) by the same policy as a speed-up (`gain.classify_count`):
    lighter only beyond the ±`band` band (and beyond the rule's own `min_ratio`); inside it, no
    measurable difference. A peak is counted, not sampled, so the band is the catalogue's floor
    the run recorded, not a noise floor."""
    answer = gain.classify_count(ratio, band)
    if answer is gain.Gain.FASTER and ratio > min_ratio:
        return Judgement(HOLDS, f"{where}: lighter beyond the ±{band:.0%} band")
    if answer is gain.Gain.SLOWER:
        return Judgement(FAILS, f"{where}: heavier")
    return Judgement(FAILS, f"{where}: no measurable difference in peak memory")


def _recorded_floor(rows: pd.DataFrame) -> float:
    if "delta_floor" in rows and rows["delta_floor"].notna().any():
        return float(rows["delta_floor"].max())
    return gain.DELTA_FLOOR


def lighter(rule: rules.Lighter, summary, rows, roles) -> Judgement:
    band = _recorded_floor(rows)
    parts = [
        memory_judgement(ratio, where, rule.min_ratio, band)
        for ratio, where in _peak_pairs(rule.light, rule.heavy, rows, roles, largest_only=True)
    ]
    if not parts:
        return Judgement(NOT_MEASURED, f"no peak memory of {rule.light} and {rule.heavy} together")
    return combine(parts)


def not_lighter(rule: rules.NotLighter, summary, rows, roles) -> Judgement:
    pairs = list(_peak_pairs(rule.light, rule.heavy, rows, roles, largest_only=False))
    if not pairs:
        return Judgement(NOT_MEASURED, f"no peak memory of {rule.light} and {rule.heavy} together")
    not_lighter_at = [(ratio, where) for ratio, where in pairs if ratio <= 1]
    if not_lighter_at:
        return Judgement(HOLDS, f"{rule.light} not smaller: " + min(not_lighter_at)[1])
    return Judgement(
        FAILS, f"{rule.light} smaller than {rule.heavy} everywhere measured; least: " + min(pairs)[1]
    )


def from_findings(rule, outcomes: pd.DataFrame) -> Judgement:
    found = outcomes[
        (outcomes["kind"] == "check") & outcomes["verdict"].notna() & (outcomes["outcome"] == "passed")
    ]
    if found.empty:
        return Judgement(NOT_MEASURED, "no check reached a verdict")
    verdicts = set(found["verdict"])
    lines = [f"{r.name} ({r.device}): {r.verdict}: {r.evidence}" for r in found.itertuples()]
    for kind in (FAILS, COULD_NOT_JUDGE, DEPENDS, HOLDS):
        if kind in verdicts:
            return Judgement(kind, "; ".join(lines))
    return Judgement(NOT_MEASURED, "; ".join(lines))


def evaluate(rule, summary, rows, outcomes, roles) -> Judgement:
    if isinstance(rule, rules.Faster):
        return faster(rule, summary, rows, roles)
    if isinstance(rule, rules.NotFaster):
        return not_faster(rule, summary, rows, roles)
    if isinstance(rule, rules.Lighter):
        return lighter(rule, summary, rows, roles)
    if isinstance(rule, rules.FromFindings):
        return from_findings(rule, outcomes)
    if isinstance(rule, rules.NotLighter):
        return not_lighter(rule, summary, rows, roles)
    if isinstance(rule, rules.AllOf):
        return all_of([evaluate(r, summary, rows, outcomes, roles) for r in rule.rules])
    if isinstance(rule, rules.AnyOf):
        return any_of([evaluate(r, summary, rows, outcomes, roles) for r in rule.rules])
    return Judgement(NOT_MEASURED, f"unknown rule {type(rule).__name__}")


def default_rule(case, rows: pd.DataFrame):
    """The rule the run recorded for the case; for a file that recorded none (schema 1), Faster()
    where variants were timed, else the findings."""
    if case is not None and case.verdict is not None:
        return case.verdict
    return rules.Faster() if not rows.empty else rules.FromFindings()


def skip_reasons(outcomes: pd.DataFrame) -> str:
    reasons = outcomes.loc[outcomes["outcome"] == "skipped", "reason"].dropna()
    reasons = [r for r in dict.fromkeys(reasons) if r]
    return "; ".join(reasons[:3]) + ("; …" if len(reasons) > 3 else "")


def judge(
    case, rows: pd.DataFrame, summary: pd.DataFrame, outcomes: pd.DataFrame, findings_count: bool = True
) -> Judgement:
    """The verdict for one case on one machine (all frames already filtered to both), with the
    failed tests and the notes' errata beside it. `findings_count`: every check's finding is a
    part of the claim beside the rule (results of schema 3 and later, whose findings keep the
    notes' errata apart); False for older files, judged by their rule alone as they were then
    (their findings mixed errata into the verdict)."""
    failed = outcomes[outcomes["outcome"] == "failed"]
    errors = tuple(_red(r) for r in failed.itertuples())
    errata = errata_of(outcomes)
    if findings_count and getattr(case, "claims", ()):
        return by_claims(case, rows, summary, outcomes, errors, errata)
    if rows.empty and not (outcomes["outcome"] == "passed").any():
        why = "every test failed" if errors and not (outcomes["outcome"] == "skipped").any() else ""
        return Judgement(
            NOT_MEASURED, skip_reasons(outcomes) or why or "no results on this machine", errors, errata
        )
    roles = dict(zip(rows["variant"], rows["role"]))
    rule = default_rule(case, rows)
    judgement = evaluate(rule, summary, rows, outcomes, roles)
    if findings_count and not _reads_findings(rule):
        # One policy for every ID: each check's finding on the technique counts beside the
        # timed claim, as a part of the claim (any part fails: fails), whatever the rule.
        found = from_findings(rules.FromFindings(), outcomes)
        if found.verdict != NOT_MEASURED:
            judgement = all_of([judgement, found]) if judgement.verdict != NOT_MEASURED else found
    if judgement.verdict == NOT_MEASURED and not judgement.evidence:
        return Judgement(NOT_MEASURED, skip_reasons(outcomes) or "no results on this machine", errors, errata)
    if errors and judgement.verdict == HOLDS:
        # Nothing red reads holds, in files judged per case too.
        return Judgement(
            COULD_NOT_JUDGE, f"{len(errors)} red tests: {errors[0]}; " + judgement.evidence, errors, errata
        )
    return Judgement(judgement.verdict, judgement.evidence, errors, errata)


def _red(r) -> str:
    """One line naming a failed test and its message."""
    return (
        " ".join(f"{r.name or r.kind} {r.size_label} {r.dtype} {r.device}".split())
        + f" failed: {r.reason[:300]}"
    )


# ---- claims as the unit ---------------------------------------------------------------------------


def verdict_of_parts(parts: list[Judgement]) -> str:
    """A claim from the parts that decide it: fails if any fails (observed false somewhere), could
    not judge if any test that should decide it broke, otherwise as `combine` (all measured hold:
    holds; nothing measured: not measured; a mix: depends)."""
    kinds = {p.verdict for p in parts}
    if FAILS in kinds:
        return FAILS
    if COULD_NOT_JUDGE in kinds:
        return COULD_NOT_JUDGE
    return combine(parts).verdict


def _check_parts(name: str, outcomes: pd.DataFrame) -> list[Judgement]:
    """A rule check's outcomes on each device: its finding, or why it decided nothing."""
    parts = []
    for r in outcomes[(outcomes["kind"] == "check") & (outcomes["name"] == name)].itertuples():
        if r.outcome == "failed":
            parts.append(Judgement(COULD_NOT_JUDGE, f"check {name} ({r.device}) went red: {r.reason[:300]}"))
        elif r.outcome == "skipped":
            parts.append(Judgement(NOT_MEASURED, f"check {name} ({r.device}) skipped: {r.reason}"))
        elif isinstance(r.verdict, str) and r.verdict:
            parts.append(Judgement(r.verdict, f"{name} ({r.device}): {r.evidence}"))
        else:
            parts.append(Judgement(NOT_MEASURED, f"check {name} ({r.device}) reported without a verdict"))
    return parts


def _variant_part(spec: str, outcomes: pd.DataFrame) -> list[Judgement]:
    """A variant's checks against its float64 truth, over every point it ran: outside its tolerance
    anywhere fails the claim; a crash leaves it undecided; within at every point holds."""
    part, _, name = spec.rpartition("/")
    mine = outcomes[(outcomes["kind"] == "variant") & (outcomes["name"] == name) & (outcomes["part"] == part)]
    if mine.empty:
        return []
    wrong = mine[(mine["outcome"] == "failed") & (mine["error_type"] == WRONG_ANSWER)]
    broke = mine[(mine["outcome"] == "failed") & (mine["error_type"] != WRONG_ANSWER)]
    ran = mine[mine["outcome"] == "passed"]
    if not wrong.empty:
        r = wrong.iloc[0]
        return [
            Judgement(
                FAILS,
                f"{spec} is wrong at {len(wrong)} points, e.g. {_at(r)}: {r['reason'][:300]}",
            )
        ]
    if not broke.empty:
        r = broke.iloc[0]
        return [
            Judgement(
                COULD_NOT_JUDGE,
                f"{spec} at {_at(r)} went red ({r['error_type']}): {r['reason'][:300]}",
            )
        ]
    if ran.empty:
        return [Judgement(NOT_MEASURED, f"{spec}: " + (skip_reasons(mine) or "not run"))]
    points = ran.drop_duplicates(["size_label", "dtype", "device"])
    where = ", ".join(dict.fromkeys(f"{d} {dev}" for d, dev in zip(points["dtype"], points["device"])))
    return [
        Judgement(
            HOLDS, f"{spec} equals its float64 truth within its bound at {len(points)} points ({where})"
        )
    ]


def _at(r) -> str:
    return " ".join(f"{r['size_label']} {r['dtype']} {r['device']}".split())


def _covers(node, pair_name: str, roles: dict) -> bool:
    fast, _, slow = pair_name.partition("/")
    return any(
        fast in rules.expand(r.fast, roles) and slow in rules.expand(r.slow, roles)
        for r in rules.speed_rules(node)
    )


def _describe(node) -> str:
    if isinstance(node, (rules.AllOf, rules.AnyOf)):
        inner = " and " if isinstance(node, rules.AllOf) else " or "
        return "(" + inner.join(_describe(r) for r in node.rules) + ")"
    if isinstance(node, (rules.Faster, rules.NotFaster)):
        word = "faster than" if isinstance(node, rules.Faster) else "not necessarily faster than"
        return f"{node.fast} {word} {node.slow}"
    if isinstance(node, (rules.Lighter, rules.NotLighter)):
        word = "lighter than" if isinstance(node, rules.Lighter) else "not necessarily lighter than"
        return f"{node.light} {word} {node.heavy}"
    return type(node).__name__


def by_claims(case, rows, summary, outcomes, errors, errata) -> Judgement:
    """The technique from its claims (CATALOG.md, "Claims are the unit"; "Nothing red reads holds")."""
    outcomes = outcomes.assign(part=outcomes["part"].fillna("") if "part" in outcomes else "")
    roles = dict(zip(rows["variant"], rows["role"]))
    rule = default_rule(case, rows)
    nodes: dict[str, list] = {}
    for node in rules.claimed(rule):
        nodes.setdefault(node.claim, []).append(node)
    pairs = outcomes[outcomes["kind"] == "pair"]
    judged, claimed_tests = [], set()
    for claim in case.claims:
        parts, by = [], []
        for name in claim.checks:
            parts += _check_parts(name, outcomes)
            claimed_tests.add(("check", "", name))
            by.append(f"check {name}")
        for spec in claim.variants:
            parts += _variant_part(spec, outcomes)
            part, _, name = spec.rpartition("/")
            claimed_tests.add(("variant", part, name))
            by.append(f"variant {spec}")
        for node in nodes.get(claim.id, ()):
            by.append(_describe(node))
            covered = pd.Series(
                [_covers(node, n, roles) for n in pairs["name"]], index=pairs.index, dtype=bool
            )
            red_pairs = pairs[(pairs["outcome"] == "failed") & covered]
            for r in red_pairs.itertuples():
                claimed_tests.add(("pair", r.part, r.name))
                parts.append(
                    Judgement(
                        COULD_NOT_JUDGE, f"pair {r.name} {r.size_label} {r.device} went red: {r.reason[:300]}"
                    )
                )
            parts.append(evaluate(node, summary, rows, outcomes, roles))
        verdict = verdict_of_parts(parts)
        shown = [p for p in parts if p.verdict == verdict] if verdict in (FAILS, COULD_NOT_JUDGE) else parts
        evidence = "; ".join(dict.fromkeys(p.evidence for p in shown if p.evidence))
        stand_in = getattr(claim, "stand_in", "")
        if stand_in and verdict == HOLDS:
            # Judged on something other than the notes' own object: it held there, which says the
            # technique can work, not that the notes' version does (CATALOG.md: "Quotes are the
            # notes' words").
            verdict, evidence = (
                DEPENDS,
                f"holds on a stand-in ({stand_in}), not on the notes' own: " + evidence,
            )
        if not parts:
            evidence = (
                f"not run on this machine ({'; '.join(by)}: no point here, e.g. one that needs a GPU)"
                if by
                else "no check, variant or timed pair of the suite decides it"
            )
        judged.append(ClaimJudgement(claim, verdict, "; ".join(by), evidence))
    return technique_of(judged, outcomes, claimed_tests, errors, errata)


def technique_of(judged: list[ClaimJudgement], outcomes, claimed_tests: set, errors, errata) -> Judgement:
    """The technique verdict from its claims: fails if any claim fails; could not judge if a claim
    could not be judged or a red test decided no claim (a context variant, a control); not
    measured when no claim was; holds only when every measured claim holds; else depends."""
    failed = outcomes[outcomes["outcome"] == "failed"]
    unclaimed = [
        _red(r)
        for r in failed.itertuples()
        if (r.kind, r.part if r.kind != "check" else "", r.name) not in claimed_tests
    ]
    n = len(judged)
    measured = [c for c in judged if c.verdict != NOT_MEASURED]
    counted = f"{len(measured)} of {n} claims measured"
    verdicts = {c.verdict for c in judged}
    if FAILS in verdicts:
        verdict = FAILS
    elif COULD_NOT_JUDGE in verdicts or unclaimed:
        verdict = COULD_NOT_JUDGE
    elif not measured:
        verdict = NOT_MEASURED
    elif verdicts - {NOT_MEASURED} == {HOLDS}:
        verdict = HOLDS
    else:
        verdict = DEPENDS
    # The claims that make the verdict what it is come first; the ones that hold are named only.
    order = [FAILS, COULD_NOT_JUDGE, DEPENDS, NOT_MEASURED]
    lines = [f"{verdict} — {counted}"]
    for kind in order:
        lines += [f"{c.claim.id}: {kind}, {c.evidence}" for c in judged if c.verdict == kind]
    held = [c.claim.id for c in judged if c.verdict == HOLDS]
    if held:
        lines.append("holds: " + ", ".join(held))
    if unclaimed:
        lines.append(f"red tests that decide no claim: {len(unclaimed)}, e.g. {unclaimed[0]}")
    return Judgement(verdict, "; ".join(lines), errors, errata, tuple(judged))


def _reads_findings(rule) -> bool:
    if isinstance(rule, rules.FromFindings):
        return True
    return isinstance(rule, (rules.AllOf, rules.AnyOf)) and any(_reads_findings(r) for r in rule.rules)


def errata_of(outcomes: pd.DataFrame) -> tuple:
    """The notes' errata the case's passed checks found, each once (by the note file and line it
    is on; by kind and quote in files that did not locate it), in the order found: the second
    verdict, which never decides the first."""
    if "errata" not in outcomes:
        return ()
    found = {}
    for errata in outcomes.loc[outcomes["outcome"] == "passed", "errata"]:
        for erratum in errata or ():
            found.setdefault(erratum.key, erratum)
    return tuple(found.values())


CLOSE_ENOUGH = 1.10  # compiled within 10% of the optimized way's time: the gap is closed
PART = 0.10  # less than a tenth of the speedup (in log terms): it does not close the gap


def not_compiled(case, summary: pd.DataFrame) -> list[str]:
    """The naive ways a case timed that were not compiled, each with the reason its declaration
    recorded (file I/O, processes talking to each other)."""
    reasons = dict(getattr(case, "uncompilable", None) or {})
    timed = set(summary["slow"]) if not summary.empty else set()
    return [f"not compiled: {name}: {reason}" for name, reason in reasons.items() if name in timed]


def compile_findings(summary: pd.DataFrame) -> list[str]:
    """Per compiled variant, at the largest size of each device × dtype: does torch.compile of the
    naive way close the gap to the optimized way? Closed when the compiled naive way is within
    10% of the optimized time; otherwise the share of the speedup it reaches, in log terms,
    log(t_naive / t_compiled) / log(t_naive / t_optimized): on a 300× gap a 77× compiled speedup
    is 76% of the way, where a share of time saved (99%) would hide the 4× still left."""
    compiled = summary[summary["against"] == "compiled"]
    rule = summary[summary["against"].isin(["rule", "context", "library"])]
    lines = []
    for row in _largest(compiled[compiled["fast"].str.startswith("compiled")]).itertuples():
        opt = rule[
            (rule["slow"] == row.slow)
            & (rule["size_label"] == row.size_label)
            & (rule["dtype"] == row.dtype)
            & (rule["device"] == row.device)
        ]
        where = f"{row.fast} vs {row.slow} at {row.size_label} {row.dtype} {row.device}: {_ci(row)}"
        if opt.empty:
            lines.append(f"{where}; no optimized variant timed beside it")
            continue
        best = opt.sort_values("speedup").iloc[-1]
        t_naive, t_opt, t_comp = row.slow_median_s, best["fast_median_s"], row.fast_median_s
        faster = t_comp / t_opt
        versus = f"{best['fast']} {best['speedup']:.3g}× over {row.slow}, {faster:.3g}× faster than compiled"
        if not t_opt < t_naive:
            lines.append(f"no gap to close ({best['fast']} {best['speedup']:.3g}× over {row.slow}); {where}")
            continue
        if t_comp <= CLOSE_ENOUGH * t_opt:
            verdict = "torch.compile closes the gap"
        else:
            share = math.log(t_naive / t_comp) / math.log(t_naive / t_opt)
            verdict = (
                f"torch.compile closes part of it ({share:.0%})"
                if share >= PART
                else f"torch.compile does not close it ({max(share, 0.0):.0%})"
            )
        lines.append(f"{verdict}: {where}; {versus}")
    return lines


# ---- the judging stage: every machine × catalogue ID, and verdicts.csv ----------------------------


def catalogue_of(results) -> list[record.CaseInfo]:
    """Every catalogue ID the runs recorded, in catalogue order; files written before the results
    recorded their cases (schema 1) fall back on the catalogue shipped beside the reports."""
    recorded = results.cases_of()
    if recorded:
        return sorted(recorded.values(), key=lambda c: (c.tier or 9, c.id))
    return [
        record.CaseInfo(id=e.id, tier=e.tier, technique=e.technique, source=e.source)
        for e in catalogue.load()
    ]


VERDICT_COLUMNS = [
    "machine",
    "case",
    "tier",
    "technique_verdict",
    "technique_evidence",
    "notes_verdict",
    "errata_count",
    "errata",
    "failed_tests",
    "claims",
    "claims_measured",
    "claims_holding",
    "claims_failing",
    "claims_could_not_judge",
]

CLAIM_COLUMNS = [
    "machine",
    "case",
    "claim",
    "kind",
    "file",
    "quote",
    "reading",
    "verdict",
    "decided_by",
    "evidence",
]


def _warm(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["timing_mode"] == "warm"] if "timing_mode" in frame else frame


def judge_all(results, table: pd.DataFrame, entries) -> dict[tuple[str, str], Judgement]:
    """The judging stage: one `Judgement` per machine × catalogue ID that machine's runs mention,
    from the rule each run recorded (not today's code), the summary and the outcomes."""
    rows, outcomes, runs = results.rows, results.outcomes, results.runs
    # A verdict reads the warm timings, as the pairs that decide it are timed; the cold-L2 and
    # graph rows of `--timing-mode all` are figures beside it, not more samples of it.
    rows, table = _warm(rows), _warm(table)
    known = {c.id: c for c in entries if c.declared}
    ids = [e.id for e in entries]
    seen = list(dict.fromkeys(list(rows["case"]) + list(outcomes["case"])))
    rows_by = {k: g for k, g in rows.groupby(["machine", "case"], sort=False)}
    sum_by = {k: g for k, g in table.groupby(["machine", "case"], sort=False)}
    out_by = {k: g for k, g in outcomes.groupby(["machine", "case"], sort=False)}
    empty_rows, empty_sum, empty_out = rows.iloc[:0], table.iloc[:0], outcomes.iloc[:0]
    # A machine's runs written before errata had their own place (schema < 3) are judged as then.
    modern = runs.groupby("machine")["schema_version"].min().ge(3).to_dict() if not runs.empty else {}
    judged = {}
    for machine in dict.fromkeys(runs["machine"]):
        for case_id in ids + [c for c in seen if c not in ids]:
            key = (machine, case_id)
            if key not in rows_by and key not in out_by:
                continue
            as_measured = results.cases_of(machine).get(case_id, known.get(case_id))
            judgement = judge(
                as_measured,
                rows_by.get(key, empty_rows),
                sum_by.get(key, empty_sum),
                out_by.get(key, empty_out),
                findings_count=modern.get(machine, True),
            )
            if case_id not in ids:
                judgement = Judgement(
                    judgement.verdict,
                    "unknown case: " + judgement.evidence,
                    judgement.errors,
                    judgement.errata,
                )
            judged[key] = judgement
    return judged


def absent_reason(info, measured: tuple) -> str:
    """Why a machine has no result for an ID: the devices it runs on, where none was measured."""
    if info is not None and not info.declared:
        return "no case yet"
    devices = tuple(getattr(info, "devices", ()) or ())
    if devices and measured and not set(devices) & set(measured):
        return f"runs only on {', '.join(devices)}; this machine measured {', '.join(measured)}"
    return "not in these results"


def devices_measured(results) -> dict:
    """machine → the device types (cpu, cuda) its rows and its run (not skipped) outcomes name."""
    seen: dict = {}
    outcomes = results.outcomes
    if not outcomes.empty and "outcome" in outcomes:
        outcomes = outcomes[outcomes["outcome"] != "skipped"]
    for frame in (results.rows, outcomes):
        if frame.empty or "device" not in frame:
            continue
        for machine, device in zip(frame["machine"], frame["device"]):
            kind = str(device).split(":")[0]
            if kind and kind != "nan":
                seen.setdefault(machine, {})[kind] = None
    return {m: tuple(d) for m, d in seen.items()}


def verdicts_table(judged: dict, entries, measured: dict | None = None) -> pd.DataFrame:
    """verdicts.csv: one row per machine × ID, the technique's verdict beside the notes' (an ID a
    machine did not measure is listed as `not measured` with why, so every machine lists every
    ID). ``measured``: machine → the device types its runs measured."""
    tiers = {e.id: e.tier for e in entries}
    infos = {e.id: e for e in entries}
    measured = measured or {}
    machines = list(dict.fromkeys(m for m, _ in judged))
    out = []
    for machine in machines:
        for case_id in list(tiers) + [c for m, c in judged if m == machine and c not in tiers]:
            j = judged.get((machine, case_id)) or Judgement(
                NOT_MEASURED, absent_reason(infos.get(case_id), measured.get(machine, ()))
            )
            out.append(
                {
                    "machine": machine,
                    "case": case_id,
                    "tier": tiers.get(case_id),
                    "technique_verdict": j.verdict,
                    "technique_evidence": j.evidence,
                    "notes_verdict": j.notes_verdict,
                    "errata_count": len(j.errata),
                    "errata": " | ".join(
                        f"{e.kind.value}{' at ' + e.where if e.where else ''}: {e.quote} — {e.evidence}"
                        for e in j.errata
                    ),
                    "failed_tests": len(j.errors),
                    # Blank for results judged per case (files written before claims were the unit).
                    "claims": len(j.claims) if j.claims else None,
                    "claims_measured": j.claims_measured if j.claims else None,
                    "claims_holding": j.claims_with(HOLDS) if j.claims else None,
                    "claims_failing": j.claims_with(FAILS) if j.claims else None,
                    "claims_could_not_judge": j.claims_with(COULD_NOT_JUDGE) if j.claims else None,
                }
            )
    table = pd.DataFrame(out, columns=VERDICT_COLUMNS)
    for column in VERDICT_COLUMNS[-5:]:
        table[column] = table[column].astype("Int64")
    return table


def claims_table(judged: dict) -> pd.DataFrame:
    """claims.csv: one row per machine × ID × claim, its verdict, what decided it, the evidence."""
    out = [
        {
            "machine": machine,
            "case": case_id,
            "claim": c.claim.id,
            "kind": c.claim.kind.value,
            "file": c.claim.file,
            "quote": c.claim.quote,
            "reading": c.claim.reading,
            "verdict": c.verdict,
            "decided_by": c.decided_by,
            "evidence": c.evidence,
        }
        for (machine, case_id), j in judged.items()
        for c in j.claims
    ]
    return pd.DataFrame(out, columns=CLAIM_COLUMNS)
