"""Every timed variant is right on more than one input: three more seeds, and its edge cases.

`test_check` and the timings use one seed (0). Here every variant of every comparison of every
case (the targets of the negative controls: quick profile's smallest size, on the CPU, every CPU
dtype) goes through the suite's own check (`VariantPoint`'s oracle and tolerance,
`measure.checked_call`, as `test_check` runs it) on:

* seeds 1, 2 and 3: a variant right on one draw by luck (a tie broken the oracle's way, a bound
  met by one sample's scale) is checked on three more;
* each input family its comparison declares for it (`cases.spec.InputFamily`): near-duplicate
  points, zeros and ties, values near the dtype's limits, strided and channels_last layouts, an
  empty or size-1 dimension, held to the variant's own bound at the family's size.

A family's ``fails`` lists the variants whose own check rejects it for a documented reason (the
matmul expansion's cancellation on near-duplicates): each must still be rejected (a listed
variant that passes is stale), and its error against the bound is printed in the tally, never
hidden behind a wider bound. Anything else that fails names the variant, seed or family.
"""

from __future__ import annotations

import collections
import functools

import pytest

from harness.machine import requirements
from tests.seeds_and_edges import FAILED, FINDING, PASSED, SEEDS, STALE, Outcome, outcomes
from tests.targets import target_id, variant_targets

TARGETS = variant_targets()


@functools.lru_cache(maxsize=None)
def outcomes_of(index: int) -> tuple[Outcome, ...] | str:
    """The outcomes of target `index`, or why it cannot run on this machine."""
    point = TARGETS[index]
    return requirements.unmet(point.requires, point.device) or outcomes(point)


def _wrong(outcomes_) -> list[str]:
    return [f"{o.what}: {o.outcome}: {o.detail}" for o in outcomes_ if o.outcome in (FAILED, STALE)]


# Every variant of every case, four checks and more each: out of the unit tier, as the controls.
@pytest.mark.integration
@pytest.mark.parametrize("index", range(len(TARGETS)), ids=[target_id(p) for p in TARGETS])
def test_every_seed_and_family_passes(index):
    found = outcomes_of(index)
    if isinstance(found, str):
        pytest.skip(found)
    wrong = _wrong(found)
    assert not wrong, f"{target_id(TARGETS[index])}: " + "; ".join(wrong)


@pytest.mark.integration
def test_the_tally_of_seeds_and_families(record_property):
    """Runs (or reads) every target's checks, prints checked / passed per seed and family (visible
    with -rA) and the expected findings with their error against the bound, and records it."""
    tally = collections.defaultdict(collections.Counter)
    findings, not_run, wrong = [], [], []
    for index, point in enumerate(TARGETS):
        found = outcomes_of(index)
        if isinstance(found, str):
            not_run.append(f"{target_id(point)}: {found}")
            continue
        for o in found:
            tally["seeds" if o.what.startswith("seed") else o.what][o.outcome] += 1
            if o.outcome == FINDING:
                findings.append(f"{target_id(point)} on {o.what}: {o.detail}")
        wrong += [f"{target_id(point)} {line}" for line in _wrong(found)]
    run = len(TARGETS) - len(not_run)
    checked = sum(sum(t.values()) for t in tally.values())
    lines = [
        f"seeds and families: {run} variant targets run ({len(not_run)} not run here), "
        f"{checked} checks, {sum(t[PASSED] for t in tally.values())} passed, "
        f"{sum(t[FINDING] for t in tally.values())} expected findings"
    ]
    for what, t in sorted(tally.items(), key=lambda kv: (kv[0] != "seeds", kv[0])):
        lines.append(
            f"  {what:28} passed {t[PASSED]:4} / checked {sum(t.values()):4}   expected findings {t[FINDING]}"
        )
    lines += [f"  finding: {line}" for line in findings]
    lines += [f"  not run, {line}" for line in not_run]
    lines += [f"  WRONG: {line}" for line in wrong]
    print("\n".join(lines))
    record_property("seeds_and_families", {k: dict(v) for k, v in tally.items()})
    assert not wrong, "\n".join(lines)
    assert tally["seeds"][PASSED] >= len(SEEDS) * run, "\n".join(lines)
    assert len(tally) > 1, "no case declares an input family"
