"""One fault, one erratum (CATALOG.md): every CPU check of every case run once, in-process; each
erratum it reports quotes the notes' exact words (so it is located: file and line), and no two
errata, in one ID or in two, sit on one line of the notes."""

from __future__ import annotations

import collections
import functools

import pytest
import torch

import cases
from harness.contract.record import LEGACY_KINDS
from notes import text as notes_text

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("errata")]


@functools.lru_cache(maxsize=None)
def _errata() -> tuple:
    found = []
    for case in cases.all_cases():
        for name, check in case.checks.items():
            if "cpu" not in check.devices or check.slow or check.requires:
                continue
            finding = notes_text.keyed(check.fn(torch.device("cpu")))
            for erratum in finding.errata if finding else ():
                found.append((case.id, name, erratum))
    return tuple(found)


def test_every_erratum_quotes_the_notes():
    unlocated = [(i, n, e.quote[:80]) for i, n, e in _errata() if not e.line]
    assert not unlocated, f"errata whose quote is not the notes' words: {unlocated}"


def test_no_two_errata_on_one_line():
    by_line = collections.defaultdict(list)
    for case_id, name, erratum in _errata():
        if erratum.line:
            by_line[erratum.key].append(f"{case_id}/{name}: {erratum.kind.value}: {erratum.quote[:60]}")
    twice = {f"{f}:{n}": seen for (f, n), seen in by_line.items() if len(set(seen)) > 1 or len(seen) > 1}
    assert not twice, f"one fault listed more than once: {twice}"


def test_no_erratum_is_a_false_statement():
    legacy = [(i, n, e.kind.value, e.quote[:60]) for i, n, e in _errata() if e.kind in LEGACY_KINDS]
    assert not legacy, f"false statements filed as errata (they are claims that fail): {legacy}"
