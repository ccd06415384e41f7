"""One catalogue ID on one machine judged (`judge`): by its claims (every file is read in the
current schema, files written before claims holding their case as one claim:
harness.contract.upgrade), with its red tests and the notes' errata beside the verdict."""

from __future__ import annotations

import pandas as pd

from reports.verdicts.claims import by_claims
from reports.verdicts.judgement import Judgement
from reports.verdicts.outcomes import errata_of, red_line


def judge(case, rows: pd.DataFrame, summary: pd.DataFrame, outcomes: pd.DataFrame) -> Judgement:
    """The verdict for one case on one machine (all frames already filtered to both), with the
    failed tests and the notes' errata beside it. `case`: the case as its run recorded it (None for
    an ID the run mentions but did not record, which no claim decides)."""
    failed = outcomes[outcomes["outcome"] == "failed"]
    errors = tuple(red_line(r) for r in failed.itertuples())
    return by_claims(case, rows, summary, outcomes, errors, errata_of(outcomes))
