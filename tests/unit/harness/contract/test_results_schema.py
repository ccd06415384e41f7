"""The results file's schema (harness/contract/results.schema.json, checked by
harness/contract/results_schema.py): it is the contract's own (its enums and rule keywords are
record.py's), every committed results file and what the writers write fits it, and a field of the
wrong type, anywhere, is bad input: ``python -m reports build`` exits 2 with one line naming the
file and the field's JSON path, never 4, never a traceback; plan.estimate's reader names it too."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
import time

import pytest

from harness.contract import record, results_schema, rules
from plan import estimate
from reports import plots
from reports.__main__ import main
from tests import paths, synthetic

ROOT = paths.ROOT

# ---- the schema is the contract's --------------------------------------------------------------


def _defs() -> dict:
    return results_schema.schema()["$defs"]


def test_the_schema_is_a_draft_2020_12_schema_shipped_in_the_package():
    from jsonschema import Draft202012Validator

    schema = results_schema.schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    package_data = pyproject.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    assert 'harness = ["contract/results.schema.json"]' in package_data
    assert results_schema.SCHEMA_PATH == ROOT / "harness" / "contract" / "results.schema.json"


def test_the_enums_and_versions_are_records():
    defs = _defs()
    assert defs["verdict"]["enum"] == [v.value for v in record.Verdict] + [None]
    assert defs["erratumKind"]["enum"] == [k.value for k in record.ErratumKind]
    assert {k.value for k in record.LEGACY_KINDS} <= set(defs["erratumKind"]["enum"])
    assert defs["claimKind"]["enum"] == [k.value for k in record.ClaimKind]
    assert tuple(defs["outcomeValue"]["enum"]) == record.OUTCOMES
    version = defs["suite"]["properties"]["schema_version"]
    assert (version["minimum"], version["maximum"]) == (record.LEGACY_VERSION, record.SCHEMA_VERSION)


def test_each_rule_keyword_is_its_rule_classes_field():
    """A rule is read by calling its class with the file's keys: a key the class lacks was a
    TypeError (exit 4). The schema names exactly each class's fields."""
    known = _defs()["rule"]["properties"]["rule"]["enum"]
    assert set(known) == set(record._RULES)
    branches = {}
    for branch in _defs()["rule"]["allOf"]:
        names = branch["if"]["properties"]["rule"]
        for name in names.get("enum", [names.get("const")]):
            branches[name] = set(branch["then"]["properties"]) - {"rule"}
    for name, cls in record._RULES.items():
        assert branches[name] == {f.name for f in dataclasses.fields(cls)}, name


# ---- what exists fits ---------------------------------------------------------------------------


_document = paths.read_document
COMMITTED = paths.COMMITTED_RESULTS


def test_there_are_committed_results_files():
    assert len(COMMITTED) >= 5 and any(p.name.endswith(".json.gz") for p in COMMITTED)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_results_file_fits(path):
    assert results_schema.problem(_document(path)) is None


def test_every_declared_case_fits():
    """What the writer records of every case in the catalogue (rules, claims, timed pairs)."""
    from cases import all_cases
    from harness.contract.declared import case_infos

    doc = synthetic.result(
        schema_version=record.SCHEMA_VERSION,
        cases_info={cid: info.to_data() for cid, info in case_infos(all_cases()).items()},
    )
    assert results_schema.problem(json.loads(json.dumps(doc))) is None


def test_the_synthetic_runs_the_reports_tests_use_fit():
    for doc in (
        synthetic.result(),
        synthetic.result(paired=True, busy="loadavg 3.1", identical=True),
        synthetic.result(devices=("cpu", "cuda"), dtypes=("float32", "bfloat16"), peak=False),
        synthetic.with_timing_modes(synthetic.result(), {"cold_l2": 1.2, "graph": 0.9}),
    ):
        assert results_schema.problem(json.loads(json.dumps(doc))) is None


# ---- a document with every field the readers use ------------------------------------------------


