"""cases/__init__.py: the scan that finds the cases skips the private rooms and the declaration
module, finds an ID where its name says, and adds the notes' snippets check only to IDs whose
notes show code."""

from __future__ import annotations

import pytest

import cases
from notes.map import SNIPPETS


def test_the_scan_skips_the_private_rooms_and_the_declaration():
    modules = list(cases._case_modules())
    assert "cases.distance" in modules and "cases.rnn.hidden_detach" in modules
    assert not [m for m in modules if "._lib" in m or "._launch" in m or m == "cases.spec"]


def test_an_id_is_looked_for_in_its_topic_module_then_its_own():
    assert cases.expected_modules("broadcast.outer") == ("cases.broadcast", "cases.broadcast.outer")
    assert cases.declared_case("broadcast.outer").id == "broadcast.outer"
    assert cases.declared_in("broadcast.outer") == "cases.broadcast.outer"
    with pytest.raises(KeyError, match="no case 'broadcast.nowhere'"):
        cases.declared_case("broadcast.nowhere")


def test_the_snippets_check_goes_to_the_ids_whose_notes_show_code():
    with_code = sorted({e.id for e in SNIPPETS.values() if e.id})
    without = sorted({c.id for c in cases.all_cases()} - set(with_code))
    assert with_code and without
    assert cases.snippets_check(without[0]) is None
    assert cases.SNIPPETS_CHECK not in cases.declared_case(without[0]).checks
    check = cases.snippets_check(with_code[0])
    assert check.fn.__name__ == "check_notes_snippets" and check.devices == ("cpu",) and check.claim is None
    assert cases.SNIPPETS_CHECK in cases.get_case(with_code[0]).checks
