"""A verdict with its evidence (`Judgement`, and a claim's, `ClaimJudgement`), and how the
verdicts of parts make the verdict of a whole: across points (`combine`), a claim of several
parts (`all_of`), a hedge (`any_of`), a claim from the parts that decide it (`verdict_of_parts`)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.contract.claims import Claim, Verdict

HOLDS, FAILS, DEPENDS, NOT_MEASURED, COULD_NOT_JUDGE = (
    Verdict.HOLDS.value,
    Verdict.FAILS.value,
    Verdict.DEPENDS.value,
    Verdict.NOT_MEASURED.value,
    Verdict.COULD_NOT_JUDGE.value,
)


@dataclass(frozen=True)
class ClaimJudgement:
    """One of the notes' claims on one machine: its verdict, what decided it and the evidence."""

    claim: Claim
    verdict: str
    decided_by: str
    evidence: str


@dataclass(frozen=True)
class Judgement:
    verdict: str
    evidence: str
    errors: tuple[str, ...] = ()  # the failed suite tests, one line each with the message
    errata: tuple = ()  # harness.contract.claims.Erratum: the notes as written, apart from the verdict
    claims: tuple[ClaimJudgement, ...] = ()  # empty for an ID no run declared

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
