"""The judging stage: one `Judgement` per machine × catalogue ID the runs mention (`judge_all`),
the catalogue the runs recorded, and the devices each machine measured."""

from __future__ import annotations

import pandas as pd

from harness.contract import catalogue, record
from reports.verdicts.case import judge
from reports.verdicts.judgement import Judgement


def catalogue_of(results) -> list[record.CaseInfo]:
    """The catalogue a report lists, by tier, then ID: every ID the runs recorded as declared or
    the shipped catalogue has (a file written before runs recorded their cases records the shipped
    catalogue: harness.contract.upgrade). An ID recorded undeclared that the catalogue does not
    have is an unknown case, judged but listed apart."""
    shipped = {e.id for e in catalogue.load()}
    recorded = results.cases_of()
    out = [case for cid, case in recorded.items() if case.declared or cid in shipped]
    return sorted(out, key=lambda c: (c.tier or 9, c.id))


def _warm(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["timing_mode"] == "warm"] if "timing_mode" in frame else frame


def judge_all(results, table: pd.DataFrame, entries) -> dict[tuple[str, str], Judgement]:
    """The judging stage: one `Judgement` per machine × catalogue ID that machine's runs mention,
    from the rule each run recorded (not today's code), the summary and the outcomes."""
    rows, outcomes, runs = results.rows, results.outcomes, results.runs
    # A verdict reads the warm timings, as the pairs that decide it are timed; the cold-L2 and
    # graph rows of `--timing-mode all` are figures beside it, not more samples of it.
    rows, table = _warm(rows), _warm(table)
    known = {c.id: c for c in entries if c.declared}
    ids = [e.id for e in entries]
    seen = list(dict.fromkeys(list(rows["case"]) + list(outcomes["case"])))
    rows_by = {k: g for k, g in rows.groupby(["machine", "case"], sort=False)}
    sum_by = {k: g for k, g in table.groupby(["machine", "case"], sort=False)}
    out_by = {k: g for k, g in outcomes.groupby(["machine", "case"], sort=False)}
    empty_rows, empty_sum, empty_out = rows.iloc[:0], table.iloc[:0], outcomes.iloc[:0]
    judged = {}
    for machine in dict.fromkeys(runs["machine"]):
        for case_id in ids + [c for c in seen if c not in ids]:
            key = (machine, case_id)
            if key not in rows_by and key not in out_by:
                continue
            as_measured = results.cases_of(machine).get(case_id, known.get(case_id))
            judgement = judge(
                as_measured,
                rows_by.get(key, empty_rows),
                sum_by.get(key, empty_sum),
                out_by.get(key, empty_out),
            )
            if case_id not in ids:
                judgement = Judgement(
                    judgement.verdict,
                    "unknown case: " + judgement.evidence,
                    judgement.errors,
                    judgement.errata,
                )
            judged[key] = judgement
    return judged


def devices_measured(results) -> dict:
    """machine → the device types (cpu, cuda) its rows and its run (not skipped) outcomes name."""
    seen: dict = {}
    outcomes = results.outcomes
    if not outcomes.empty and "outcome" in outcomes:
        outcomes = outcomes[outcomes["outcome"] != "skipped"]
    for frame in (results.rows, outcomes):
        if frame.empty or "device" not in frame:
            continue
        for machine, device in zip(frame["machine"], frame["device"]):
            kind = str(device).split(":")[0]
            if kind and kind != "nan":
                seen.setdefault(machine, {})[kind] = None
    return {m: tuple(d) for m, d in seen.items()}
