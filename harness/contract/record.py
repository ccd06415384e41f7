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
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from harness.contract import gain
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


def _column(place: int, **default):
    """A field of `PointKey` that places a point in the results' tables: `place` is its position in
    `KEY_COLUMNS`, the order every table lists them in."""
    return field(metadata={"column": place}, **default)


@dataclass(frozen=True)
class PointKey:
    """What one suite test checks or times, as the results name it. The plan creates it once per
    point (`plan.VariantPoint.key` and its siblings); a test's `Outcome` and a timed point's
    `BenchmarkInfo` are built from it, so nothing reads a node ID or a variant's name back into
    fields. The fields made with `_column` are where a point is, on one machine: the results'
    tables are keyed and grouped by them (`KEY_COLUMNS`)."""

    case: str = _column(0)
    kind: str  # "variant" (checked or timed alone), "pair" (two timed side by side) or "check"
    name: str  # the variant; "fast/slow" for a pair; the check
    device: str = _column(3)
    role: str = ""  # a variant's role (naive, optimized, library, compiled)
    size: Mapping[str, int] = field(default_factory=dict)
    size_label: str = _column(1, default="")  # the size by its label; the mapping travels beside it
    dtype: str = _column(2, default="")
    part: str = ""  # the case's part (cases.spec.Comparison), "" for its own comparison
    timing_mode: str = ""  # a GPU timing mode other than warm (harness.measure.timing)
    compiled_from: str = ""  # the naive variant a compiled twin compiles

    def to_data(self) -> dict:
        """``{"case", "kind", "variant"|"check", ...}``: the fields that are set, in this order."""
        data = {
            "case": self.case,
            "kind": self.kind,
            ("check" if self.kind == "check" else "variant"): self.name,
        }
        for name in ("role", "size", "size_label", "dtype", "device", "part", "timing_mode", "compiled_from"):
            value = getattr(self, name)
            if value or name == "device":
                data[name] = dict(value) if isinstance(value, Mapping) else value
        return data

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

    @classmethod
    def from_data(cls, data: Mapping) -> PointKey:
        return cls(
            case=str(data["case"]),
            kind=str(data.get("kind", "")),
            name=str(data.get("variant") or data.get("check") or data.get("name") or ""),
            device=str(data.get("device", "")),
            role=str(data.get("role", "")),
            size=dict(data.get("size") or {}),
            size_label=str(data.get("size_label", "")),
            dtype=str(data.get("dtype", "")),
            part=str(data.get("part", "")),
            timing_mode=str(data.get("timing_mode", "")),
            compiled_from=str(data.get("compiled_from", "")),
        )


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

    case: str
    kind: str  # "variant" (a variant's check or timing) or "check" (a rule/behaviour check)
    name: str  # the variant or check name
    device: str = ""
    nodeid: str = ""
    outcome: str = ""
    reason: str = ""  # why it was skipped, or the failure's message
    error_type: str = ""  # the exception's class for a failed test, e.g. AssertionError
    role: str = ""
    size: Mapping[str, int] = field(default_factory=dict)
    size_label: str = ""
    dtype: str = ""
    timing_mode: str = ""
    part: str = ""
    finding: Finding | None = None
    measured: Mapping[str, Any] | None = None

    def to_data(self) -> dict:
        data = {
            "case": self.case,
            "kind": self.kind,
            ("check" if self.kind == "check" else "variant"): self.name,
        }
        for f in fields(self):
            if f.name in ("case", "kind", "name", "finding"):
                continue
            value = getattr(self, f.name)
            if value not in ("", None, {}):
                data[f.name] = dict(value) if isinstance(value, Mapping) else value
        if self.finding is not None:
            data["finding"] = self.finding.to_data()
        return data

    @classmethod
    def from_data(cls, data: Mapping) -> Outcome:
        if not isinstance(data, Mapping) or not isinstance(data.get("case"), str):
            raise RecordError("an outcomes[] entry has no case")
        if data.get("outcome", "passed") not in OUTCOMES:
            raise RecordError(
                f"outcome {data.get('outcome')!r:.30} of {data['case']} is not one of {OUTCOMES}"
            )
        finding = data.get("finding")
        return cls.at(
            PointKey.from_data(data),
            nodeid=str(data.get("nodeid", "")),
            outcome=str(data.get("outcome", "")),
            reason=str(data.get("reason") or ""),
            error_type=str(data.get("error_type") or ""),
            finding=Finding.from_data(finding) if finding else None,
            measured=data.get("measured"),
        )

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

    case: str
    variant: str
    role: str
    size: Mapping[str, int]
    size_label: str
    dtype: str
    device: str
    tier: int | None = None
    x: str | None = None  # the size parameter on the plots' x axis
    flops: float | None = None
    bytes: float | None = None
    peak_bytes: float | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    kind: str = "variant"
    part: str = ""  # the case's part (cases.spec.Comparison), "" for its own comparison
    compiled_from: str = ""  # a compiled twin's naive variant ("" in files written before it was recorded)

    @classmethod
    def of(cls, key: PointKey, **measured) -> BenchmarkInfo:
        """A timed variant's record at its point; `measured`: tier, x and the cost fields."""
        return cls(
            **key.where(), variant=key.name, role=key.role, compiled_from=key.compiled_from, **measured
        )

    def to_data(self) -> dict:
        return {
            f.name: (dict(v) if isinstance(v := getattr(self, f.name), Mapping) else v) for f in fields(self)
        }

    @classmethod
    def split(cls, extra_info: Mapping) -> tuple[BenchmarkInfo, dict] | None:
        """(the standard record, the other keys), or None for a benchmark outside the suite.
        Every field the reports read is checked here: RecordError names the first that is wrong."""
        if extra_info.get("case") is None:
            return None
        names = {f.name for f in fields(cls)}
        known = {k: v for k, v in extra_info.items() if k in names}
        known.setdefault("variant", "?")
        for key in ("role", "size_label", "dtype", "device"):
            known.setdefault(key, "")
        known.setdefault("size", {})
        _check_info(known)
        return cls(**known), {k: v for k, v in extra_info.items() if k not in names}


