"""What the gate writes (reports/gate/text.py): the single-run baseline note, and the suspects file (an
unwritable one is bad input, not a regression)."""

from __future__ import annotations

from tests import synthetic
from tests.gate_cli import run_gate
from tests.synthetic import write


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


def test_the_suspects_are_a_valid_k_expression_when_a_line_names_no_case():
    """The gate's "judged no pair" line has no case: the expression began with " or " and the
    workflow's recheck step died with a pytest usage error."""
    from _pytest.mark.expression import Expression

    from reports.gate.lines import REGRESSED, UNJUDGED, Line
    from reports.gate.text import suspects

    lines = [
        Line("", "", "", "", verdict=UNJUDGED, note="judged no pair"),
        Line("layernorm.manual", "rows2048-d2048", "float32 cpu", "a ÷ b", verdict=REGRESSED),
    ]
    expression = suspects(lines)
    assert expression == "(layernorm.manual and rows2048-d2048)"
    Expression.compile(expression)  # what `pytest -k` does with it
