"""Verdicts side by side (issue 59, item 6; the CSV part): with several machines or torch versions
in one report (the machine key holds both), one row per catalogue ID and one column per machine of
its technique verdict, ``differs`` where they are not all the same (matrix.csv); and under each ID
the claims whose verdict differs, with each machine's verdict and evidence (claims-differ.csv).
Plain pandas; the HTML matrix is not drawn yet."""

from __future__ import annotations

import pandas as pd


def technique_matrix(verdict_rows: pd.DataFrame) -> pd.DataFrame:
    """ID × machine of ``technique_verdict``, with ``differs`` (a machine without the ID counts as
    differing: a verdict present on one side only is listed, never dropped)."""
    wide = verdict_rows.pivot_table(
        index="case", columns="machine", values="technique_verdict", aggfunc="first"
    ).reindex(sorted(verdict_rows["machine"].unique()), axis=1)
    wide = wide.astype(object).where(wide.notna(), "")
    wide["differs"] = wide.apply(lambda row: len(set(row)) > 1, axis=1)
    return wide.reset_index().rename_axis(columns=None)


def differing_claims(claims: pd.DataFrame) -> pd.DataFrame:
    """One row per machine of each claim whose verdict is not the same on every machine (or is
    missing on one), with its verdict and evidence there."""
    if claims.empty:
        return claims
    machines = claims["machine"].nunique()
    keys = ["case", "claim"]
    per_claim = claims.groupby(keys)
    differs = per_claim["verdict"].transform(lambda v: v.nunique() > 1) | (
        per_claim["machine"].transform("nunique") < machines
    )
    return claims.loc[differs, [*keys, "machine", "verdict", "evidence"]].sort_values([*keys, "machine"])
