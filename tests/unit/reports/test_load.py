"""A corpus of malformed results files: each one is bad input (one line naming the file and the
field, exit 2), never a traceback, never accepted silently; labels are drawn as text."""

from __future__ import annotations

import copy
import json

import pytest

from reports.__main__ import main
from tests import synthetic

BAD = {
    "a string in stats.data": (("benchmarks", 0, "stats", "data"), ["1e-3", "x"], "stats.data"),
    "a tier of 'one'": (("benchmarks", 0, "extra_info", "tier"), "one", "extra_info.tier"),
    "an int above 1e308": (("benchmarks", 0, "stats", "median"), 10**400, "benchmarks[0].stats.median"),
    "a negative median": (("benchmarks", 0, "stats", "median"), -1e-3, "benchmarks[0].stats.median"),
    "a zero copy ceiling": (
        ("machine_info", "torch", "ceilings"),
        {"cpu": {"fp32_flops": 2e12, "copy_bytes_per_s": 0}},
        "copy_bytes_per_s",
    ),
    "a size that is text": (("benchmarks", 0, "extra_info", "size"), "n128", "extra_info.size"),
    "a negative peak": (("benchmarks", 0, "extra_info", "peak_bytes"), -5, "extra_info.peak_bytes"),
    "a schema version as text": (
        ("suite", "schema_version"),
        "2",
        "suite.schema_version is '2', not an integer",
    ),
    "a future schema": (("suite", "schema_version"), 99, "newer than this reader"),
    "an unknown outcome": (("outcomes", 0, "outcome"), "exploded", "outcomes[0].outcome is 'exploded'"),
    "a case that is a list": (("benchmarks", 0, "extra_info", "case"), ["a"], "extra_info.case"),
    "a zero paired round": (("pairs", 0, "fast_s"), [0.0] * 20, "pairs[0].fast_s[0] is 0.0"),
    "an unknown erratum kind": (
        ("outcomes", 0, "finding"),
        {"verdict": "holds", "evidence": "e", "errata": [{"kind": "vibes", "quote": "q", "evidence": "e"}]},
        "outcomes[0].finding.errata[0].kind is 'vibes'",
    ),
    # The fields the schema (harness/contract/results.schema.json) names that once ended in exit 4.
    "an unknown rule keyword": (
        ("cases",),
        {"distance.pairwise": {"id": "distance.pairwise", "rule": {"rule": "Faster", "fastest": "fast_v"}}},
        "cases['distance.pairwise'].rule has an unknown key 'fastest'",
    ),
    "an AllOf without rules": (
        ("cases",),
        {"distance.pairwise": {"id": "distance.pairwise", "rule": {"rule": "AllOf"}}},
        "cases['distance.pairwise'].rule has no 'rules'",
    ),
    "a size beyond 1e308": (("pairs", 1, "size"), {"n": 10**400}, "pairs[1].size.n"),
    "rounds as text": (("benchmarks", 2, "stats", "rounds"), "20", "benchmarks[2].stats.rounds is '20'"),
    "a NaN paired round": (("pairs", 0, "slow_s"), [1e-3, float("nan")], "pairs[0].slow_s[1] is nan"),
    "an empty finding": (
        ("outcomes", 0, "finding"),
        {"verdict": None, "evidence": ""},
        "outcomes[0].finding",
    ),
    "an erratum line as text": (
        ("outcomes", 0, "finding"),
        {"verdict": "holds", "errata": [{"kind": "typo", "quote": "q", "evidence": "e", "line": "3"}]},
        "outcomes[0].finding.errata[0].line is '3'",
    ),
    "a claim reading as a list": (
        ("cases",),
        {
            "distance.pairwise": {
                "id": "distance.pairwise",
                "claims": [{"id": "c", "quote": "q", "kind": "speed", "reading": ["r"]}],
            }
        },
        "cases['distance.pairwise'].claims[0].reading is ['r'], not text or null",
    ),
    "a measured world size of 2**64": (
        ("outcomes", 0, "measured"),
        {"world_size": 2**64, "scaling_efficiency": 0.9, "step_s": 1.0, "t1_s": 1.0},
        "outcomes[0].measured.world_size",
    ),
}


@pytest.mark.parametrize("name", list(BAD))
def test_malformed_file_is_bad_input(tmp_path, capsys, name):
    path_in_doc, value, field = BAD[name]
    doc = copy.deepcopy(synthetic.result(paired=True))
    target = doc
    for key in path_in_doc[:-1]:
        target = target.setdefault(key, {}) if isinstance(target, dict) else target[key]
    target[path_in_doc[-1]] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    code = main(["build", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"reports: {path}") and err.count("\n") == 1, err
    assert field in err
    assert not (tmp_path / "out").exists()


def test_labels_are_drawn_as_text_not_parsed_as_math(tmp_path, capsys):
    doc = synthetic.result()
    for bench in doc["benchmarks"]:
        bench["extra_info"]["variant"] += "$^$"
    path = tmp_path / "math.json"
    path.write_text(json.dumps(doc))
    assert main(["build", str(path), "--out", str(tmp_path / "out")]) == 0
    assert "naive_v$^$" in (tmp_path / "out" / "index.html").read_text()
