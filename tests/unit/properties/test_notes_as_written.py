"""The notes as written (CATALOG.md, "How a technique is judged"): a claim's quote is the notes'
exact words, and what the suite reads it as lives apart from it; an erratum is a slip of the pen,
never a false statement (that is a claim that fails), and it is keyed by the note file and line.

The errata the checks find at run time are tested in tests/integration/test_errata_one_per_line.py
(it runs every CPU check once)."""

from __future__ import annotations

import re

import pytest

import cases
from harness.contract.record import LEGACY_KINDS, Claim, ClaimKind, Erratum, ErratumKind
from notes import text as notes_text
from tests import paths

CASES = {c.id: c for c in cases.all_cases()}


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_every_claim_quote_is_the_notes_words(case_id):
    wrong = {
        claim.id: notes_text.not_verbatim(claim.quote, claim.file)
        for claim in CASES[case_id].claims
        if notes_text.not_verbatim(claim.quote, claim.file)
    }
    assert not wrong, f"{case_id}: fragments not in their note file (an inserted or changed word): {wrong}"


def test_a_changed_word_or_an_inserted_bracket_is_not_verbatim():
    quote = "`torch.nn.Module`的默认模式为**train**"
    assert notes_text.not_verbatim(quote, "003") == []
    assert notes_text.not_verbatim(quote.replace("train", "eval"), "003") != []
    assert notes_text.not_verbatim(quote + " [modules start in train mode]", "003") != []
    # Two fragments joined by " … ": each must be there, in the same file.
    assert notes_text.not_verbatim(quote + " … `torch.version.cuda` 变量存储了 cuda 的版本号", "003") == []
    assert notes_text.not_verbatim(quote + " … no such words", "003") == ["no such words"]


def test_a_line_break_and_a_markdown_escape_read_as_rendered():
    raw = notes_text.note_path("003").read_text(encoding="utf-8")
    assert "\\(" in raw  # the notes escape brackets: "doc的python api部分用于查接口\(部分内容..."
    assert notes_text.line_of("doc的python api部分用于查接口(部分内容可以作为代码框架的参考)", "003") == 7


def test_an_erratum_is_keyed_by_its_line():
    finding = cases.spec.Finding(
        None, "e", (Erratum(ErratumKind.DEPRECATED_API, "torch.cuda.reset_max_memory_allocated()", "x"),)
    )
    (keyed,) = notes_text.keyed(finding).errata
    assert (keyed.file, keyed.line) == ("003", 21)
    assert keyed.key == ("003", 21)
    unlocated = Erratum(ErratumKind.TYPO, "words the notes never wrote", "x")
    assert notes_text.keyed(cases.spec.Finding(None, "e", (unlocated,))).errata[0].line == 0


def test_no_case_makes_an_erratum_of_a_false_statement():
    """A wrong statement, default or formula is a claim that fails, not an erratum."""
    legacy = "|".join(k.name for k in LEGACY_KINDS)
    found = [
        f"{path.relative_to(paths.ROOT)}:{n}"
        for path in sorted((paths.ROOT / "cases").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(rf"ErratumKind\.({legacy})\b", line)
    ]
    assert not found, f"errata of the kinds that are claims now: {found}"


def test_a_claim_keeps_its_reading_apart():
    claim = Claim("x", "`torch.nn.Module`的默认模式为**train**", "003", ClaimKind.BEHAVIOUR, reading="r")
    assert Claim.from_data(claim.to_data()) == claim
    assert Claim.from_data({**claim.to_data(), "reading": None}).reading == ""
