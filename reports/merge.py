"""``python -m reports merge RESULTS... --out merged.json [--manifest manifest.json]``: the shards of
a run (``pytest suite --shard K/N``, plan/shards.py) put back together into one results file, which
the gate, ``reports build`` and the history take as one run. It fails closed.

The shards are grouped by their recorded group (``SUITE_SHARD_GROUP``: one kind of machine × torch
version of a fan-out); within a group every problem below is named, and none is passed over:

* a changed N (shards of one group that say different N);
* a manifest mismatch (shards planned from different collections, or not the ``--manifest`` given);
* a torch version or machine key that differs between shards, or a shard without a machine key;
* a missing shard (no file for some K in 1..N);
* a duplicated shard (two files of one K and one attempt);
* a retried shard with no rule to pick: the rule is that the latest complete attempt wins (the
  others are named, not merged); a shard with no complete attempt (cut short: ``partial``) has
  nothing to pick;
* a point in two shards, or in none: the shards' node IDs against the manifest, both ways (without
  ``--manifest``, their union must hash to the manifest hash every shard recorded).

Exit status (reports/__main__.py): 0 merged, complete; 2 a file that is not a results file or not a
shard; 3 any problem above.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from harness.contract import record
from reports.load import ResultsError, read_json


class MergeError(Exception):
    """The shards do not make one run; ``problems`` names each thing wrong, one line each."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass
class Shard:
    path: Path
    doc: dict
    k: int
    n: int
    attempt: int
    manifest: str
    group: str
    machine_key: str
    torch: str
    points: list[str]
    partial: str  # why it was cut short, "" for a complete shard

    @property
    def name(self) -> str:
        return f"{self.path.name} (shard {self.k}/{self.n}, attempt {self.attempt})"


def read_shard(path) -> Shard:
    path = Path(path)
    doc = read_json(path)  # ResultsError: not a results file, or not to the schema
    suite = doc.get("suite") or {}
    shard = suite.get("shard")
    if not isinstance(shard, dict):
        raise ResultsError(f"{path}: not a shard (no suite.shard: run with pytest suite --shard K/N)")
    torch_info = (doc.get("machine_info") or {}).get("torch") or {}
    partial = ""
    if suite.get("partial"):
        partial = f"partial: {suite.get('partial_reason') or 'cut short'}"
    return Shard(
        path=path,
        doc=doc,
        k=shard["k"],
        n=shard["n"],
        attempt=shard["attempt"],
        manifest=shard["manifest"],
        group=str(shard.get("group") or ""),
        machine_key=str(shard.get("machine_key") or ""),
        torch=str(torch_info.get("torch_version") or "?"),
        points=list(shard["points"]),
        partial=partial,
    )