def _case_info() -> dict:
    info = record.CaseInfo(
        id="distance.pairwise",
        tier=1,
        technique="pairwise distances by matmul",
        claim="the matmul form is faster",
        source="003 distances",
        rule=rules.AllOf(
            (
                rules.Faster(fast="fast_v", slow="naive_v", claim="speed"),
                rules.Lighter(light="fast_v", heavy="naive_v", claim="memory"),
                # NotFaster's keywords: test_each_rule_keyword_is_its_rule_classes_field and
                # test_a_not_faster_rule_builds.
                rules.AnyOf((rules.NotLighter("fast_v", "naive_v"), rules.FromFindings())),
                rules.FromFindings(),
            )
        ),
        gate_tolerance=0.1,
        uncompilable={"naive_v": "a Python loop"},
        devices=("cpu",),
        claims=(
            record.Claim(
                "speed", "the matmul form is faster", "003", record.ClaimKind.SPEED, (), ("fast_v",)
            ),
            record.Claim(
                "memory",
                "it is lighter",
                "003",
                record.ClaimKind.MEMORY,
                ("masks",),
                (),
                reading="peaks lower",
            ),
        ),
        timed=(record.TimedPair("", "fast_v", "naive_v"),),
    )
    return info.to_data()


def full_document() -> dict:
    """A schema-4 run holding every field the schema names, as the writers write them."""
    doc = synthetic.result(
        variants=(("naive_v", "naive", 4.0), ("fast_v", "optimized", 1.0)),
        sizes=(128,),
        paired=True,
        schema_version=record.SCHEMA_VERSION,
        cases_info={"distance.pairwise": _case_info()},
    )
    doc = json.loads(json.dumps(doc))  # nothing shared between two places
    torch_info = doc["machine_info"]["torch"]
    torch_info.update(
        threads=2,
        driver_version="",
        ceilings={"cpu": {"fp32_flops": 3.4e11, "bf16_flops": 2.1e12, "copy_bytes_per_s": 2.7e10}},
        noise_floor={"cpu": {"floor": 0.01, "rounds": 40, "load": {"busy": ""}, "timer": "perf_counter"}},
        allocator={
            "transparent_hugepages": "madvise",
            "pinned": True,
            "library": "glibc 2.39",
            "mmap_threshold": 2**25,
            "trim_threshold": 2**26,
        },
    )
    torch_info["gpu"].update(name="", driver="")
    torch_info["cpu_detail"].update(logical_cores=2, torch_threads=2, capability="AVX2")
    doc["machine_info"]["node"] = "synthetic"
    doc["commit_info"].update(branch="main", dirty=False, time="2026-01-01T00:00:00+00:00", project="main")
    doc["suite"].update(partial=False, partial_reason="", delta_floor=0.05)
    for bench in doc["benchmarks"]:
        info = bench["extra_info"]
        bench.update(param=f"{info['case']}-{info['variant']}-n128-float32-cpu", params={}, options={})
        info.update(part="", compiled_from="", timing_mode="warm", ceiling_key="fp32_flops", compile_s=0.5)
        info["faulted_pages"] = {"median_s": 2e-3, "iqr_s": 1e-4, "busy": ""}
    doc["benchmarks"][0]["extra_info"]["points"] = [
        {"algorithm": "ring", "bytes": 1024.0, "measured_s": 1e-4, "model_s": 1.2e-4}
    ]
    doc["outcomes"].append(
        record.Outcome(
            case="distance.pairwise",
            kind="check",
            name="masks",
            device="cpu",
            nodeid="suite/test_cases.py::test_rule[distance.pairwise-masks-cpu]",
            outcome="failed",
            reason="AssertionError: off by one",
            error_type="AssertionError",
            finding=record.Finding(
                record.Verdict.HOLDS,
                "equal to the loop",
                (record.Erratum(record.ErratumKind.TYPO, "torch.cdsit", "no such name", "003", 12),),
            ),
            measured={"world_size": 2, "step_s": 0.01, "t1_s": 0.018, "scaling_efficiency": 0.9},
        ).to_data()
    )
    for pair in doc["pairs"]:
        pair.update(part="", iterations={"fast_v": 1, "naive_v": 1}, timer="perf_counter")
    return doc


FULL = full_document()


def test_the_full_document_fits_and_builds(tmp_path, capsys):
    assert results_schema.problem(copy.deepcopy(FULL)) is None
    path = tmp_path / "full.json"
    path.write_text(json.dumps(FULL))
    assert main(["build", str(path), "--out", str(tmp_path / "out")]) == 0, capsys.readouterr().err


