"""verdicts.csv and claims.csv (reports/verdicts/tables.py): an ID a machine did not measure says why."""

from __future__ import annotations


def test_an_id_absent_from_a_machine_says_why():
    from harness.contract.record import CaseInfo
    from reports.verdicts import absent_reason

    cuda_only = CaseInfo(id="misc.memory_stats", tier=3, devices=("cuda",))
    assert absent_reason(cuda_only, ("cpu",)) == "runs only on cuda; this machine measured cpu"
    assert absent_reason(cuda_only, ("cpu", "cuda")) == "not in these results"
    assert absent_reason(CaseInfo(id="x", tier=3), ("cpu",)) == "not in these results"  # older file
    assert absent_reason(CaseInfo(id="x", tier=3, declared=False), ("cpu",)) == "no case yet"


def test_a_machine_lists_every_id_and_a_file_judged_per_case_leaves_the_claim_counts_blank():
    from harness.contract.record import CaseInfo
    from reports.verdicts.judgement import HOLDS, Judgement
    from reports.verdicts.tables import VERDICT_COLUMNS, claims_table, verdicts_table

    entries = [CaseInfo(id="a.b", tier=1), CaseInfo(id="c.d", tier=2, devices=("cuda",))]
    judged = {("m", "a.b"): Judgement(HOLDS, "held")}
    table = verdicts_table(judged, entries, {"m": ("cpu",)})
    assert list(table.columns) == VERDICT_COLUMNS and list(table["case"]) == ["a.b", "c.d"]
    assert list(table["technique_verdict"]) == ["holds", "not measured"]
    assert table.loc[1, "technique_evidence"] == "runs only on cuda; this machine measured cpu"
    assert table["claims"].isna().all() and str(table["claims"].dtype) == "Int64"
    assert claims_table(judged).empty