def read_manifest(path) -> dict:
    """A manifest written by ``python -m suite.manifest``; ResultsError naming the file otherwise."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: not a manifest ({exc})") from None
    points = doc.get("points") if isinstance(doc, dict) else None
    if (
        not isinstance(points, dict)
        or not isinstance(doc.get("n"), int)
        or not isinstance(doc.get("manifest"), str)
        or not all(isinstance(k, int) and 1 <= k <= doc["n"] for k in points.values())
    ):
        raise ResultsError(f"{path}: not a manifest (needs manifest, n and points {{node ID: shard}})")
    if record.manifest_hash(points) != doc["manifest"]:
        raise ResultsError(f"{path}: its points do not hash to its manifest {doc['manifest']}")
    return doc


def _names(shards) -> str:
    return ", ".join(s.path.name for s in shards)


def _few(ids, at_most: int = 5) -> str:
    ids = sorted(ids)
    more = f" and {len(ids) - at_most} more" if len(ids) > at_most else ""
    return ", ".join(ids[:at_most]) + more


def _check_group(
    group: str, shards: list[Shard], manifest: dict | None
) -> tuple[list[Shard], list[str], list[str]]:
    """(the chosen shard per K, problems, notes) of one group."""
    where = f"group {group!r}: " if group else ""
    problems: list[str] = []
    notes: list[str] = []
    ns = Counter(s.n for s in shards)
    if len(ns) > 1:
        by_n = "; ".join(f"N={n} in {_names(s for s in shards if s.n == n)}" for n in sorted(ns))
        problems.append(f"{where}changed N: {by_n}")
    n = manifest["n"] if manifest else max(ns)
    if manifest and manifest["n"] not in ns:
        problems.append(f"{where}changed N: the manifest says N={manifest['n']}, the shards N={sorted(ns)}")
    hashes = Counter(s.manifest for s in shards)
    if len(hashes) > 1:
        by_hash = "; ".join(f"{h} in {_names(s for s in shards if s.manifest == h)}" for h in sorted(hashes))
        problems.append(
            f"{where}manifest mismatch: the shards were planned from different collections: {by_hash}"
        )
    if manifest:
        other = [s for s in shards if s.manifest != manifest["manifest"]]
        if other:
            problems.append(
                f"{where}manifest mismatch: {_names(other)} not planned from the manifest "
                f"{manifest['manifest']}"
            )
    for s in shards:
        if not s.machine_key:
            problems.append(f"{where}missing machine key: {s.name} records none")
    torches = Counter(s.torch for s in shards)
    if len(torches) > 1:
        by_torch = "; ".join(
            f"torch {t} in {_names(s for s in shards if s.torch == t)}" for t in sorted(torches)
        )
        problems.append(f"{where}torch mismatch within one group: {by_torch}")
    keys = Counter(s.machine_key for s in shards if s.machine_key)
    if len(keys) > 1 and len(torches) <= 1:
        by_key = "; ".join(
            f"{key!r} in {_names(s for s in shards if s.machine_key == key)}" for key in sorted(keys)
        )
        problems.append(f"{where}machine-key mismatch within one group: {by_key}")

    chosen: list[Shard] = []
    by_k: dict[int, list[Shard]] = defaultdict(list)
    for s in shards:
        by_k[s.k].append(s)
    for k in sorted(set(by_k) - set(range(1, n + 1))):
        problems.append(f"{where}shard {k}/{n} outside 1..{n}: {_names(by_k[k])}")
    for k in range(1, n + 1):
        candidates = sorted(by_k.get(k, []), key=lambda s: s.attempt)
        if not candidates:
            if manifest and k not in set(manifest["points"].values()):
                continue  # the manifest gives it no test: a run of nothing writes no results
            problems.append(f"{where}missing shard {k}/{n}: no results file for it")
            continue
        attempts = Counter(s.attempt for s in candidates)
        duplicated = sorted(a for a, count in attempts.items() if count > 1)
        for a in duplicated:
            problems.append(
                f"{where}duplicated shard {k}/{n}, attempt {a}: "
                f"{_names(s for s in candidates if s.attempt == a)}"
            )
        if duplicated:
            continue
        complete = [s for s in candidates if not s.partial]
        if not complete:
            tried = "; ".join(f"{s.name}: {s.partial}" for s in candidates)
            if len(candidates) > 1:
                problems.append(
                    f"{where}retried shard {k}/{n} with no rule to pick: the latest complete attempt "
                    f"wins, and none is complete ({tried})"
                )
            else:
                problems.append(f"{where}shard {k}/{n} incomplete: {tried}")
            continue
        best = complete[-1]
        chosen.append(best)
        for s in candidates:
            if s is not best:
                state = s.partial or "complete"
                notes.append(
                    f"{where}shard {k}/{n}: attempt {best.attempt} ({best.path.name}) taken, the latest "
                    f"complete one; attempt {s.attempt} ({s.path.name}, {state}) left out"
                )

    in_shards: dict[str, list[int]] = defaultdict(list)
    for s in chosen:
        for point in s.points:
            in_shards[point].append(s.k)
    twice = {p: ks for p, ks in in_shards.items() if len(ks) > 1}
    for p, ks in sorted(twice.items())[:5]:
        problems.append(f"{where}point in two shards: {p} in shards {', '.join(map(str, ks))}")
    if len(twice) > 5:
        problems.append(f"{where}... and {len(twice) - 5} more points in two shards")
    if not problems:
        if manifest:
            planned = manifest["points"]
            none = set(planned) - set(in_shards)
            extra = set(in_shards) - set(planned)
            if none:
                problems.append(
                    f"{where}point in none of the shards ({len(none)} of the manifest's): {_few(none)}"
                )
            if extra:
                problems.append(f"{where}point in no shard of the manifest ({len(extra)}): {_few(extra)}")
            moved = {p for p, ks in in_shards.items() if p in planned and planned[p] != ks[0]}
            if moved:
                problems.append(f"{where}point in another shard than the manifest's: {_few(moved)}")
        elif record.manifest_hash(in_shards) != chosen[0].manifest:
            problems.append(
                f"{where}point in none of the shards, or in none of the plan: the shards' "
                f"{len(in_shards)} points do not hash to their manifest {chosen[0].manifest} "
                "(give --manifest to name them)"
            )
    return chosen, problems, notes


def merged_document(group: str, chosen: list[Shard], order: dict | None = None) -> dict:
    """One run's results document from the chosen shards: their tests in the plan's order (the
    manifest's, collection order, so that what the report lists in test order reads as one run's),
    else in K order."""
    first = chosen[0]
    doc = copy.deepcopy(first.doc)
    position = {nodeid: i for i, nodeid in enumerate(order or ())}

    def in_plan_order(rows, key):
        rows = list(rows)
        if not position:
            return rows
        return sorted(rows, key=lambda row: position.get(str(row.get(key, "")), len(position)))

    doc["benchmarks"] = in_plan_order((b for s in chosen for b in s.doc.get("benchmarks") or []), "fullname")
    doc["outcomes"] = in_plan_order((o for s in chosen for o in s.doc.get("outcomes") or []), "nodeid")
    doc["pairs"] = [row for s in chosen for row in s.doc.get("pairs") or []]
    cases: dict = {}
    for s in chosen:
        for cid, info in (s.doc.get("cases") or {}).items():
            cases.setdefault(cid, info)
    doc["cases"] = cases
    dates = [str(s.doc.get("datetime")) for s in chosen if s.doc.get("datetime")]
    if dates:
        doc["datetime"] = max(dates)
    suite = dict(doc.get("suite") or {})
    suite.pop("shard", None)
    suite["partial"] = False
    suite["partial_reason"] = ""
    suite["merged"] = {
        "n": first.n,
        "manifest": first.manifest,
        "group": group,
        "machine_key": first.machine_key,
        "shards": [{"k": s.k, "attempt": s.attempt, "file": s.path.name} for s in chosen],
    }
    doc["suite"] = suite
    return doc


def merge(paths, manifest: dict | None = None) -> tuple[dict[str, dict], list[str]]:
    """({group: merged document}, notes); MergeError naming every problem; ResultsError for a file
    that is not a shard's results."""
    shards = [read_shard(p) for p in paths]
    if not shards:
        raise MergeError(["no shard files given"])
    groups: dict[str, list[Shard]] = defaultdict(list)
    for s in shards:
        groups[s.group].append(s)
    out, problems, notes = {}, [], []
    for group, members in sorted(groups.items()):
        chosen, wrong, said = _check_group(group, members, manifest)
        problems += wrong
        notes += said
        if not wrong:
            out[group] = merged_document(group, chosen, manifest["points"] if manifest else None)
    if problems:
        raise MergeError(problems)
    return out, notes


def out_paths(out: Path, groups) -> dict[str, Path]:
    """One group: `out` itself; several: `out` is a folder of ``<group>.json``."""
    groups = list(groups)
    if len(groups) == 1:
        return {groups[0]: out}
    return {g: out / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', g) or 'default'}.json" for g in groups}