def test_a_not_faster_rule_builds(tmp_path, capsys):
    """The report's advice read `.premise` of every speed rule; NotFaster (precision.amp's hedge)
    has none, and the build exited 4."""
    doc = copy.deepcopy(FULL)
    doc["cases"]["distance.pairwise"]["rule"] = rules_data = record.rule_to_data(
        rules.AnyOf((rules.NotFaster("fast_v", "naive_v"), rules.NotLighter("fast_v", "naive_v")))
    )
    assert results_schema.problem(doc) is None, rules_data
    path = tmp_path / "not_faster.json"
    path.write_text(json.dumps(doc))
    assert main(["build", str(path), "--out", str(tmp_path / "out")]) == 0, capsys.readouterr().err


# ---- every field of the wrong type --------------------------------------------------------------


def _nodes(value, path=()):
    yield path, value
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _nodes(inner, (*path, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _nodes(inner, (*path, i))


def _kind(path) -> tuple:
    """A field as the schema sees it: any list item, any case ID."""
    return tuple(
        "*" if isinstance(p, int) or (i == 1 and path[0] == "cases") else p for i, p in enumerate(path)
    )


def _fields(doc) -> list[tuple]:
    """The first place of each field in `doc` (every object key, list item and container)."""
    seen, out = set(), []
    for path, _ in _nodes(doc):
        if path and _kind(path) not in seen:
            seen.add(_kind(path))
            out.append(path)
    return out


FIELDS = _fields(FULL)


def _json_type(value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object", type(None): "null"}[type(value)]


WRONG = {  # a value of each other JSON type
    "text": "wrong",
    "a list": [1.0],
    "an object": {"k": 1.0},
    "null": None,
    "true": True,
    "an int above 1e308": 10**400,
}
IMPOSSIBLE = {"NaN": math.nan, "infinity": math.inf}  # where a number belongs


def _wrong_values(value) -> dict:
    """The values of another JSON type than `value`; for a number, the impossible ones too (and
    for an integer one beyond 64 bits, for one ≥ 0 a negative one)."""
    kind = _json_type(value)
    out = {name: w for name, w in WRONG.items() if _json_type(w) != kind}
    if kind == "number":
        out.update(IMPOSSIBLE, **{"an int above 1e308": 10**400})
        if isinstance(value, int):
            out["an int beyond 64 bits"] = 2**64
        if value >= 0:
            out["a negative number"] = -1
    return out


def _replaced(doc, path, value) -> dict:
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


def _build(tmp_path, capsys, doc) -> tuple[int, str]:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))  # NaN and Infinity as Python writes them
    code = main(["build", str(path), "--out", str(tmp_path / "out")])
    return code, capsys.readouterr().err


def test_every_field_is_walked():
    walked = {results_schema.json_path(p) for p in FIELDS}
    for expected in (
        "machine_info.torch.ceilings.cpu.copy_bytes_per_s",
        "machine_info.torch.allocator.mmap_threshold",
        "benchmarks[0].stats.data[0]",
        "benchmarks[0].extra_info.faulted_pages.median_s",
        "benchmarks[0].extra_info.points[0].model_s",
        "cases['distance.pairwise'].rule.rules[2].rules[0].heavy",
        "cases['distance.pairwise'].claims[0].reading",
        "cases['distance.pairwise'].timed[0].against",
        "outcomes[2].finding.errata[0].line",
        "outcomes[2].measured.world_size",
        "pairs[0].fast_s[0]",
        "suite.schema_version",
    ):
        assert expected in walked, expected


@functools.lru_cache(maxsize=None)
def _plain():
    """jsonschema's own draft 2020-12 validator of the schema, numbers finite, nothing checked in
    place: what results_schema's quicker one must agree with (it takes 3.6 s, not 0.1, on the
    5.2 MB reference run)."""
    from jsonschema import Draft202012Validator, validators

    finite = Draft202012Validator.TYPE_CHECKER.redefine("number", results_schema._finite_number)
    return validators.extend(Draft202012Validator, type_checker=finite)(results_schema.schema())


@pytest.mark.parametrize("where", FIELDS, ids=results_schema.json_path)
def test_a_wrong_type_is_bad_input_naming_the_field(tmp_path, capsys, monkeypatch, where):
    """Each wrong value the schema refuses: exit 2, one line, the file and the field's path. Each
    it allows (null where a field may be absent, a list where any list will do): no exit 4."""
    original = FULL
    for key in where:
        original = original[key]
    # A value the schema allows is built into a whole report, its PNGs but drawn: what reaches
    # the figures is the report's, the rendering matplotlib's (2 s of each build here).
    monkeypatch.setattr(plots, "_png", lambda fig: b"")
    for name, value in _wrong_values(original).items():
        doc = _replaced(FULL, where, value)
        code, err = _build(tmp_path, capsys, doc)
        assert code in (0, 2) and "Traceback" not in err, (name, err)
        fits = results_schema.problem(doc) is None
        assert fits == _plain().is_valid(doc), (name, "the quick checks decide as jsonschema does")
        if fits:
            continue
        field = results_schema.json_path(where)
        assert code == 2 and err.startswith(f"reports: {tmp_path / 'run.json'}: "), (name, err)
        assert err.count("\n") == 1 and field in err, (name, field, err)


@pytest.mark.parametrize(
    "where, value, field",
    [
        (
            ("cases", "distance.pairwise", "rule", "rules", 0, "fastest"),
            "fast_v",
            "has an unknown key 'fastest'",
        ),
        (("pairs", 0, "fast_s", 2), "0.001", "pairs[0].fast_s[2] is '0.001'"),
        (("benchmarks", 1, "stats", "rounds"), 2**63, "benchmarks[1].stats.rounds"),
    ],
    ids=["a rule keyword", "a round as text", "rounds beyond 64 bits"],
)
def test_the_gate_and_the_history_name_the_field_too(tmp_path, capsys, where, value, field):
    """`python -m reports gate` and `history add` read through the same loader: exit 2, not 4."""
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(FULL))
    bad.write_text(json.dumps(_replaced(FULL, where, value)))
    for argv in (
        ["gate", "--baseline", str(good), "--current", str(bad)],
        ["gate", "--baseline", str(bad), "--current", str(good)],
        ["history", "add", str(bad), "--history", str(tmp_path / "history.sqlite")],
    ):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2 and err.startswith(f"reports: {bad}: ") and field in err, (argv, err)
        assert err.count("\n") == 1, err


