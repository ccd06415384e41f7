"""Results documents of older schema versions upgraded to the current one when they are read, once,
before anything else reads them (as asv's ``update_to_2`` does for its results): every reader after
this module sees one schema, so no reader keeps a branch for an older one.

What each version lacks, and what it is read as (`harness.contract.record` says what each added):

* 1 recorded no ``cases``: it ran against the catalogue shipped with the suite, whose every ID it
  records (an ID it mentions that the catalogue does not have is recorded undeclared: an unknown
  case), and named an outcome's test ``name``. A case that recorded no rule was judged by
  ``Faster()`` where its variants were timed, else by its checks' findings.
* 1-3 recorded no ``timed`` pairs (nor did version 4 before they were added to it): the pairs
  are the ones the suite then worked out from the rule and the variants' roles (`timed_then`).
* 1-3 recorded no ``claims``: each case was judged as one claim, by its recorded rule, and from
  version 3 on by every check's finding beside it (before 3, findings mixed the notes' errata into
  their verdict, so the rule alone decided). The upgrade writes that down as the one claim a
  case without claims is (`harness.contract.declared.as_one_claim`), its findings beside the rule
  only where they counted; the judge then reads it as it reads any claim.
* A compiled twin's naive source (``compiled_from``) was not recorded before 4: it is read from
  the suite's naming (`record.compiled_source`).

Plain Python on plain data: a document in, a new document out (the input is not changed).
"""

from __future__ import annotations

from typing import Mapping

from harness.contract import catalogue, declared, record, rules
from harness.contract.claims import RecordError

# The first version whose findings kept the notes' errata apart from their verdict.
FINDINGS_COUNT_FROM = 3


