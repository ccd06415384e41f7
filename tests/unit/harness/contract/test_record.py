"""The results contract (harness/contract/record.py): every declared rule, outcome, finding and point key
round-trips as data, unknown rules and newer schemas are one-line errors, a schema-1 file still loads,
and only the phase that decides a test is its outcome."""

import json
from types import SimpleNamespace

import pytest

from cases import all_cases
from harness.contract import catalogue, record
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
        record.read_run({"suite": {"schema_version": 99}})
    assert record.read_run({"suite": {"profile": "quick"}}).info.schema_version == record.LEGACY_VERSION


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
