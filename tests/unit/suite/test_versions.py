"""`python -m suite.versions` (suite/versions.py): its arguments refused in one line, the runs
alternated A, B, A, B, an environment that cannot be made named, and the comparison written from runs
already on disk."""

from __future__ import annotations

import sys

import pytest

from suite import versions
from tests import synthetic


def test_targets_are_versions_or_labelled_interpreters(tmp_path):
    python = sys.executable
    assert versions.parse_targets(["2.13.0", f"mine={python}"]) == [("2.13.0", None), ("mine", python)]
    for bad in (["2.13.0"], ["2.13.0", "2.13.0"], ["latest", "2.13.0"], ["x=/no/such/python", "2.13.0"]):
        with pytest.raises(versions.Refused):
            versions.parse_targets(bad)


def test_runs_alternate_between_versions():
    assert versions.schedule(["a", "b"], 3) == [(0, "a"), (0, "b"), (1, "a"), (1, "b"), (2, "a"), (2, "b")]


def test_an_environment_that_cannot_be_made_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(versions.shutil, "which", lambda name: None)  # the venv + pip path
    monkeypatch.setattr(versions.sys, "executable", "/bin/false")
    code = versions.main(["0.0.1", "0.0.2", "--envs", str(tmp_path / "envs"), "--out", str(tmp_path / "out")])
    assert code == 2 and "torch 0.0.1" in capsys.readouterr().err


def test_one_run_a_version_is_refused(capsys):
    with pytest.raises(SystemExit):
        versions.main(["2.13.0", "2.14.1", "--alternations", "1"])


def test_the_comparison_is_written_from_the_runs_on_disk(tmp_path, capsys):
    """Two labels' runs (synthetic distance.pairwise, the later with its fast variant 2× slower):
    the pairs read changed and the ID with them; the three tables are written."""
    out = tmp_path / "out"
    for label, slow in (("old", 1.0), ("new", 2.0)):
        (out / label).mkdir(parents=True)
        for i in range(3):
            doc = synthetic.result(seed=10 * i + (label == "new"), paired=True, slow={"fast_v": slow})
            synthetic.write(out / label / f"run{i}.json", doc)
    code = versions.main(
        ["old=" + sys.executable, "new=" + sys.executable, "--out", str(out), "--compare-only"]
    )
    printed = capsys.readouterr().out
    assert code == 0 and "1 of 1 IDs changed between old and new" in printed, printed
    assert {p.name for p in out.glob("versions-*.csv")} == {
        "versions-claims.csv",
        "versions-pairs.csv",
        "versions-errata.csv",
        "versions-ids.csv",
    }
