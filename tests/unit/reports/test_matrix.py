"""reports/matrix.py: verdicts side by side per machine (or torch version), differing cells marked,
an ID or claim on one side only listed, never dropped."""

from __future__ import annotations

import pandas as pd

from reports import matrix


def test_technique_matrix_marks_what_differs():
    rows = pd.DataFrame(
        [
            ("a · torch 2.13", "x.one", "holds"),
            ("b · torch 2.14", "x.one", "holds"),
            ("a · torch 2.13", "x.two", "holds"),
            ("b · torch 2.14", "x.two", "fails"),
            ("a · torch 2.13", "x.three", "depends"),
        ],
        columns=["machine", "case", "technique_verdict"],
    )
    out = matrix.technique_matrix(rows).set_index("case")
    assert list(out.columns) == ["a · torch 2.13", "b · torch 2.14", "differs"]
    assert not out.loc["x.one", "differs"] and out.loc["x.two", "differs"]
    assert out.loc["x.three", "differs"] and out.loc["x.three", "b · torch 2.14"] == ""


def test_differing_claims_keep_both_evidences():
    claims = pd.DataFrame(
        [
            ("a", "x.one", "001", "holds", "ran"),
            ("b", "x.one", "001", "fails", "raised"),
            ("a", "x.one", "002", "holds", "ok"),
            ("b", "x.one", "002", "holds", "ok"),
            ("a", "x.two", "001", "holds", "only here"),
        ],
        columns=["machine", "case", "claim", "verdict", "evidence"],
    )
    out = matrix.differing_claims(claims)
    assert list(zip(out["case"], out["claim"], out["machine"])) == [
        ("x.one", "001", "a"),
        ("x.one", "001", "b"),
        ("x.two", "001", "a"),
    ]
    assert set(out["evidence"]) == {"ran", "raised", "only here"}


def test_the_html_matrix_marks_differing_ids_and_shows_both_evidences():
    rows = pd.DataFrame(
        [("a", "x.one", "holds"), ("b", "x.one", "fails"), ("a", "x.two", "holds"), ("b", "x.two", "holds")],
        columns=["machine", "case", "technique_verdict"],
    )
    claims = pd.DataFrame(
        [("a", "x.one", "001", "holds", "ran"), ("b", "x.one", "001", "fails", "raised <here>")],
        columns=["machine", "case", "claim", "verdict", "evidence"],
    )
    page = matrix.html_section(matrix.technique_matrix(rows), matrix.differing_claims(claims))
    assert page.count('class="differs"') == 1 and "2 IDs on 2 machines or torch versions; 1 differ" in page
    assert "ran" in page and "raised &lt;here&gt;" in page and "claim <code>001</code>" in page


def test_a_report_of_two_torch_versions_draws_the_matrix(tmp_path):
    from reports import build
    from tests import synthetic

    later = dict(synthetic.MACHINE, torch_version="2.14.1+cpu")
    paths = [
        synthetic.write(tmp_path / "a.json", synthetic.result(seed=1)),
        synthetic.write(tmp_path / "b.json", synthetic.result(seed=2, machine=later)),
    ]
    page = build.build(paths, tmp_path / "out").read_text(encoding="utf-8")
    assert "<h2>Side by side</h2>" in page and (tmp_path / "out" / "matrix.csv").is_file()
    one = build.build(paths[:1], tmp_path / "one").read_text(encoding="utf-8")
    assert "Side by side" not in one