STANDARD_EXTRA_KEYS = frozenset(f.name for f in fields(BenchmarkInfo))
# The two host-allocator states a CPU figure is named by: a benchmark's median is a settled heap's
# (harness.host.allocator.pin), its ``faulted_pages`` entry (harness.measure.faulted_pages) the other's.
SETTLED_HEAP = "settled heap"
FAULTED_PAGES = "pages faulted each call"
_TEXT = ("case", "variant", "role", "size_label", "dtype", "device", "kind", "part", "compiled_from")
_COUNTS = ("flops", "bytes", "peak_bytes", "max_abs_err", "max_rel_err")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_info(info: Mapping) -> None:
    for key in _TEXT:
        if key in info and not isinstance(info[key], str):
            raise RecordError(f"extra_info.{key} is not text: {info[key]!r:.60}")
    size = info.get("size")
    if not isinstance(size, Mapping) or not all(
        isinstance(k, str) and _is_number(v) for k, v in size.items()
    ):
        raise RecordError(f"extra_info.size is not a mapping of names to numbers: {size!r:.60}")
    if info.get("tier") is not None and info["tier"] not in (1, 2, 3):
        raise RecordError(f"extra_info.tier {info['tier']!r:.20} is not 1, 2 or 3")
    if info.get("x") is not None and not isinstance(info["x"], str):
        raise RecordError(f"extra_info.x (the size parameter on the x axis) is not text: {info['x']!r:.20}")
    for key in _COUNTS:
        value = info.get(key)
        if value is None:
            continue
        if not _is_number(value) or not (0 <= float(value) < float("inf")):
            raise RecordError(f"extra_info.{key} {value!r:.30} is not a finite non-negative number")


