"""Judge a catalogue ID on one machine's results: each of the notes' claims, then the technique.

The judging stage, one job per module: the verdict and how parts combine (`judgement`); a timed
pair (`speed`) and a peak-memory ratio (`memory`) judged; a case's recorded rule evaluated
(`rule`); what the tests' outcomes say, red tests, skips and the notes' errata (`outcomes`); each
claim from what names it and the technique from its claims (`claims`); one ID on one machine
(`case`); every machine × ID of the runs (`stage`); verdicts.csv and claims.csv (`tables`); and
torch.compile's findings beside them (`compiled`). The names the report, the history and the
tests use are here.
"""

from __future__ import annotations

from reports.verdicts.case import judge
from reports.verdicts.compiled import compile_findings, not_compiled
from reports.verdicts.judgement import (
    COULD_NOT_JUDGE,
    DEPENDS,
    FAILS,
    HOLDS,
    NOT_MEASURED,
    ClaimJudgement,
    Judgement,
    all_of,
    any_of,
    combine,
)
from reports.verdicts.memory import memory_judgement
from reports.verdicts.outcomes import errata_of, skip_reasons
from reports.verdicts.rule import evaluate
from reports.verdicts.speed import speed_judgement
from reports.verdicts.stage import catalogue_of, devices_measured, judge_all
from reports.verdicts.tables import (
    CLAIM_COLUMNS,
    VERDICT_COLUMNS,
    absent_reason,
    claims_table,
    verdicts_table,
)

__all__ = [
    "judge",
    "compile_findings",
    "not_compiled",
    "COULD_NOT_JUDGE",
    "DEPENDS",
    "FAILS",
    "HOLDS",
    "NOT_MEASURED",
    "ClaimJudgement",
    "Judgement",
    "all_of",
    "any_of",
    "combine",
    "memory_judgement",
    "errata_of",
    "skip_reasons",
    "evaluate",
    "speed_judgement",
    "catalogue_of",
    "devices_measured",
    "judge_all",
    "CLAIM_COLUMNS",
    "VERDICT_COLUMNS",
    "absent_reason",
    "claims_table",
    "verdicts_table",
]
