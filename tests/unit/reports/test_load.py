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
    "an int above 1e308": (("benchmarks", 0, "stats", "median"), 10**400, "impossible time"),
    "a negative median": (("benchmarks", 0, "stats", "median"), -1e-3, "impossible time"),
    "a zero copy ceiling": (
        ("machine_info", "torch", "ceilings"),
        {"cpu": {"fp32_flops": 2e12, "copy_bytes_per_s": 0}},
        "copy_bytes_per_s",
    ),
    "a size that is text": (("benchmarks", 0, "extra_info", "size"), "n128", "extra_info.size"),
    "a negative peak": (("benchmarks", 0, "extra_info", "peak_bytes"), -5, "extra_info.peak_bytes"),
    "a schema version as text": (("suite", "schema_version"), "2", "not a version number"),
    "a future schema": (("suite", "schema_version"), 99, "newer than this reader"),
    "an unknown outcome": (("outcomes", 0, "outcome"), "exploded", "outcome 'exploded'"),
    "a case that is a list": (("benchmarks", 0, "extra_info", "case"), ["a"], "extra_info.case"),
    "a zero paired round": (("pairs", 0, "fast_s"), [0.0] * 20, "not positive and finite"),
    "an unknown erratum kind": (
        ("outcomes", 0, "finding"),
        {"verdict": "holds", "evidence": "e", "errata": [{"kind": "vibes", "quote": "q", "evidence": "e"}]},
        "erratum kind 'vibes'",
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
