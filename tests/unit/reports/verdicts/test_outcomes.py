"""What the tests' outcomes say beside the timings (reports/verdicts/outcomes.py): the notes' errata
listed apart and never deciding the technique, red tests named, skip reasons."""

from __future__ import annotations

from harness.contract import record
from tests.judged_report import check, report


def test_errata_are_listed_and_never_decide_the_technique(tmp_path):
    erratum = record.Erratum(record.ErratumKind.REMOVED_API, "torch.one_hot", "AttributeError in 2.13")
    _, judged = report(tmp_path, paired=True, outcomes=[check("holds", errata=[erratum])])
    assert judged["technique_verdict"] == "holds"
    assert judged["notes_verdict"] == "1 erratum" and judged["errata_count"] == 1
    assert "removed API: torch.one_hot" in judged["errata"]


def test_a_red_test_is_one_line_with_its_message_and_skips_give_their_first_reasons():
    import pandas as pd

    from reports.verdicts.outcomes import red_line, skip_reasons

    red = pd.DataFrame([dict(name="", kind="check", size_label="", dtype="", device="cpu", reason="x" * 400)])
    assert red_line(next(red.itertuples())) == "check cpu failed: " + "x" * 300
    skipped = pd.DataFrame(
        [dict(outcome="skipped", reason=r) for r in ("no GPU", "no GPU", "", "a", "b", "c")]
        + [dict(outcome="passed", reason="ignored")]
    )
    assert skip_reasons(skipped) == "no GPU; a; b; …"
