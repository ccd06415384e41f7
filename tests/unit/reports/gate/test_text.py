"""What the gate writes (reports/gate/text.py): the single-run baseline note, and the suspects file (an
unwritable one is bad input, not a regression)."""

from __future__ import annotations

import json
from pathlib import Path

from reports.__main__ import main
from tests import synthetic


def write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def run_gate(capsys, *args) -> tuple[int, str, str]:
    code = main(["gate", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def pooled(tmp_path, name, docs) -> Path:
    """A baseline folder of several runs (the README's recommended baseline)."""
    folder = tmp_path / name
    folder.mkdir()
    for i, doc in enumerate(docs):
        write(folder / f"run{i}.json", doc)
    return folder


def test_a_single_run_baseline_is_warned_about_and_a_pooled_one_is_not(tmp_path, capsys):
    base = tmp_path / "baseline"
    base.mkdir()
    write(base / "a.json", synthetic.result(seed=1))
    current = write(tmp_path / "c.json", synthetic.result(seed=3))
    _, single, _ = run_gate(capsys, "--baseline", base / "a.json", "--current", current)
    assert "baseline holds a single run" in single
    write(base / "b.json", synthetic.result(seed=2))
    code, pooled, _ = run_gate(capsys, "--baseline", base, "--current", current)
    assert code == 0 and "single run" not in pooled


def test_an_unwritable_suspects_file_is_bad_input_not_a_regression(tmp_path, capsys):
    b = write(tmp_path / "b.json", synthetic.result(seed=1))
    c = write(tmp_path / "c.json", synthetic.result(seed=2))
    code, _, err = run_gate(
        capsys, "--baseline", b, "--current", c, "--suspects", tmp_path / "no" / "such" / "dir"
    )
    assert code == 2 and "--suspects" in err
