"""Verdicts side by side (issue 59, item 6; the CSV part): with several machines or torch versions
in one report (the machine key holds both), one row per catalogue ID and one column per machine of
its technique verdict, ``differs`` where they are not all the same (matrix.csv); and under each ID
the claims whose verdict differs, with each machine's verdict and evidence (claims-differ.csv).
Plain pandas; `html_section` draws the same as the report's "Side by side" section."""

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


def html_section(wide: pd.DataFrame, differing: pd.DataFrame) -> str:
    """The matrix as the report's "Side by side" section: one row per ID, one column per machine
    or torch version, its technique verdict as a badge; an ID whose verdicts differ is marked, and
    under it the claims that differ, each with its verdict and evidence on every machine."""
    from reports.html import badge, esc  # the page's own cells, so the matrix reads as the page does

    machines = [c for c in wide.columns if c not in ("case", "differs")]
    by_id = {case: group for case, group in differing.groupby("case")} if not differing.empty else {}
    head = "".join(f"<th>{esc(m)}</th>" for m in machines)
    body = []
    for row in wide.to_dict("records"):
        cells = "".join(f"<td>{badge(row[m]) if row[m] else '—'}</td>" for m in machines)
        mark = ' class="differs"' if row["differs"] else ""
        body.append(
            f'<tr{mark}><td><a href="#{esc(row["case"])}"><code>{esc(row["case"])}</code></a>'
            f"{' <b>differs</b>' if row['differs'] else ''}</td>{cells}</tr>"
        )
        claims = by_id.get(row["case"])
        if claims is None:
            continue
        for claim, group in claims.groupby("claim", sort=False):
            seen = {r["machine"]: r for r in group.to_dict("records")}
            cells = "".join(
                f"<td>{badge(seen[m]['verdict'])} <small>{esc(seen[m]['evidence'])}</small></td>"
                if m in seen
                else "<td>(absent)</td>"
                for m in machines
            )
            body.append(
                f'<tr class="claim-differs"><td>&nbsp;&nbsp;claim <code>{esc(claim)}</code></td>{cells}</tr>'
            )
    differs = int(wide["differs"].sum())
    return (
        "<h2>Side by side</h2>"
        f"<p>{len(wide)} IDs on {len(machines)} machines or torch versions; {differs} differ. Under an ID "
        "that differs, each claim whose verdict differs, with its evidence on every machine "
        "(matrix.csv, claims-differ.csv).</p>"
        f"<table class=matrix><tr><th>ID</th>{head}</tr>{''.join(body)}</table>"
    )
