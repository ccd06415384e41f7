"""The catalogue's table read into entries (harness/contract/catalogue.py): tiers from the
headings, cells split outside backtick spans, Tier 3's extra column, sections out of scope left out."""

from __future__ import annotations

from harness.contract import catalogue

TABLE = """\
## Tier 1

| ID | technique | source | check | measure |
|---|---|---|---|---|
| `distance.pairwise` | matmul expansion | 001 / 距离 | equals `|x-y|²` brute force | time, memory |

## Tier 3

| `autograd.hooks` | hooks | 003 / hooks | the hook fires | also: full backward
## Out of scope

| `none.here` | not a technique | - | - | - |
"""


def test_rows_take_their_tier_and_cells_and_tier_three_its_extra_column():
    one, three = catalogue.parse(TABLE)
    assert (one.id, one.tier, one.technique, one.check, one.measure) == (
        "distance.pairwise",
        1,
        "matmul expansion",
        "equals `|x-y|²` brute force",  # the pipe inside backticks is not a cell border
        "time, memory",
    )
    assert (three.id, three.tier, three.measure, three.also) == (
        "autograd.hooks",
        3,
        "",
        "also: full backward",
    )


def test_the_projects_catalogue_has_unique_ids_in_three_tiers():
    entries = catalogue.load()
    ids = [e.id for e in entries]
    assert len(ids) == len(set(ids)) > 40
    assert {e.tier for e in entries} == {1, 2, 3}
