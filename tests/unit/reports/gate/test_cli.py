"""The gate's command (reports/gate/cli.py): the step summary appended, bad input (a missing or malformed
file, a bad tolerance, impossible times) exit 2 in one line naming the file."""

from __future__ import annotations

import pytest

from tests import synthetic
from tests.gate_cli import run_gate
from tests.synthetic import pooled, write


def test_step_summary_is_appended(tmp_path, capsys, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    b = pooled(tmp_path, "b", [synthetic.result(seed=s) for s in (1, 3, 4)])
    run_gate(capsys, "--baseline", b, "--current", write(tmp_path / "c.json", synthetic.result(seed=2)))
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "### Regression gate: pass" in text


# ---- bad input: exit 2, one line naming the file --------------------------------------------------


def _bad_inputs(tmp_path):
    good = write(tmp_path / "good.json", synthetic.result(seed=1))
    truncated = tmp_path / "truncated.json"
    truncated.write_text(good.read_text()[:500])
    (tmp_path / "other.json").write_text('{"hello": "world"}')
    unrelated = write(tmp_path / "unrelated.json", synthetic.result(cases=("conv.im2col",), seed=1))
    two = synthetic.result(seed=1)
    two["benchmarks"] += synthetic.result(seed=2, machine=dict(synthetic.MACHINE, label="another box"))[
        "benchmarks"
    ]
    folder = tmp_path / "two"
    folder.mkdir()
    write(folder / "a.json", synthetic.result(seed=1))
    write(folder / "b.json", synthetic.result(seed=2, machine=dict(synthetic.MACHINE, label="another box")))
    return good, {
        "missing": (tmp_path / "nope.json", "nope.json: no such file"),
        "truncated": (truncated, "truncated.json: not valid JSON"),
        "not pytest-benchmark": (tmp_path / "other.json", "other.json: not a pytest-benchmark result"),
        "no case in common": (unrelated, "no case in common"),
        "two machines": (folder, "holds results of 2 machines"),
    }


@pytest.mark.parametrize(
    "which", ["missing", "truncated", "not pytest-benchmark", "no case in common", "two machines"]
)
def test_bad_input_exits_2(tmp_path, capsys, which):
    good, bad = _bad_inputs(tmp_path)
    path, message = bad[which]
    code, out, err = run_gate(capsys, "--baseline", good, "--current", path)
    assert code == 2
    assert message in err and err.count("\n") == 1 and out == ""


def test_bad_tolerance_exits_2(tmp_path, capsys):
    good = write(tmp_path / "good.json", synthetic.result(seed=1))
    code, _, err = run_gate(capsys, "--baseline", good, "--current", good, "--tolerance", "1.5")
    assert code == 2 and "--tolerance" in err


@pytest.mark.parametrize("bad", [float("nan"), 0.0, -1e-3, float("inf")])
def test_impossible_times_are_bad_input(tmp_path, capsys, bad):
    doc = synthetic.result(seed=2)
    doc["benchmarks"][0]["stats"]["data"][0] = bad
    doc["benchmarks"][1]["stats"]["median"] = bad
    base = write(tmp_path / "b.json", synthetic.result(seed=1))
    code, out, err = run_gate(capsys, "--baseline", base, "--current", write(tmp_path / "c.json", doc))
    assert code == 2 and out == "" and "positive and finite" in err