def version_of(doc: Mapping) -> int:
    """The schema version a document was written in (1 where it names none), refused where it is
    not a version this reader knows."""
    suite = doc.get("suite") if isinstance(doc.get("suite"), Mapping) else {}
    version = suite.get("schema_version", record.LEGACY_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < record.LEGACY_VERSION:
        raise RecordError(
            f"results schema version {version!r:.30} is not a version number (1 to {record.SCHEMA_VERSION})"
        )
    if version > record.SCHEMA_VERSION:
        raise RecordError(
            f"results schema version {version!r} is newer than this reader's ({record.SCHEMA_VERSION}); "
            f"update the suite to read it"
        )
    return version


def to_current(doc: Mapping) -> Mapping:
    """`doc` in the current schema: itself where it is already, else an upgraded copy (whose
    ``suite.upgraded_from`` names the version it was written in, where that is older)."""
    version = version_of(doc)
    cases = doc.get("cases") or {}
    if not isinstance(cases, Mapping) or not all(isinstance(e, Mapping) for e in cases.values()):
        raise RecordError("'cases' is not an object of case objects")
    recorded = all("timed" in e and "claims" in e for e in cases.values())
    if version == record.SCHEMA_VERSION and recorded:
        return doc
    # What the upgrade changes is copied (the suite, the cases, version 1's outcomes, the benchmarks'
    # extra_info); the rest, the rounds most of all, is shared with the input, which is never changed.
    # A copy of the whole document took 0.15 s of each read of the 5 MB reference run.
    doc = dict(doc)
    suite = dict(doc.get("suite") or {})
    if isinstance(doc.get("benchmarks"), list):
        doc["benchmarks"] = [_with_own_extra_info(b) for b in doc["benchmarks"]]
    benchmarks = [b.get("extra_info") or {} for b in doc.get("benchmarks") or () if isinstance(b, Mapping)]
    if version == record.LEGACY_VERSION and isinstance(doc.get("outcomes"), list):
        doc["outcomes"] = [dict(o) if isinstance(o, Mapping) else o for o in doc["outcomes"]]
    outcomes = [o for o in doc.get("outcomes") or () if isinstance(o, Mapping)]
    if version == record.LEGACY_VERSION:
        _name_outcomes(outcomes)
    cases, listed = (
        ({cid: dict(entry) for cid, entry in cases.items()}, {})
        if cases
        else _shipped_cases(benchmarks, outcomes)
    )
    for case_id, entry in cases.items():
        if version < record.SCHEMA_VERSION:  # nothing of these was recorded then, whatever the entry holds
            entry = {k: v for k, v in entry.items() if k not in ("timed", "claims") or v}
            cases[case_id] = entry
        _fill(case_id, entry, benchmarks, findings_count=version >= FINDINGS_COUNT_FROM)
    doc["cases"] = {**cases, **listed}
    suite["schema_version"] = record.SCHEMA_VERSION
    if version < record.SCHEMA_VERSION:
        suite["upgraded_from"] = version
    doc["suite"] = suite
    return doc


def _with_own_extra_info(bench):
    """A benchmark whose ``extra_info`` the upgrade may write to (a compiled twin's source)."""
    if isinstance(bench, Mapping) and isinstance(bench.get("extra_info"), Mapping):
        return {**bench, "extra_info": dict(bench["extra_info"])}
    return bench


def _fill(case_id: str, entry: dict, benchmarks, *, findings_count: bool) -> None:
    """What a case entry written before runs recorded it lacks: the rule it was judged by where it
    recorded none (Faster() where its variants were timed, else its findings), the pairs it timed
    (`_timed_then`), the one claim it was judged as, a compiled twin's source."""
    mine = [b for b in benchmarks if b.get("case") == case_id]
    try:
        rule = record.rule_from_data(entry["rule"]) if entry.get("rule") else None
    except TypeError as exc:  # a node with a field no rule has, named in one line
        raise RecordError(f"cases[{case_id}].rule: {exc}") from None
    if rule is None and mine:
        rule = rules.Faster()
    if "timed" not in entry:
        entry["timed"] = _timed_then(rule, mine)
    if "claims" not in entry:
        words = str(entry.get("claim") or entry.get("technique") or case_id)
        rule, claim = declared.as_one_claim(
            rule, words, str(entry.get("source") or ""), findings_count=findings_count
        )
        entry.update(rule=record.rule_to_data(rule), claims=[claim.to_data()])
    _name_compiled_sources(mine)


def _name_outcomes(outcomes) -> None:
    """Version 1 named an outcome's test ``name``; it is its ``check`` or its ``variant``."""
    for o in outcomes:
        if "name" in o and "variant" not in o and "check" not in o:
            o["check" if o.get("kind") == "check" else "variant"] = o.pop("name")


def _shipped_cases(benchmarks, outcomes) -> tuple[dict[str, dict], dict[str, dict]]:
    """Version 1's cases, (those it mentions, those it lists only): the shipped catalogue's, every
    one, and any ID it mentions that the catalogue does not have, recorded undeclared (the report
    names it an unknown case). One it has no results for is listed only (a report says it is not in
    these results): nothing decided it, so it is recorded with no rule, pairs or claims."""
    mentioned = dict.fromkeys(
        c
        for c in [*(b.get("case") for b in benchmarks), *(o.get("case") for o in outcomes)]
        if isinstance(c, str)
    )
    entries = {e.id: e for e in catalogue.load()}
    cases, listed = {}, {}
    for case_id in [*entries, *(c for c in mentioned if c not in entries)]:
        e = entries.get(case_id)
        entry = {"id": case_id, "tier": e.tier if e else None, "declared": e is not None}
        if e:
            entry.update(technique=e.technique, source=e.source)
        if case_id in mentioned:
            cases[case_id] = entry
        else:
            listed[case_id] = {**entry, "timed": [], "claims": []}
    return cases, listed


def _timed_then(rule, benchmarks) -> list[dict]:
    """The pairs a case was timed as before runs recorded them, per part: from the rule and the
    roles of the variants timed in that part (`timed_then`)."""
    by_part: dict[str, dict[str, str]] = {}
    for b in benchmarks:
        if isinstance(b.get("variant"), str):
            by_part.setdefault(str(b.get("part") or ""), {})[b["variant"]] = str(b.get("role") or "")
    return [
        {"part": part, "fast": fast, "slow": slow, "against": against}
        for part, roles in by_part.items()
        for fast, slow, against in timed_then(rule, roles)
    ]


def timed_then(rule, roles: dict[str, str]) -> list[tuple[str, str, str]]:
    """(fast, slow, against) as the suite timed them before pairs were declared: the pairs the
    rule's speed nodes name; where it has none, its memory nodes'; where those name no variant of
    `roles` (no rule, or one naming another part's variants), every optimized variant over every
    naive one (context where the rule decides by its findings); else the library over the naive
    way, as context. ``rule``: the case's recorded rule (None where the file recorded none);
    ``roles``: variant name → role of the variants measured together."""
    specs = [(r.fast, r.slow) for r in rules.speed_rules(rule)] or [
        (r.light, r.heavy) for r in rules.memory_rules(rule)
    ]
    kind = "context" if isinstance(rule, rules.FromFindings) else "rule"
    return (
        rules.named_pairs(specs, roles, "rule")
        or rules.named_pairs([("optimized", "naive")], roles, kind)
        or rules.named_pairs([("library", "naive")], roles, "context")
    )


def _name_compiled_sources(benchmarks) -> None:
    """A compiled twin's naive source, where its file did not record it: from the suite's naming,
    among the naive variants timed in its part."""
    naive: dict[str, list[str]] = {}
    for b in benchmarks:
        if b.get("role") == "naive":
            naive.setdefault(str(b.get("part") or ""), []).append(str(b.get("variant")))
    for b in benchmarks:
        name = b.get("variant")
        if isinstance(name, str) and name.startswith("compiled") and not b.get("compiled_from"):
            source = record.compiled_source(name, dict.fromkeys(naive.get(str(b.get("part") or ""), ())))
            if source:
                b["compiled_from"] = source
