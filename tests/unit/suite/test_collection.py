"""suite/collection.py: a run's own collection, in process: every test with its catalogue ID and
markers, and none of the run's files written by collecting it."""

from __future__ import annotations

from suite.collection import collect


def test_the_collection_names_each_test_with_its_case_and_markers():
    planned = collect(["-k", "shape.ops"])
    assert planned and {p.case for p in planned} == {"shape.ops"}
    assert all(p.nodeid.startswith("suite/") and p.test for p in planned)


def test_collecting_the_plan_writes_none_of_the_runs_files():
    from suite.collection import without_outputs

    args = [
        "-k",
        "x",
        "--results",
        "r.json",
        "--benchmark-json=b.json",
        "--history",
        "h",
        "--no-history",
        "-q",
    ]
    assert without_outputs(args) == ["-k", "x", "-q"]