def _times(values, where: str) -> tuple[float, ...]:
    if not isinstance(values, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    ):
        raise RecordError(f"{where} is not a list of numbers")
    if not values:
        raise RecordError(f"{where} is an empty list: a pair timed no round")
    times = tuple(float(v) for v in values)
    if not all(0 < t < float("inf") for t in times):
        raise RecordError(f"{where} holds a time that is not positive and finite")
    return times


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

    case: str
    fast: str
    slow: str
    size: Mapping[str, int]
    size_label: str
    dtype: str
    device: str
    fast_s: tuple[float, ...]
    slow_s: tuple[float, ...]
    against: str = "rule"  # "rule": the pair the case's rule names; "context": a better way, deciding nothing
    part: str = ""
    x: str | None = None
    identical: bool | None = None
    noise_floor: float | None = None
    load: Mapping[str, Any] | None = None
    iterations: Mapping[str, int] = field(default_factory=dict)
    timer: str = ""
    gap_s: Mapping[str, float] = field(default_factory=dict)
    graph_s: Mapping[str, float] = field(default_factory=dict)
    graph_calls: Mapping[str, int] = field(default_factory=dict)
    graph_skipped: Mapping[str, str] = field(default_factory=dict)

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
        data = asdict(self)
        data["fast_s"], data["slow_s"] = list(self.fast_s), list(self.slow_s)
        return data

    @classmethod
    def from_data(cls, data: Mapping) -> PairTiming:
        if not isinstance(data, Mapping):
            raise RecordError("a pairs[] entry is not an object")
        missing = [k for k in ("case", "fast", "slow", "fast_s", "slow_s") if k not in data]
        if missing:
            raise RecordError(f"a pairs[] entry has no {', '.join(missing)}")
        where = f"pair {data['case']} {data['fast']}/{data['slow']}"
        fast_s, slow_s = _times(data["fast_s"], f"{where} fast_s"), _times(data["slow_s"], f"{where} slow_s")
        floor = data.get("noise_floor")
        if floor is not None and (
            isinstance(floor, bool)
            or not isinstance(floor, (int, float))
            or not math.isfinite(floor)
            or floor < 0
        ):
            raise RecordError(f"{where}: noise_floor is {floor!r:.30}; a noise floor is a finite number ≥ 0")
        return cls(
            case=str(data["case"]),
            fast=str(data["fast"]),
            slow=str(data["slow"]),
            size=dict(data.get("size") or {}),
            size_label=str(data.get("size_label", "")),
            dtype=str(data.get("dtype", "")),
            device=str(data.get("device", "")),
            fast_s=fast_s,
            slow_s=slow_s,
            against=str(data.get("against", "rule")),
            part=str(data.get("part", "")),
            x=data.get("x"),
            identical=data.get("identical"),
            noise_floor=float(floor) if floor is not None else None,
            load=_object(data.get("load"), f"{where}: load"),
            iterations=dict(data.get("iterations") or {}),
            timer=str(data.get("timer") or ""),
            gap_s=_per_side(data.get("gap_s"), f"{where}: gap_s", signed=True),
            graph_s=_per_side(data.get("graph_s"), f"{where}: graph_s"),
            graph_calls={str(k): int(v) for k, v in (data.get("graph_calls") or {}).items()},
            graph_skipped={str(k): str(v) for k, v in (data.get("graph_skipped") or {}).items()},
        )


