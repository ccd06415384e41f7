"""``python -m reports build``: results JSON → results.csv, summary.csv, verdicts.csv, claims.csv, PNGs,
index.html.

The stages run in order and each returns its own table: `load` (the results files), `summary`
(one row per compared pair), `verdicts` (one judgement per machine × catalogue ID), then this
module renders them (CSV, plots, HTML); it computes no number of its own.

Everything is written into a temporary folder beside ``--out`` and moved into place at the end,
so a failure (bad input, a full disk) never leaves a half-written report behind.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from reports import html, load, plots, summary, verdicts

PLOTS_PER_WORKER = 8  # fewer plots than this per worker: starting workers costs more than it saves
MARK = ".technique-suite-report"  # in every folder `build` writes: the only folders it replaces


def check_out(out: Path, inputs) -> None:
    """Refuse an --out whose replacement would destroy something: a file, a folder this command
    did not write (no mark), or a folder holding the results being read."""
    if out.exists() and not out.is_dir():
        raise load.ResultsError(f"{out}: --out is a file, not a folder; give a new or empty folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MARK).exists():
        raise load.ResultsError(
            f"{out}: --out holds files this command did not write; give a new or empty folder "
            "(a report folder it built before is replaced)"
        )
    resolved = out.resolve()
    for path in inputs:
        if resolved == Path(path).resolve() or resolved in Path(path).resolve().parents:
            raise load.ResultsError(f"{out}: --out holds the results it would read ({path})")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in text).strip("_")[:80]


def _title(runs: pd.DataFrame, machine: str, what: str) -> str:
    return f"{what} — {machine}"


@dataclass(frozen=True)
class Tables:
    """What a report shows, before anything is drawn or written: summary.csv (with both verdicts
    joined), verdicts.csv and claims.csv as tables, and the judgements behind them."""

    summary: pd.DataFrame
    verdicts: pd.DataFrame
    claims: pd.DataFrame
    judged: dict
    entries: list
    measured: dict


def tables(results: load.Results) -> Tables:
    """The stages in order (summary, then verdicts) on loaded results."""
    entries = verdicts.catalogue_of(results)
    floors = results.runs.groupby("machine")["delta_floor"].max().to_dict() if not results.runs.empty else {}
    table = summary.build(results.rows, results.cases, results.pairs, floors)
    judged = verdicts.judge_all(results, table, entries)
    measured = verdicts.devices_measured(results)
    verdict_rows = verdicts.verdicts_table(judged, entries, measured)
    # summary.csv carries both verdicts beside each comparison (a join, not a write into it).
    table = table.merge(
        verdict_rows[["machine", "case", "technique_verdict", "notes_verdict"]],
        on=["machine", "case"],
        how="left",
    )
    return Tables(table, verdict_rows, verdicts.claims_table(judged), judged, entries, measured)


def build(paths, out: Path) -> Path:
    out = Path(out)
    results = load.load(paths)  # bad input is named first: it is what the user must fix
    check_out(out, load.collect_paths(paths))
    rows, outcomes, runs = results.rows, results.outcomes, results.runs
    judgement = tables(results)
    table, verdict_rows, judged = judgement.summary, judgement.verdicts, judgement.judged
    entries, measured = judgement.entries, judgement.measured
    known = {c.id: c for c in entries if c.declared}
    machines = list(dict.fromkeys(runs["machine"]))
    measured_anywhere = tuple(dict.fromkeys(d for devices in measured.values() for d in devices))

    ids = [e.id for e in entries]
    seen = list(dict.fromkeys(list(rows["case"]) + list(outcomes["case"])))
    unknown_ids = [c for c in seen if c not in ids]
    rows_by = {k: g for k, g in rows.groupby(["machine", "case"], sort=False)}
    sum_by = {k: g for k, g in table.groupby(["machine", "case"], sort=False)}
    out_by = {k: g for k, g in outcomes.groupby(["machine", "case"], sort=False)}
    empty_rows, empty_sum, empty_out = rows.iloc[:0], table.iloc[:0], outcomes.iloc[:0]

    tmp = Path(tempfile.mkdtemp(prefix=".reports-", dir=out.parent if out.parent.exists() else None))
    try:
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)  # mkdtemp's 0700 would hide the report from everyone else
        (tmp / MARK).write_text("written by python -m reports build; replaced by the next build\n")
        (tmp / "plots").mkdir()

        def view_for(case_id: str, entry) -> html.CaseView:
            case = known.get(case_id)
            view = html.CaseView(
                id=case_id,
                tier=entry.tier if entry else None,
                technique=entry.technique if entry else "",
                claim=entry.claim if entry else "",
                source=entry.source if entry else "",
                known=entry is not None,
            )
            for machine in machines:
                key = (machine, case_id)
                if key not in judged:
                    continue
                case_rows, case_sum = rows_by.get(key, empty_rows), sum_by.get(key, empty_sum)
                as_measured = results.cases_of(machine).get(case_id, case)
                view.judgements[machine] = judged[key]
                view.rules[machine] = getattr(as_measured, "verdict", None)
                view.claims[machine] = tuple(getattr(as_measured, "claims", ()) or ())
                case_out = out_by.get(key, empty_out)
                checks = case_out[(case_out["kind"] == "check") & (case_out["evidence"].fillna("") != "")]
                view.findings[machine] = list(
                    zip(checks["name"], checks["device"], checks["verdict"], checks["evidence"])
                )
                if not case_sum.empty:
                    view.tables[machine] = case_sum[
                        case_sum["against"].isin(["rule", "context", "library", "compiled"])
                    ]
                    view.compile_findings[machine] = verdicts.compile_findings(
                        case_sum
                    ) + verdicts.not_compiled(as_measured, case_sum)
                if not case_rows.empty:
                    # The machine key names the torch (and CUDA) version already.
                    jobs.append((view, machine, case_rows.drop(columns="data"), f"{case_id} — {machine}"))
            if not view.judgements:
                anywhere = outcomes[outcomes["case"] == case_id]
                view.reason = (verdicts.skip_reasons(anywhere) if not anywhere.empty else "") or (
                    verdicts.absent_reason(case, measured_anywhere) if case else "no case yet"
                )
            return view

        jobs: list = []
        views = [view_for(e.id, e) for e in entries]
        unknown = [view_for(c, None) for c in unknown_ids]
        for (view, machine, _, _), png in zip(jobs, _render([(r, t) for _, _, r, t in jobs])):
            (tmp / "plots" / f"{_slug(view.id)}--{_slug(machine)}.png").write_bytes(png)
            view.plots[machine] = png
        overviews, rooflines = {}, {}
        for machine in machines:
            part = table[table["machine"] == machine]
            if not part.empty:
                overviews[machine] = plots.overview_plot(
                    part, _title(runs, machine, "speedups at the largest size")
                )
                (tmp / "plots" / f"overview--{_slug(machine)}.png").write_bytes(overviews[machine])
            roof = plots.roofline_plot(rows[rows["machine"] == machine], _title(runs, machine, "roofline"))
            if roof:
                rooflines[machine] = roof
                (tmp / "plots" / f"roofline--{_slug(machine)}.png").write_bytes(roof)

        rows[load.COLUMNS].to_csv(tmp / "results.csv", index=False)
        table.to_csv(tmp / "summary.csv", index=False)
        verdict_rows.to_csv(tmp / "verdicts.csv", index=False)
        judgement.claims.to_csv(tmp / "claims.csv", index=False)
        side_by_side = ""
        if verdict_rows["machine"].nunique() > 1:  # several machines or torch versions: side by side
            from reports import matrix

            wide, differing = matrix.technique_matrix(verdict_rows), matrix.differing_claims(judgement.claims)
            wide.to_csv(tmp / "matrix.csv", index=False)
            differing.to_csv(tmp / "claims-differ.csv", index=False)
            side_by_side = matrix.html_section(wide, differing)
        (tmp / "index.html").write_text(
            html.page(views, unknown, runs, machines, overviews, rooflines, side_by_side), encoding="utf-8"
        )
        _replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out / "index.html"


def _render(jobs: list) -> list[bytes]:
    """Case plots are independent and CPU-bound (rasterising text and lines, ~0.2 s each): with
    enough of them, one spawned process per usable core (measured on the 2-core CI machine, quiet:
    25 plots 5.3 s serial, 3.5 s in two processes). Spawned, not forked: no worker inherits
    torch's thread pools; the workers import only `reports.plots` (matplotlib, pandas)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = min(cores, len(jobs) // PLOTS_PER_WORKER)
    if workers < 2:
        return [plots.case_plot(rows, title) for rows, title in jobs]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(plots.case_plot, *zip(*jobs), chunksize=max(1, len(jobs) // (4 * workers))))


def _replace(tmp: Path, out: Path) -> None:
    """Swap the finished folder into place; the old report is removed only once the new one is in."""
    out.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=".reports-old-", dir=out.parent))
        os.replace(out, old / "out")
    try:
        shutil.move(str(tmp), str(out))
    except BaseException:
        if old is not None:
            os.replace(old / "out", out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
