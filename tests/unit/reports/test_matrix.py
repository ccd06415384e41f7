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