def test_a_field_of_the_wrong_type_is_named_by_the_estimate_too(tmp_path):
    for where, value, field in (
        (("benchmarks", 1, "stats", "data", 3), "x", "benchmarks[1].stats.data[3]"),
        (("benchmarks", 0, "extra_info", "compile_s"), -2, "benchmarks[0].extra_info.compile_s"),
        (("pairs", 0, "slow_s"), [], "pairs[0].slow_s is an empty list"),
        (("cases", "distance.pairwise", "rule", "rules", 0, "min_speedup"), "1", "rules[0].min_speedup"),
    ):
        path = tmp_path / "run.json"
        path.write_text(json.dumps(_replaced(FULL, where, value)))
        with pytest.raises(estimate.BadReference) as raised:
            estimate.read_results(path)
        assert str(raised.value).startswith(f"{path}: ") and field in str(raised.value)
        assert "\n" not in str(raised.value)


def test_an_integer_of_5000_digits_is_bad_input_not_a_crash(tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(FULL).replace('"seed": 0', '"seed": ' + "9" * 5000))
    code = main(["build", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and str(path) in err and err.count("\n") == 1, err
    with pytest.raises(estimate.BadReference):
        estimate.read_results(path)


# ---- its cost -----------------------------------------------------------------------------------


@pytest.mark.timing
def test_the_largest_committed_run_is_checked_in_a_fraction_of_its_parse():
    """The reference run of 5.2 MB (255 benchmarks, 70,000 rounds, 631 outcomes): 0.10-0.13 s on
    the 2-core session machine under load, against 0.06-0.13 s to parse it (jsonschema's own
    validator: 3.6 s). Bounded loosely: a shared machine."""
    largest = max(COMMITTED, key=lambda p: len(_document(p)["benchmarks"]))
    doc = _document(largest)
    results_schema.validator()  # made once per process
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        assert results_schema.problem(doc) is None
        best = min(best, time.perf_counter() - start)
    assert best < 2.0, best
