"""The claim vocabulary of the results contract: what the notes claim (`Claim`, of a `ClaimKind`),
what a check observed of it (`Finding`: a `Verdict` on the technique, and apart from it the
notes' slips of the pen, each an `Erratum` of an `ErratumKind`). The records of a results file
carry them (`harness.contract.record`); the cases declare with them (`cases.spec`); the reports
judge in their words.

Each record travels as JSON through `harness.contract.codec`: its fields say how.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from harness.contract import codec, values
from harness.contract.codec import RecordError  # noqa: F401  (the contract's readers raise it)


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

    id: str = codec.field(read=values.text, missing="")
    quote: str = codec.field(read=values.text, missing="")
    file: str = codec.field(read=values.text, missing="")
    kind: ClaimKind = codec.field(read=values.member_of(ClaimKind))
    checks: tuple[str, ...] = codec.field(read=values.texts, default=())
    variants: tuple[str, ...] = codec.field(read=values.texts, default=())
    reading: str = codec.field(read=values.text_or_empty, default="")
    # What the checks judge in place of the notes' own object (another module, launcher or input
    # range), named; a claim judged on a stand-in never reads `holds` (CATALOG.md: it reads
    # `depends`, naming it). "" where the checks judge the notes' own code and words.
    stand_in: str = codec.field(read=values.text_or_empty, omit=True, default="")

    def __post_init__(self):
        if not self.id or not self.id.replace("_", "").isalnum():
            raise ValueError(f"claim id {self.id!r}: letters, digits and '_' only")
        if not self.quote.strip():
            raise ValueError(f"claim {self.id!r} has no quote of the notes")
        if not isinstance(self.kind, ClaimKind):
            object.__setattr__(self, "kind", ClaimKind(self.kind))

    def to_data(self) -> dict:
        return codec.encode(self)

    @classmethod
    def from_data(cls, data, where: str = "claim") -> Claim:
        return codec.decode(cls, data, where)


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

    kind: ErratumKind = codec.field(read=values.member_of(ErratumKind))
    quote: str = codec.field(read=values.text, missing="")
    evidence: str = codec.field(read=values.text, missing="")
    file: str = codec.field(read=values.text_or_empty, omit=True, default="")
    line: int = codec.field(read=values.line, omit=True, default=0)

    @property
    def key(self) -> tuple:
        """Where the fault is: (file, line) once located, else its kind and words."""
        return (self.file, self.line) if self.line else (self.kind, self.quote)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else ""

    def to_data(self) -> dict:
        return codec.encode(self)

    @classmethod
    def from_data(cls, data, where: str = "erratum") -> Erratum:
        return codec.decode(cls, data, where)


@dataclass(frozen=True)
class Finding:
    """What a check observed: the verdict on the technique it decides (None when the check bears
    on the technique not at all, e.g. it only reads the notes' spelling, or only reports a
    measurement) and, apart from it, the errors of the notes as written that it found. An
    erratum never decides the verdict: a removed API in a snippet is listed, and the technique
    is judged on what the notes teach, done right."""

    verdict: Verdict | None = codec.field(read=values.member_of(Verdict, null=True), missing=None)
    evidence: str = codec.field(read=values.text, missing="")
    errata: tuple[Erratum, ...] = codec.field(records=Erratum, omit=True, default=())

    def __post_init__(self):
        if self.verdict is None and not self.evidence and not self.errata:
            raise ValueError("a finding needs a verdict, evidence or errata")

    def to_data(self) -> dict:
        return codec.encode(self)

    @classmethod
    def from_data(cls, data, where: str = "finding") -> Finding:
        return codec.decode(cls, data, where)
