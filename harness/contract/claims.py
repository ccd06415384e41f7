"""The claim vocabulary of the results contract: what the notes claim (`Claim`, of a `ClaimKind`),
what a check observed of it (`Finding`: a `Verdict` on the technique, and apart from it the
notes' slips of the pen, each an `Erratum` of an `ErratumKind`). The records of a results file
carry them (`harness.contract.record`); the cases declare with them (`cases.spec`); the reports
judge in their words.

`RecordError` is here because the vocabulary is the bottom of the contract: every reader of a
results document raises it, these first.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Mapping


class RecordError(ValueError):
    """A results document that does not fit the schema; the message is one line."""


class Verdict(str, enum.Enum):
    """What the evidence says about the technique the notes teach (not about their wording: that
    is `Erratum`'s job)."""

    HOLDS = "holds"
    FAILS = "fails"
    DEPENDS = "depends"  # on hardware, torch version or size: the evidence says which
    NOT_MEASURED = "not measured"
    # Neither held nor failed: a test that should have decided a claim went red where the suite
    # itself broke (a crash, a precondition of the check: the test is named), or the machine was
    # too busy or too noisy to tell (a check's timed finding says "machine busy" and the load).
    # Noise is never a condition, so never `depends`.
    COULD_NOT_JUDGE = "could not judge"


class ClaimKind(str, enum.Enum):
    """What kind of statement a claim of the notes is (CATALOG.md: "Claims are the unit")."""

    CORRECTNESS = "correctness"  # computes the same as an independent truth
    BEHAVIOUR = "behaviour"  # an API does what the notes say (raises, shares storage, a default)
    SPEED = "speed"  # one way is faster than another
    MEMORY = "memory"  # one way peaks at less memory
    HEDGE = "hedge"  # "not necessarily faster or smaller": one observation settles it


@dataclass(frozen=True)
class Claim:
    """One claim the notes make for a catalogue ID: a short ID (unique within the case), the
    notes' words (`quote`: one or more exact fragments of the note file, joined by " … ", nothing
    inserted), the note file it is in, its kind, and how the suite reads it (`reading`: the
    statement the checks decide, in the suite's words, kept apart from the quote). ``checks`` and
    ``variants`` are what decides it: the rule checks that name it, and the variants (``part/name``
    for a part's) whose check against the truth does; the verdict rule's nodes that name it decide
    it too. They are filled from the declaration (harness.contract.declared) so that a results file
    judges its claims by what the run declared, not by today's code."""

    id: str
    quote: str
    file: str
    kind: ClaimKind
    checks: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    reading: str = ""
    # What the checks judge in place of the notes' own object (another module, launcher or input
    # range), named; a claim judged on a stand-in never reads `holds` (CATALOG.md: it reads
    # `depends`, naming it). "" where the checks judge the notes' own code and words.
    stand_in: str = ""

    def __post_init__(self):
        if not self.id or not self.id.replace("_", "").isalnum():
            raise ValueError(f"claim id {self.id!r}: letters, digits and '_' only")
        if not self.quote.strip():
            raise ValueError(f"claim {self.id!r} has no quote of the notes")
        if not isinstance(self.kind, ClaimKind):
            object.__setattr__(self, "kind", ClaimKind(self.kind))

    def to_data(self) -> dict:
        return {
            "id": self.id,
            "quote": self.quote,
            "file": self.file,
            "kind": self.kind.value,
            "checks": list(self.checks),
            "variants": list(self.variants),
            "reading": self.reading,
            **({"stand_in": self.stand_in} if self.stand_in else {}),
        }

    @classmethod
    def from_data(cls, data: Mapping) -> Claim:
        if not isinstance(data, Mapping):
            raise RecordError(f"a claim is not an object: {data!r:.80}")
        try:
            return cls(
                id=str(data.get("id", "")),
                quote=str(data.get("quote", "")),
                file=str(data.get("file", "")),
                kind=ClaimKind(data.get("kind")),
                checks=tuple(str(c) for c in data.get("checks") or ()),
                variants=tuple(str(v) for v in data.get("variants") or ()),
                reading=str(data.get("reading") or ""),
                stand_in=str(data.get("stand_in") or ""),
            )
        except ValueError as e:
            raise RecordError(f"claim {data.get('id')!r}: {e}") from None


class ErratumKind(str, enum.Enum):
    """The kinds of slip of the pen in the notes as written (CATALOG.md, "How a technique is
    judged"). One kind is treated the same way in every ID: an erratum is listed, never held
    against the technique. A false statement, a wrong default or a formula that gives a wrong
    result is not a slip: it is a claim of the notes, judged as written, that fails.

    The last three kinds are read from files written before that rule (`LEGACY_KINDS`); no case
    produces them now (tests/unit/properties/test_notes_as_written.py)."""

    TYPO = "typo"  # a misspelled name, a syntax slip, a name used before the notes define it
    REMOVED_API = "removed API"
    DEPRECATED_API = "deprecated API"
    SHAPE_SLIP = "shape slip"  # code whose formula the notes state correctly, with a shape slip
    RAISES = "raises as written"  # a snippet that compiles but raises when run as pasted
    WRONG_DEFAULT = "wrong default"
    WRONG_SHAPE_OR_FORMULA = "wrong shape or formula"
    WRONG_STATEMENT = "wrong statement"


LEGACY_KINDS = frozenset(
    {ErratumKind.WRONG_DEFAULT, ErratumKind.WRONG_SHAPE_OR_FORMULA, ErratumKind.WRONG_STATEMENT}
)
"""Erratum kinds of older files: what they named is a claim that fails now, never an erratum."""


@dataclass(frozen=True)
class Erratum:
    """One slip of the pen in the notes as written: its kind, what the notes say (`quote`: the
    notes' exact words at fault) and what was observed instead (`evidence`). ``file`` and ``line``
    say where (the note file's prefix, "003", and the 1-based line the quote starts on): one fault
    is one erratum, keyed by them, however many checks see it. A case may name the file; the line
    is found from the quote (`notes.text.keyed`); 0 where the quote is not the notes'."""

    kind: ErratumKind
    quote: str
    evidence: str
    file: str = ""
    line: int = 0

    @property
    def key(self) -> tuple:
        """Where the fault is: (file, line) once located, else its kind and words."""
        return (self.file, self.line) if self.line else (self.kind, self.quote)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else ""

    def to_data(self) -> dict:
        data = {"kind": self.kind.value, "quote": self.quote, "evidence": self.evidence}
        if self.file:
            data["file"] = self.file
        if self.line:
            data["line"] = self.line
        return data

    @classmethod
    def from_data(cls, data: Mapping) -> Erratum:
        if not isinstance(data, Mapping):
            raise RecordError(f"an erratum is not an object: {data!r:.80}")
        kind = data.get("kind")
        try:
            line = data.get("line") or 0
            if isinstance(line, bool) or not isinstance(line, int) or line < 0:
                raise RecordError(f"erratum line {line!r:.30} is not a line number")
            return cls(
                ErratumKind(kind),
                str(data.get("quote", "")),
                str(data.get("evidence", "")),
                str(data.get("file") or ""),
                line,
            )
        except ValueError as e:
            if isinstance(e, RecordError):
                raise
            raise RecordError(
                f"erratum kind {kind!r} is not one of {[k.value for k in ErratumKind]}"
            ) from None


@dataclass(frozen=True)
class Finding:
    """What a check observed: the verdict on the technique it decides (None when the check bears
    on the technique not at all, e.g. it only reads the notes' spelling, or only reports a
    measurement) and, apart from it, the errors of the notes as written that it found. An
    erratum never decides the verdict: a removed API in a snippet is listed, and the technique
    is judged on what the notes teach, done right."""

    verdict: Verdict | None
    evidence: str
    errata: tuple[Erratum, ...] = ()

    def __post_init__(self):
        if self.verdict is None and not self.evidence and not self.errata:
            raise ValueError("a finding needs a verdict, evidence or errata")

    def to_data(self) -> dict:
        data = {
            "verdict": self.verdict.value if self.verdict is not None else None,
            "evidence": self.evidence,
        }
        if self.errata:
            data["errata"] = [e.to_data() for e in self.errata]
        return data

    @classmethod
    def from_data(cls, data: Mapping) -> Finding:
        if not isinstance(data, Mapping):
            raise RecordError(f"a finding is not an object: {data!r:.80}")
        verdict = data.get("verdict")
        errata = data.get("errata") or []
        if not isinstance(errata, list):
            raise RecordError("a finding's errata is not a list")
        try:
            verdict = Verdict(verdict) if verdict is not None else None
        except ValueError:
            raise RecordError(
                f"finding verdict {verdict!r} is not one of {[v.value for v in Verdict]}"
            ) from None
        return cls(verdict, str(data.get("evidence", "")), tuple(Erratum.from_data(e) for e in errata))