def _per_side(value, where: str, signed: bool = False) -> dict[str, float]:
    """{side: seconds}: finite numbers, positive unless `signed` (a fitted intercept may come out
    a little below 0 on noise)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise RecordError(f"{where} is {value!r:.30}, not an object")
    out = {}
    for side, seconds in value.items():
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not math.isfinite(seconds)
            or (seconds <= 0 and not signed)
        ):
            raise RecordError(f"{where}.{side} is {seconds!r:.30}; seconds are a finite number")
        out[str(side)] = float(seconds)
    return out


@dataclass(frozen=True)
class CaseInfo:
    """A catalogue ID as the run declared it. ``rule`` is the effective verdict rule (a case
    without one is judged by its findings; runs before pairs were declared recorded Faster() for
    one that timed variants)."""

    id: str
    tier: int | None
    technique: str = ""
    claim: str = ""
    source: str = ""
    rule: Any = None  # a harness.contract.rules object
    declared: bool = True  # False: in the catalogue but no case declares it
    gate_tolerance: float | None = None
    # Naive ways torch.compile is not applied to, with why (cases.spec.Comparison.uncompilable).
    uncompilable: Mapping[str, str] = field(default_factory=dict)
    # The device types any of its points runs on (empty: not recorded, files before it was).
    devices: tuple[str, ...] = ()
    # The notes' claims and what decides each (a case that declares none is one claim:
    # harness.contract.declared.as_one_claim).
    claims: tuple[Claim, ...] = ()
    # The pairs the case times side by side, declared once (harness.contract.declared.timed_pairs)
    # and read by the plan, the summary and the gate alike; empty in files written before they
    # were recorded, read as timed then (harness.contract.upgrade).
    timed: tuple[TimedPair, ...] = ()

    @property
    def verdict(self):  # the name reports use for a case's rule
        return self.rule

    def to_data(self) -> dict:
        data = asdict(self)
        data["rule"] = rule_to_data(self.rule) if self.rule is not None else None
        data["claims"] = [c.to_data() for c in self.claims]
        data["timed"] = [t.to_data() for t in self.timed]
        return data

    @classmethod
    def from_data(cls, data: Mapping) -> CaseInfo:
        if not isinstance(data, Mapping) or "id" not in data:
            raise RecordError("a cases{} entry has no id")
        rule = data.get("rule")
        return cls(
            id=str(data["id"]),
            tier=data.get("tier"),
            technique=str(data.get("technique", "")),
            claim=str(data.get("claim", "")),
            source=str(data.get("source", "")),
            rule=rule_from_data(rule) if rule else None,
            declared=bool(data.get("declared", True)),
            gate_tolerance=_fraction(data.get("gate_tolerance"), f"cases[{data['id']}].gate_tolerance"),
            uncompilable=dict(data.get("uncompilable") or {}),
            devices=tuple(str(d) for d in data.get("devices") or ()),
            claims=_claims_from_data(data.get("claims"), str(data["id"])),
            timed=_timed_from_data(data.get("timed"), str(data["id"])),
        )

    def timed_in(self, part: str) -> list[tuple[str, str, str]]:
        """(fast, slow, against) of the pairs the case declared for `part` ("" its own comparison)."""
        return [(t.fast, t.slow, t.against) for t in self.timed if t.part == part]


def _object(value, where: str) -> Mapping | None:
    if value is not None and not isinstance(value, Mapping):
        raise RecordError(f"{where} is {value!r:.30}, not an object")
    return value


def _fraction(value, where: str) -> float | None:
    """A tolerance: None, or a number in (0, 1). NaN would turn the gate off (every comparison with
    it false), 1 or more allows any drop, 0 or less none at all."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise RecordError(f"{where} is {value!r:.30}; a tolerance is a number in (0, 1)")
    return float(value)


@dataclass(frozen=True)
class TimedPair:
    """Two variants of one comparison timed side by side: `fast` the way expected to win, `slow`
    the way it is measured against; `against` says what the pair decides ("rule": the verdict's
    pair, "context": a better way the catalogue adds, reported and gated but deciding nothing on
    its own)."""

    part: str
    fast: str
    slow: str
    against: str = "rule"

    def to_data(self) -> dict:
        return asdict(self)

    @classmethod
    def from_data(cls, data, where: str) -> TimedPair:
        if not isinstance(data, Mapping) or not all(isinstance(data.get(k), str) for k in ("fast", "slow")):
            raise RecordError(f"{where} is {data!r:.60}; a timed pair names its fast and slow variants")
        against = data.get("against", "rule")
        if against not in ("rule", "context"):
            raise RecordError(f"{where}.against is {against!r:.30}; it is rule or context")
        return cls(str(data.get("part", "")), data["fast"], data["slow"], against)


