"""The results contract (harness/contract/record.py): every declared rule, outcome, finding and point key
round-trips as data, and so does every record of every committed results file; every field a record
checks refuses a value that does not fit, naming it; unknown rules and newer schemas are one-line
errors, a schema-1 file still loads, and only the phase that decides a test is its outcome."""

import json
from types import SimpleNamespace

import pytest

from cases import all_cases
from harness.contract import catalogue, codec, record, rules, upgrade
from tests import paths

ROOT = paths.ROOT
DATA = ROOT / "tests" / "data"


def test_every_declared_rule_round_trips_as_data():
    from harness.contract.declared import case_infos

    declared = case_infos(all_cases())
    assert len(declared) == len(catalogue.load()) and {c.id for c in all_cases()} <= set(declared)
    for info in declared.values():
        back = record.CaseInfo.from_data(json.loads(json.dumps(info.to_data())))
        assert back == info, info.id


def test_outcome_and_finding_round_trip_and_keep_the_old_keys():
    o = record.Outcome(
        case="a.b",
        kind="check",
        name="c",
        device="cpu",
        outcome="failed",
        reason="boom",
        error_type="AssertionError",
        finding=record.Finding(record.Verdict.DEPENDS, "no AMX"),
    )
    data = json.loads(json.dumps(o.to_data()))
    assert data["check"] == "c" and "variant" not in data  # the keys schema-1 readers used
    assert record.Outcome.from_data(data) == o


def test_unknown_rule_and_newer_schema_are_one_line_errors():
    with pytest.raises(record.RecordError, match="unknown verdict rule 'Quicker'"):
        record.rule_from_data({"rule": "Quicker"})
    with pytest.raises(record.RecordError, match="schema version 99 is newer"):
        record.read_run(upgrade.to_current({"suite": {"schema_version": 99}}))
    # The records are the current version's: an older document is read through the upgrade.
    with pytest.raises(record.RecordError, match="through harness.contract.upgrade.to_current"):
        record.read_run({"suite": {"profile": "quick"}})
    assert record.read_run(upgrade.to_current({"suite": {"profile": "quick"}})).info.schema_version == 4


def test_a_schema_1_file_still_loads_and_builds(tmp_path):
    from reports import build, load

    old = DATA / "distance_cpu_run1.json"
    assert "schema_version" not in json.loads(old.read_text()).get("suite", {})
    results = load.load([old])
    assert not results.rows.empty and results.runs["schema_version"].tolist() == [1]
    index = build.build([old], tmp_path / "out").read_text()
    assert index.count('<section class="case"') == len(catalogue.load())


def test_a_points_key_round_trips_and_builds_its_records():
    """One description per point: what the test records (`Outcome`) and what a timed variant
    records (`BenchmarkInfo`) are both built from its key, field for field."""
    key = record.PointKey(
        case="memory.checkpoint",
        kind="variant",
        name="compiled",
        device="cuda",
        role="compiled",
        size={"depth": 8},
        size_label="mlp-depth8",
        dtype="float32",
        part="mlp",
        timing_mode="graph",
        compiled_from="mlp.plain",
    )
    assert record.PointKey.from_data(key.to_data()) == key
    check = record.PointKey(case="shape.ops", kind="check", name="view_rules", device="cpu")
    assert check.to_data() == {"case": "shape.ops", "kind": "check", "check": "view_rules", "device": "cpu"}
    crash = SimpleNamespace(reprcrash=SimpleNamespace(message="AssertionError: off"))
    outcome = record.Outcome.of_report(_report("call", "failed", crash, point=key.to_data()))
    assert (outcome.case, outcome.name, outcome.part, outcome.timing_mode, outcome.error_type) == (
        "memory.checkpoint",
        "compiled",
        "mlp",
        "graph",
        "AssertionError",
    )
    info = record.BenchmarkInfo.of(key, tier=1)
    assert (info.variant, info.size_label, info.compiled_from, info.tier) == (
        "compiled",
        "mlp-depth8",
        "mlp.plain",
        1,
    )
    assert record.BenchmarkInfo.split(info.to_data())[0] == info


def _report(when, outcome, longrepr=None, **properties):
    """What the recorder reads of pytest's TestReport."""
    return SimpleNamespace(
        when=when, outcome=outcome, longrepr=longrepr, nodeid="n", user_properties=list(properties.items())
    )


def test_only_the_phase_that_decides_a_test_is_its_outcome():
    point = record.PointKey(case="onehot.encode", kind="check", name="rule", device="cpu").to_data()
    skip = ("suite/x.py", 3, "Skipped: needs CUDA")
    decided = {
        ("setup", "passed"): None,
        ("setup", "skipped"): "needs CUDA",
        ("call", "passed"): "",
        ("teardown", "passed"): None,
        ("teardown", "failed"): "RuntimeError: leaked",
    }
    for (when, outcome), reason in decided.items():
        longrepr = (
            skip if outcome == "skipped" else SimpleNamespace(reprcrash=SimpleNamespace(message=reason))
        )
        got = record.Outcome.of_report(_report(when, outcome, longrepr, point=point))
        assert (got.reason if got else None) == reason, (when, outcome)
    assert record.Outcome.of_report(
        _report("teardown", "failed", "RuntimeError: leaked", point=point)
    ).error_type == ("RuntimeError")
    assert (
        record.Outcome.of_report(_report("call", "failed", "no colon here", point=point)).error_type
        == "Failed"
    )
    assert record.Outcome.of_report(_report("call", "passed")) is None  # not a suite point: not recorded


# ---- every record reads back what it wrote, in every committed results file ----------------------


