"""The results contract: the typed, versioned records a run writes into pytest-benchmark's JSON and
`reports` reads back. Every writer goes through these types and every reader through `read_run`,
so the format is written down in one place.

Plain Python: imports neither torch nor pytest (`reports` and a CI gate job need neither), and a
results file carries the declarations it was judged by, so an old reference run is judged by the
rules it was measured under, not by today's code.

A results file is pytest-benchmark's JSON plus:

* ``suite`` — a `RunInfo`: schema version, profile, devices, seed, and whether the run was cut
  short (``partial``);
* ``cases`` — ``{id: CaseInfo}`` for every catalogue ID: claim, tier, source, technique and the
  verdict rule as data (`rule_to_data`);
* ``outcomes`` — one `Outcome` per suite test: passed / failed / skipped with the reason, and the
  `Finding` on the notes' claim where the test reached one;
* ``pairs`` — one `PairTiming` per compared pair and size: both sides' rounds, taken side by side;
* ``benchmarks[].extra_info`` — a `BenchmarkInfo` (the point, its cost model, error and peak
  memory) plus measurement details (timing mode, warnings, case metrics).

Schema versions: 1 is every file written before this module (no ``suite.schema_version``, no
``cases``). 2 added nothing a reader needs beyond 1's. 3: a finding carries the notes' errata
apart from its verdict on the technique (`Erratum`), and ``pairs`` holds the interleaved timings
of each compared pair (`PairTiming`). 4 adds each case's ``claims`` (the notes' claims, each with
the checks and variants that decide it; rule nodes name theirs) and ``timed`` pairs. Files of
versions 1-3 are upgraded to this one when read (`harness.contract.upgrade`), so these records
describe the current version only.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from harness.contract import codec, gain, values
from harness.contract import rules as rule_types

# The claim vocabulary (`harness.contract.claims`), which these records carry: named here too, so a
# reader of the records finds the words they are written in beside them.
from harness.contract.claims import (  # noqa: F401
    LEGACY_KINDS,
    Claim,
    ClaimKind,
    Erratum,
    ErratumKind,
    Finding,
    RecordError,
    Verdict,
)

SCHEMA_VERSION = 4
LEGACY_VERSION = 1


OUTCOMES = ("passed", "failed", "skipped")


def _column(place: int, **spec):
    """A field of `PointKey` that places a point in the results' tables: `place` is its position in
    `KEY_COLUMNS`, the order every table lists them in."""
    return codec.field(metadata={"column": place}, **spec)


def _name_key(point) -> str:
    """A point's name is written under what it names: a check, or a variant (a pair's two)."""
    return "check" if point.kind == "check" else "variant"


# The name of a point's test (files of the first schema wrote "name": harness.contract.upgrade).
_NAME = dict(key=_name_key, aliases=("variant", "check"), read=values.text, missing="")


def _set(**spec):
    """A field written only where it is set."""
    return codec.field(omit=True, **spec)


@dataclass(frozen=True)
class PointKey:
    """What one suite test checks or times, as the results name it. The plan creates it once per
    point (`plan.VariantPoint.key` and its siblings); a test's `Outcome` and a timed point's
    `BenchmarkInfo` are built from it, so nothing reads a node ID or a variant's name back into
    fields. The fields made with `_column` are where a point is, on one machine: the results'
    tables are keyed and grouped by them (`KEY_COLUMNS`). Its data holds the fields that are set,
    in this order, and the device always."""

    case: str = _column(0, read=values.text)
    # "variant" (checked or timed alone), "pair" or "check"
    kind: str = codec.field(read=values.text, missing="")
    name: str = codec.field(**_NAME)  # the variant; "fast/slow" for a pair; the check
    role: str = _set(read=values.text, default="")  # a variant's role (naive, optimized, library, compiled)
    size: Mapping[str, int] = _set(read=values.size, default_factory=dict)
    # The size by its label; the mapping travels beside it
    size_label: str = _column(1, read=values.text, omit=True, default="")
    dtype: str = _column(2, read=values.text, omit=True, default="")
    # Keyword-only: its data puts it after dtype, yet every point has one.
    device: str = _column(3, read=values.text, missing="", kw_only=True)
    # The case's part (cases.spec.Comparison), "" for its own comparison
    part: str = _set(read=values.text, default="")
    # A GPU timing mode other than warm (harness.measure.timing)
    timing_mode: str = _set(read=values.text, default="")
    compiled_from: str = _set(read=values.text, default="")  # the naive variant a compiled twin compiles

    def to_data(self) -> dict:
        return codec.encode(self)

    @classmethod
    def from_data(cls, data, where: str = "point") -> PointKey:
        return codec.decode(cls, data, where)

    def where(self) -> dict:
        """The fields every record of this point carries (an outcome, a benchmark row, a timed
        pair): which comparison, at which size, dtype and device."""
        return {
            "case": self.case,
            "size": dict(self.size),
            "size_label": self.size_label,
            "dtype": self.dtype,
            "device": self.device,
            "part": self.part,
        }


# Where a point is, on one machine: the columns every table of the reports is keyed and grouped by
# (with the machine and, per table, the variant or the pair), derived from `PointKey` as
# torch.utils.benchmark derives `_TASKSPEC_FIELDS` from its TaskSpec, so no reader re-describes it.
KEY_COLUMNS: tuple[str, ...] = tuple(
    f.name
    for f in sorted(
        (f for f in fields(PointKey) if "column" in f.metadata), key=lambda f: f.metadata["column"]
    )
)
# A point within its case: what tells one case's points apart (the judges' frames hold one case).
WITHIN_CASE: tuple[str, ...] = tuple(c for c in KEY_COLUMNS if c != "case")


@dataclass(frozen=True)
class Outcome:
    """One suite test. ``outcome == "failed"`` means the test itself went red (an assertion of the
    suite's own truth, a variant outside its tolerance, a crash): an error of the run, reported
    apart from the verdict on the notes' claim, which only findings and timings decide."""

    case: str = codec.field(read=values.text)
    # "variant" (a variant's check or timing) or "check"
    kind: str = codec.field(read=values.text, missing="")
    name: str = codec.field(**_NAME)  # the variant or check name
    device: str = _set(read=values.text, default="")
    nodeid: str = _set(read=values.text, default="")
    outcome: str = _set(read=values.one_of(*OUTCOMES), default="")
    reason: str = _set(read=values.text_or_empty, default="")  # why it was skipped, or the failure's message
    error_type: str = _set(read=values.text_or_empty, default="")  # the exception's class for a failed test
    role: str = _set(read=values.text, default="")
    size: Mapping[str, int] = _set(read=values.size, default_factory=dict)
    size_label: str = _set(read=values.text, default="")
    dtype: str = _set(read=values.text, default="")
    timing_mode: str = _set(read=values.text, default="")
    part: str = _set(read=values.text, default="")
    measured: Mapping[str, Any] | None = _set(read=values.obj, default=None)
    finding: Finding | None = _set(record=Finding, default=None)

    def to_data(self) -> dict:
        return codec.encode(self)

    @classmethod
    def from_data(cls, data, where: str = "outcome") -> Outcome:
        return codec.decode(cls, data, where)

    @classmethod
    def at(cls, key: PointKey, **result) -> Outcome:
        """The outcome of the test at `key`; `result`: the fields that are not the point's."""
        return cls(
            **key.where(), kind=key.kind, name=key.name, role=key.role, timing_mode=key.timing_mode, **result
        )

    @classmethod
    def of_report(cls, report) -> Outcome | None:
        """A suite test's outcome from pytest's report of one of its phases (read by attribute:
        ``when``, ``outcome``, ``longrepr``, ``nodeid``, and ``user_properties`` holding its
        ``point`` and any ``finding``/``measured``), or None where that phase does not decide it:
        the call does, and a setup that did not pass or a teardown that failed. The reason is why
        it was skipped, or a failure's crash message, whose first word before a colon names the
        exception's class."""
        props = dict(report.user_properties)
        when, outcome = report.when, report.outcome
        decides = (
            when == "call"
            or (when == "setup" and outcome != "passed")
            or (when == "teardown" and outcome == "failed")
        )
        if "point" not in props or not decides:
            return None
        message = error_type = ""
        if outcome == "skipped" and isinstance(report.longrepr, tuple):  # (path, line, reason)
            message = report.longrepr[2].removeprefix("Skipped: ")
        elif outcome == "failed":
            crash = getattr(report.longrepr, "reprcrash", None)
            message = (crash.message if crash else str(report.longrepr))[:2000]
            # pytest.fail's crash line is "Failed: <message>"; a message that names its own error
            # ("WrongAnswer: ...", a variant outside its tolerance) is that error.
            head = message.removeprefix("Failed: ").split(":", 1)[0]
            error_type = head if head.isidentifier() and ":" in message[:80] else "Failed"
        finding = props.get("finding")
        return cls.at(
            PointKey.from_data(props["point"]),
            nodeid=report.nodeid,
            outcome=outcome,
            reason=message,
            error_type=error_type,
            finding=Finding.from_data(finding) if finding else None,
            measured=props.get("measured"),
        )


@dataclass(frozen=True)
class BenchmarkInfo:
    """The standard part of a benchmark's ``extra_info``: which point was timed and what it cost.
    Measurement details (timing mode, warnings, roofline fractions, case metrics) sit beside these
    keys in the same dict and are read back as `extras`."""

    case: str = codec.field(read=values.text)
    variant: str = codec.field(read=values.text, missing="?")
    role: str = codec.field(read=values.text, missing="")
    size: Mapping[str, int] = codec.field(read=values.size, missing={})
    size_label: str = codec.field(read=values.text, missing="")
    dtype: str = codec.field(read=values.text, missing="")
    device: str = codec.field(read=values.text, missing="")
    tier: int | None = codec.field(read=values.tier, default=None)
    # The size parameter on the plots' x axis
    x: str | None = codec.field(read=values.text_or_none, default=None)
    flops: float | None = codec.field(read=values.non_negative, default=None)
    bytes: float | None = codec.field(read=values.non_negative, default=None)
    peak_bytes: float | None = codec.field(read=values.non_negative, default=None)
    max_abs_err: float | None = codec.field(read=values.non_negative, default=None)
    max_rel_err: float | None = codec.field(read=values.non_negative, default=None)
    kind: str = codec.field(read=values.text, default="variant")
    part: str = codec.field(read=values.text, default="")  # the case's part (cases.spec.Comparison)
    # A compiled twin's naive variant ("" in files written before it was recorded).
    compiled_from: str = codec.field(read=values.text, default="")

    @classmethod
    def of(cls, key: PointKey, **measured) -> BenchmarkInfo:
        """A timed variant's record at its point; `measured`: tier, x and the cost fields."""
        return cls(
            **key.where(), variant=key.name, role=key.role, compiled_from=key.compiled_from, **measured
        )

    def to_data(self) -> dict:
        return codec.encode(self)

    @classmethod
    def split(cls, extra_info: Mapping) -> tuple[BenchmarkInfo, dict] | None:
        """(the standard record, the other keys), or None for a benchmark outside the suite.
        Every field the reports read is checked here: RecordError names the first that is wrong."""
        if extra_info.get("case") is None:
            return None
        other = {k: v for k, v in extra_info.items() if k not in STANDARD_EXTRA_KEYS}
        return codec.decode(cls, extra_info, "extra_info"), other


STANDARD_EXTRA_KEYS = frozenset(f.name for f in fields(BenchmarkInfo))
# The two host-allocator states a CPU figure is named by: a benchmark's median is a settled heap's
# (harness.host.allocator.pin), its ``faulted_pages`` entry (harness.measure.faulted_pages) the other's.
SETTLED_HEAP = "settled heap"
FAULTED_PAGES = "pages faulted each call"


@dataclass(frozen=True)
class PairTiming:
    """Two variants of one comparison timed side by side (harness.measure.interleave): round i of each
    side ran back to back, so their ratio is taken round by round (harness.contract.gain.paired_ratio).
    ``fast``/``slow`` are the rule's names for the sides (the claim says `fast` is faster), not a
    result. ``identical``: the two outputs were bitwise equal on the timed inputs. ``load`` is the
    machine's load measured right after the rounds (harness.host.load), ``noise_floor`` the A/A noise
    floor measured on the device in the same run (harness.contract.gain.noise_floor). ``timer`` names the
    clock the rounds were read on (harness.measure.device: ``cuda_events``, ``perf_counter``); "" in a file
    written before it was recorded.

    On a device's clock, beside the rounds: ``gap_s``, each side's in-window launch gap (the
    intercept of rounds of 1-32 calls, harness.contract.rounds.fit_calls); ``graph_s``, each side's
    GPU-only seconds per call (a CUDA-graph replay of ``graph_calls`` calls,
    harness.measure.graph_figure), and ``graph_skipped`` where a side could not be captured, why.
    Empty on the CPU and in files written before they were recorded."""

    case: str = codec.field(read=values.text)
    fast: str = codec.field(read=values.text)
    slow: str = codec.field(read=values.text)
    size: Mapping[str, int] = codec.field(read=values.size, missing={})
    size_label: str = codec.field(read=values.text, missing="")
    dtype: str = codec.field(read=values.text, missing="")
    device: str = codec.field(read=values.text, missing="")
    fast_s: tuple[float, ...] = codec.field(read=values.rounds)
    slow_s: tuple[float, ...] = codec.field(read=values.rounds)
    # "rule": the pair the case's rule names; "context": a better way, deciding nothing
    against: str = codec.field(read=values.one_of("rule", "context"), default="rule")
    part: str = codec.field(read=values.text, default="")
    x: str | None = codec.field(read=values.text_or_none, default=None)
    identical: bool | None = codec.field(read=values.flag_or_none, default=None)
    noise_floor: float | None = codec.field(read=values.non_negative_float, default=None)
    load: Mapping[str, Any] | None = codec.field(read=values.obj, default=None)
    iterations: Mapping[str, int] = codec.field(read=values.mapping, default_factory=dict)
    timer: str = codec.field(read=values.text_or_empty, default="")
    gap_s: Mapping[str, float] = codec.field(read=values.offsets_by_side, default_factory=dict)
    graph_s: Mapping[str, float] = codec.field(read=values.seconds_by_side, default_factory=dict)
    graph_calls: Mapping[str, int] = codec.field(read=values.counts_by_name, default_factory=dict)
    graph_skipped: Mapping[str, str] = codec.field(read=values.texts_by_name, default_factory=dict)

    def __post_init__(self):
        if len(self.fast_s) != len(self.slow_s):
            raise RecordError(f"pair {self.case} {self.fast}/{self.slow}: sides have unequal round counts")

    def host_bound(self, limit: float = gain.HOST_BOUND_LIMIT) -> str | None:
        """The fast side, where its rounds ran at the host's pace (gain.host_bound): its median
        over `limit` × its graph replay's per-call time; else None."""
        fast_s = sorted(self.fast_s)[len(self.fast_s) // 2]
        return self.fast if gain.host_bound(fast_s, self.graph_s.get(self.fast), limit) else None

    @classmethod
    def at(cls, key: PointKey, **result) -> PairTiming:
        """The pair timed at `key`; `result`: the sides' names, their rounds and what was measured
        with them."""
        return cls(**key.where(), **result)

    def to_data(self) -> dict:
        return codec.encode(self)

    @classmethod
    def from_data(cls, data, where: str = "pair") -> PairTiming:
        return codec.decode(cls, data, where)


@dataclass(frozen=True)
class TimedPair:
    """Two variants of one comparison timed side by side: `fast` the way expected to win, `slow`
    the way it is measured against; `against` says what the pair decides ("rule": the verdict's
    pair, "context": a better way the catalogue adds, reported and gated but deciding nothing on
    its own)."""

    part: str = codec.field(read=values.text, missing="")
    fast: str = codec.field(read=values.text)
    slow: str = codec.field(read=values.text)
    against: str = codec.field(read=values.one_of("rule", "context"), default="rule")

    def to_data(self) -> dict:
        return codec.encode(self)

    @classmethod
    def from_data(cls, data, where: str = "timed pair") -> TimedPair:
        return codec.decode(cls, data, where)


def _rule(data, where: str):
    """A verdict rule as its data wrote it; none where the case is judged by its findings."""
    if not data:
        return None
    try:
        return rule_from_data(data)
    except (RecordError, TypeError) as e:  # TypeError: a keyword its rule class lacks
        raise RecordError(f"{where}: {e}") from None


@dataclass(frozen=True)
class CaseInfo:
    """A catalogue ID as the run declared it. ``rule`` is the effective verdict rule (a case
    without one is judged by its findings; runs before pairs were declared recorded Faster() for
    one that timed variants)."""

    id: str = codec.field(read=values.text)
    tier: int | None = codec.field(read=values.tier, missing=None)
    technique: str = codec.field(read=values.text, default="")
    claim: str = codec.field(read=values.text, default="")
    source: str = codec.field(read=values.text, default="")
    # A harness.contract.rules object (written through a lambda: rule_to_data is defined below).
    rule: Any = codec.field(read=_rule, write=lambda rule: rule_to_data(rule), default=None)
    # False: in the catalogue but no case declares it
    declared: bool = codec.field(read=values.truth, default=True)
    gate_tolerance: float | None = codec.field(read=values.fraction, default=None)
    # Naive ways torch.compile is not applied to, with why (cases.spec.Comparison.uncompilable).
    uncompilable: Mapping[str, str] = codec.field(read=values.mapping, default_factory=dict)
    # The device types any of its points runs on (empty: not recorded, files before it was).
    devices: tuple[str, ...] = codec.field(read=values.texts, default=())
    # The notes' claims and what decides each (a case that declares none is one claim:
    # harness.contract.declared.as_one_claim).
    claims: tuple[Claim, ...] = codec.field(records=Claim, default=())
    # The pairs the case times side by side, declared once (harness.contract.declared.timed_pairs)
    # and read by the plan, the summary and the gate alike; a file written before they
    # were recorded has them from the upgrade on reading (harness.contract.upgrade).
    timed: tuple[TimedPair, ...] = codec.field(records=TimedPair, default=())

    def __post_init__(self):
        ids = [c.id for c in self.claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"claims: a claim id repeats ({ids})")

    @property
    def verdict(self):  # the name reports use for a case's rule
        return self.rule

    def to_data(self) -> dict:
        return codec.encode(self)

    @classmethod
    def from_data(cls, data, where: str = "case") -> CaseInfo:
        return codec.decode(cls, data, where)

    def timed_in(self, part: str) -> list[tuple[str, str, str]]:
        """(fast, slow, against) of the pairs the case declared for `part` ("" its own comparison)."""
        return [(t.fast, t.slow, t.against) for t in self.timed if t.part == part]


@dataclass(frozen=True)
class RunInfo:
    profile: str = codec.field(read=values.text, default="")
    devices: tuple[str, ...] = codec.field(read=values.texts, default=())
    seed: int | None = codec.field(read=values.whole_or_none, default=None)
    # Cut short (interrupted, time limit): holds only the points that finished.
    partial: bool = codec.field(read=values.truth, default=False)
    partial_reason: str = codec.field(read=values.text, default="")
    schema_version: int = SCHEMA_VERSION
    # The catalogue's δ floor when the run was written (harness.contract.gain.DELTA_FLOOR): a file
    # judged again later is judged with it, so a changed floor never re-judges old files silently.
    # 0.05 in files written before it was recorded, the floor then.
    delta_floor: float = codec.field(read=values.fraction, default=0.05)
    # A shard of a run (pytest suite --shard K/N: K, N, attempt, manifest hash, its node IDs, the
    # machine key; suite/shard_plugin.py), or the shards a merged run came from (reports.merge).
    # Absent (None) in a whole run.
    shard: Mapping[str, Any] | None = _set(read=values.obj, default=None)
    # The version a document older than this one was written in; it is read through the upgrade
    # (harness.contract.upgrade), which sets this. Absent (None) in a current document.
    upgraded_from: int | None = _set(read=values.one_of(*range(LEGACY_VERSION, SCHEMA_VERSION)), default=None)
    merged: Mapping[str, Any] | None = _set(read=values.obj, default=None)

    def to_data(self) -> dict:
        return codec.encode(self)

    @classmethod
    def from_data(cls, data: Mapping | None) -> RunInfo:
        data = data or {}
        version = data.get("schema_version", LEGACY_VERSION)
        if version != SCHEMA_VERSION:
            raise RecordError(
                f"results schema version {version!r:.30}: these records are version {SCHEMA_VERSION}'s; "
                "read an older document through harness.contract.upgrade.to_current"
            )
        return codec.decode(cls, data, "suite")


def manifest_hash(nodeids) -> str:
    """A sharded run's plan, named: sha256 of its sorted node IDs (first 16 hex digits), whatever
    the number of shards (plan/shards.py; checked by reports.merge)."""
    text = "\n".join(sorted(set(nodeids)))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def compiled_source(name: str, naive_names) -> str | None:
    """The naive variant a compiled variant compiles, from the suite's naming: ``compiled`` (the
    case's one naive variant), ``compiled_<naive>``, each optionally ``..._max_autotune``."""
    if not name.startswith("compiled"):
        return None
    base = name.removeprefix("compiled").removesuffix("_max_autotune").removeprefix("_")
    naive_names = list(naive_names)
    if base:
        return base if base in naive_names else None
    return naive_names[0] if len(naive_names) == 1 else None


_RULES = {
    cls.__name__: cls
    for cls in (
        rule_types.Faster,
        rule_types.NotFaster,
        rule_types.Lighter,
        rule_types.NotLighter,
        rule_types.AllOf,
        rule_types.AnyOf,
        rule_types.FromFindings,
    )
}

_NESTING = ("AllOf", "AnyOf")


def rule_to_data(rule) -> dict:
    """A verdict rule as plain data: ``{"rule": "Faster", "fast": ..., ...}``; AllOf and AnyOf nest."""
    name = type(rule).__name__
    if name not in _RULES:
        raise RecordError(f"unknown verdict rule {name}")
    data = {"rule": name}
    for f in fields(rule):
        value = getattr(rule, f.name)
        data[f.name] = [rule_to_data(r) for r in value] if f.name == "rules" and name in _NESTING else value
    return data


def rule_from_data(data: Mapping):
    name = data.get("rule") if isinstance(data, Mapping) else None
    if name not in _RULES:
        raise RecordError(f"unknown verdict rule {name!r}; this reader knows {sorted(_RULES)}")
    kwargs = {k: v for k, v in data.items() if k != "rule"}
    if name in _NESTING:
        kwargs["rules"] = tuple(rule_from_data(r) for r in kwargs.get("rules", ()))
    return _RULES[name](**kwargs)


@dataclass(frozen=True)
class Run:
    """What `read_run` gives back from one results document (benchmarks stay with the reader)."""

    info: RunInfo
    cases: dict[str, CaseInfo]
    outcomes: list[Outcome]
    pairs: list[PairTiming] = field(default_factory=list)


def read_run(doc: Mapping) -> Run:
    """The suite's part of a results document, checked against the schema."""
    info = RunInfo.from_data(doc.get("suite") if isinstance(doc.get("suite"), Mapping) else None)
    cases_data = doc.get("cases") or {}
    if not isinstance(cases_data, Mapping):
        raise RecordError("'cases' is not an object")
    cases = {cid: CaseInfo.from_data(entry, f"cases[{cid}]") for cid, entry in cases_data.items()}
    outcomes_data = doc.get("outcomes") or []
    if not isinstance(outcomes_data, list):
        raise RecordError("'outcomes' is not a list")
    pairs_data = doc.get("pairs") or []
    if not isinstance(pairs_data, list):
        raise RecordError("'pairs' is not a list")
    return Run(
        info,
        cases,
        [Outcome.from_data(o, f"outcomes[{i}]") for i, o in enumerate(outcomes_data)],
        [PairTiming.from_data(p, f"pairs[{i}]") for i, p in enumerate(pairs_data)],
    )
