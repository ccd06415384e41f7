"""verdicts.csv and claims.csv from the judgements: one row per machine × ID, the technique's
verdict beside the notes' (an ID a machine did not measure listed with why), and one row per claim."""

from __future__ import annotations

import pandas as pd

from reports.verdicts.judgement import COULD_NOT_JUDGE, FAILS, HOLDS, NOT_MEASURED, Judgement

VERDICT_COLUMNS = [
    "machine",
    "case",
    "tier",
    "technique_verdict",
    "technique_evidence",
    "notes_verdict",
    "errata_count",
    "errata",
    "failed_tests",
    "claims",
    "claims_measured",
    "claims_holding",
    "claims_failing",
    "claims_could_not_judge",
]

CLAIM_COLUMNS = [
    "machine",
    "case",
    "claim",
    "kind",
    "file",
    "quote",
    "reading",
    "verdict",
    "decided_by",
    "evidence",
]


def absent_reason(info, measured: tuple) -> str:
    """Why a machine has no result for an ID: the devices it runs on, where none was measured."""
    if info is not None and not info.declared:
        return "no case yet"
    devices = tuple(getattr(info, "devices", ()) or ())
    if devices and measured and not set(devices) & set(measured):
        return f"runs only on {', '.join(devices)}; this machine measured {', '.join(measured)}"
    return "not in these results"


def verdicts_table(judged: dict, entries, measured: dict | None = None) -> pd.DataFrame:
    """verdicts.csv: one row per machine × ID, the technique's verdict beside the notes' (an ID a
    machine did not measure is listed as `not measured` with why, so every machine lists every
    ID). ``measured``: machine → the device types its runs measured."""
    tiers = {e.id: e.tier for e in entries}
    infos = {e.id: e for e in entries}
    measured = measured or {}
    machines = list(dict.fromkeys(m for m, _ in judged))
    out = []
    for machine in machines:
        for case_id in list(tiers) + [c for m, c in judged if m == machine and c not in tiers]:
            j = judged.get((machine, case_id)) or Judgement(
                NOT_MEASURED, absent_reason(infos.get(case_id), measured.get(machine, ()))
            )
            out.append(
                {
                    "machine": machine,
                    "case": case_id,
                    "tier": tiers.get(case_id),
                    "technique_verdict": j.verdict,
                    "technique_evidence": j.evidence,
                    "notes_verdict": j.notes_verdict,
                    "errata_count": len(j.errata),
                    "errata": " | ".join(
                        f"{e.kind.value}{' at ' + e.where if e.where else ''}: {e.quote} — {e.evidence}"
                        for e in j.errata
                    ),
                    "failed_tests": len(j.errors),
                    # Blank where a judgement has no claims (an ID no run declared).
                    "claims": len(j.claims) if j.claims else None,
                    "claims_measured": j.claims_measured if j.claims else None,
                    "claims_holding": j.claims_with(HOLDS) if j.claims else None,
                    "claims_failing": j.claims_with(FAILS) if j.claims else None,
                    "claims_could_not_judge": j.claims_with(COULD_NOT_JUDGE) if j.claims else None,
                }
            )
    table = pd.DataFrame(out, columns=VERDICT_COLUMNS)
    for column in VERDICT_COLUMNS[-5:]:
        table[column] = table[column].astype("Int64")
    return table


def claims_table(judged: dict) -> pd.DataFrame:
    """claims.csv: one row per machine × ID × claim, its verdict, what decided it, the evidence."""
    out = [
        {
            "machine": machine,
            "case": case_id,
            "claim": c.claim.id,
            "kind": c.claim.kind.value,
            "file": c.claim.file,
            "quote": c.claim.quote,
            "reading": c.claim.reading,
            "verdict": c.verdict,
            "decided_by": c.decided_by,
            "evidence": c.evidence,
        }
        for (machine, case_id), j in judged.items()
        for c in j.claims
    ]
    return pd.DataFrame(out, columns=CLAIM_COLUMNS)