_document = paths.read_document
COMMITTED = paths.COMMITTED_RESULTS


def _records(doc) -> list[tuple[object, dict]]:
    """(the record read, the data it was read from) for every record of a results document, read
    in the current schema (an older one through the upgrade, as reports.load reads it)."""
    doc = upgrade.to_current(doc)
    run = record.read_run(doc)
    found = [(run.info, doc.get("suite") or {})]
    found += [(run.cases[cid], data) for cid, data in (doc.get("cases") or {}).items()]
    found += list(zip(run.outcomes, doc.get("outcomes") or []))
    found += list(zip(run.pairs, doc.get("pairs") or []))
    for bench in doc["benchmarks"]:
        split = record.BenchmarkInfo.split(bench.get("extra_info") or {})
        if split is not None:
            found.append((split[0], {k: v for k, v in bench["extra_info"].items() if k not in split[1]}))
    return found


def _read(cls, data):
    return cls.split(data)[0] if cls is record.BenchmarkInfo else cls.from_data(data)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_record_of_a_committed_file_reads_back_what_it_writes(path):
    """A record written and read again is the same record, and writes the same data: a file read
    and written again (reports.merge) keeps every key it had, with its value; files of older
    schemas gain the keys added since, with their defaults."""
    records = _records(_document(path))
    assert records
    for thing, data in records:
        written = json.loads(json.dumps(thing.to_data()))
        again = _read(type(thing), written)
        assert again == thing, (path.name, data)
        assert again.to_data() == thing.to_data()
        assert _kept(data, written), (path.name, data)


def _kept(old, new) -> bool:
    """Everything `old` holds is in `new` as it was (a record may have gained keys since)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and _kept(v, new[k]) for k, v in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and len(old) == len(new) and all(map(_kept, old, new))
    return old == new and type(old) is type(new)


# ---- every field is checked as it is read ---------------------------------------------------------


def _every_record() -> list:
    """One of each record, every field set."""
    key = record.PointKey(
        case="a.b",
        kind="variant",
        name="v",
        device="cpu",
        role="naive",
        size={"n": 4},
        size_label="n4",
        dtype="float32",
        part="p",
        timing_mode="graph",
        compiled_from="w",
    )
    erratum = record.Erratum(record.ErratumKind.TYPO, "torch.onehot", "no such name", "003", 12)
    finding = record.Finding(record.Verdict.FAILS, "observed", (erratum,))
    claim = record.Claim("faster", "q", "001", record.ClaimKind.SPEED, ("c",), ("v",), "r", "s")
    timed = record.TimedPair("p", "fast", "slow", "context")
    rule = rules.Faster("fast", "slow")
    pair = record.PairTiming.at(
        key,
        fast="fast",
        slow="slow",
        fast_s=(1e-3, 2e-3),
        slow_s=(2e-3, 3e-3),
        against="context",
        x="n",
        identical=True,
        noise_floor=0.01,
        load={"loadavg": 0.5},
        iterations={"fast": 4},
        timer="perf_counter",
        gap_s={"fast": -1e-7},
        graph_s={"fast": 1e-6},
        graph_calls={"fast": 32},
        graph_skipped={"slow": "no graph"},
    )
    return [
        key,
        record.Outcome.at(key, nodeid="n", outcome="failed", reason="r", error_type="E", finding=finding),
        record.BenchmarkInfo.of(key, tier=1, x="n", flops=1, bytes=2, peak_bytes=3, max_abs_err=0.1),
        pair,
        record.CaseInfo("a.b", 1, "t", "c", "s", rule, True, 0.1, {"w": "why"}, ("cpu",), (claim,), (timed,)),
        record.RunInfo("quick", ("cpu",), 0, True, "cut", shard={"k": 1}, merged={"from": []}),
        claim,
        erratum,
        finding,
        timed,
    ]


# Fields taken as they are written: a number the reports only show, or a yes/no read as Python's
# truth (files written before these were checked hold other values).
UNCHECKED = {"RunInfo": {"seed", "schema_version", "partial"}, "CaseInfo": {"tier", "declared"}}


def _keys() -> list[tuple[object, str]]:
    """(a record, one of its JSON keys) for every key of every record, but those `UNCHECKED`."""
    return [
        (thing, key)
        for thing in _every_record()
        for key in thing.to_data()
        if key not in UNCHECKED.get(type(thing).__name__, ())
    ]


def test_every_record_round_trips_with_every_field_set():
    for thing in _every_record():
        assert _read(type(thing), json.loads(json.dumps(thing.to_data()))) == thing


@pytest.mark.parametrize("thing, key", _keys(), ids=lambda x: x if isinstance(x, str) else type(x).__name__)
def test_every_field_refuses_a_value_that_does_not_fit_naming_itself(thing, key):
    """A value no field holds (a list of a list) is refused, naming the field: a field whose check
    were dropped would take it silently. Every record's every key is tried, so a field added
    without a check is caught too."""
    data = {**thing.to_data(), key: [[]]}
    with pytest.raises(record.RecordError, match=rf"^here\.{key}\b"):
        codec.decode(type(thing), data, "here")


def test_a_case_whose_claim_ids_repeat_is_refused_where_it_is():
    claim = record.Claim("faster", "q", "001", record.ClaimKind.SPEED).to_data()
    data = {"id": "a.b", "tier": 1, "claims": [claim, claim]}
    with pytest.raises(record.RecordError, match=r"^cases\[a\.b\]: claims: a claim id repeats"):
        record.read_run({"suite": {"schema_version": record.SCHEMA_VERSION}, "cases": {"a.b": data}})