def _timed_from_data(data, case_id: str) -> tuple[TimedPair, ...]:
    if not data:
        return ()
    if not isinstance(data, list):
        raise RecordError(f"cases[{case_id}].timed is not a list")
    return tuple(TimedPair.from_data(t, f"cases[{case_id}].timed[{i}]") for i, t in enumerate(data))


def _claims_from_data(data, case_id: str) -> tuple[Claim, ...]:
    if not data:
        return ()
    if not isinstance(data, list):
        raise RecordError(f"cases[{case_id}].claims is not a list")
    claims = tuple(Claim.from_data(c) for c in data)
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise RecordError(f"cases[{case_id}].claims: a claim id repeats ({ids})")
    return claims


@dataclass(frozen=True)
class RunInfo:
    profile: str = ""
    devices: tuple[str, ...] = ()
    seed: int | None = None
    partial: bool = False  # cut short (interrupted, time limit): holds only the points that finished
    partial_reason: str = ""
    schema_version: int = SCHEMA_VERSION
    # The catalogue's δ floor when the run was written (harness.contract.gain.DELTA_FLOOR): a file
    # judged again later is judged with it, so a changed floor never re-judges old files silently.
    # 0.05 in files written before it was recorded, the floor then.
    delta_floor: float = 0.05
    # A shard of a run (pytest suite --shard K/N: K, N, attempt, manifest hash, its node IDs, the
    # machine key; suite/shard_plugin.py), or the shards a merged run came from (reports.merge).
    # Absent (None) in a whole run.
    shard: Mapping[str, Any] | None = None
    merged: Mapping[str, Any] | None = None

    def to_data(self) -> dict:
        data = asdict(self)
        data["devices"] = list(self.devices)
        for name in ("shard", "merged"):
            if data[name] is None:
                del data[name]
        return data

    @classmethod
    def from_data(cls, data: Mapping | None) -> RunInfo:
        data = data or {}
        version = data.get("schema_version", LEGACY_VERSION)
        if not isinstance(version, int) or isinstance(version, bool) or version < LEGACY_VERSION:
            raise RecordError(
                f"results schema version {version!r:.30} is not a version number (1 to {SCHEMA_VERSION})"
            )
        if version > SCHEMA_VERSION:
            raise RecordError(
                f"results schema version {version!r} is newer than this reader's ({SCHEMA_VERSION}); "
                f"update the suite to read it"
            )
        return cls(
            profile=str(data.get("profile", "")),
            devices=tuple(data.get("devices") or ()),
            seed=data.get("seed"),
            partial=bool(data.get("partial", False)),
            partial_reason=str(data.get("partial_reason", "")),
            schema_version=version,
            delta_floor=_fraction(data.get("delta_floor", 0.05), "suite.delta_floor"),
            shard=data.get("shard") if isinstance(data.get("shard"), Mapping) else None,
            merged=data.get("merged") if isinstance(data.get("merged"), Mapping) else None,
        )


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
    cases = {cid: CaseInfo.from_data(entry) for cid, entry in cases_data.items()}
    outcomes_data = doc.get("outcomes") or []
    if not isinstance(outcomes_data, list):
        raise RecordError("'outcomes' is not a list")
    pairs_data = doc.get("pairs") or []
    if not isinstance(pairs_data, list):
        raise RecordError("'pairs' is not a list")
    return Run(
        info,
        cases,
        [Outcome.from_data(o) for o in outcomes_data],
        [PairTiming.from_data(p) for p in pairs_data],
    )
