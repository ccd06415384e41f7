"""``python -m reports build``: results JSON → results.csv, summary.csv, PNGs, index.html.

Everything is written into a temporary folder beside ``--out`` and moved into place at the end,
so a failure (bad input, a full disk) never leaves a half-written report behind.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from harness import catalogue, record
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


def catalogue_of(results: load.Results) -> list[record.CaseInfo]:
    """Every catalogue ID the runs recorded, in catalogue order; files written before the results
    recorded their cases (schema 1) fall back on the catalogue shipped beside the reports."""
    recorded = results.cases_of()
    if recorded:
        return sorted(recorded.values(), key=lambda c: (c.tier or 9, c.id))
    return [
        record.CaseInfo(id=e.id, tier=e.tier, technique=e.technique, source=e.source)
        for e in catalogue.load()
    ]


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in text).strip("_")[:80]


def _title(runs: pd.DataFrame, machine: str, what: str) -> str:
    return f"{what} — {machine}"


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
]


def judge_all(
    results: load.Results, table: pd.DataFrame, entries
) -> dict[tuple[str, str], verdicts.Judgement]:
    """The judging stage: one `Judgement` per machine × catalogue ID that machine's runs mention,
    from the rule each run recorded (not today's code), the summary and the outcomes."""
    rows, outcomes, runs = results.rows, results.outcomes, results.runs
    known = {c.id: c for c in entries if c.declared}
    ids = [e.id for e in entries]
    seen = list(dict.fromkeys(list(rows["case"]) + list(outcomes["case"])))
    rows_by = {k: g for k, g in rows.groupby(["machine", "case"], sort=False)}
    sum_by = {k: g for k, g in table.groupby(["machine", "case"], sort=False)}
    out_by = {k: g for k, g in outcomes.groupby(["machine", "case"], sort=False)}
    empty_rows, empty_sum, empty_out = rows.iloc[:0], table.iloc[:0], outcomes.iloc[:0]
    # A machine's runs written before errata had their own place (schema < 3) are judged as then.
    modern = runs.groupby("machine")["schema_version"].min().ge(3).to_dict() if not runs.empty else {}
    judged = {}
    for machine in dict.fromkeys(runs["machine"]):
        for case_id in ids + [c for c in seen if c not in ids]:
            key = (machine, case_id)
            if key not in rows_by and key not in out_by:
                continue
            as_measured = results.cases_of(machine).get(case_id, known.get(case_id))
            judgement = verdicts.judge(
                as_measured,
                rows_by.get(key, empty_rows),
                sum_by.get(key, empty_sum),
                out_by.get(key, empty_out),
                findings_count=modern.get(machine, True),
            )
            if case_id not in ids:
                judgement = verdicts.Judgement(
                    judgement.verdict,
                    "unknown case: " + judgement.evidence,
                    judgement.errors,
                    judgement.errata,
                )
            judged[key] = judgement
    return judged


def _absent_reason(info, measured: tuple) -> str:
    """Why a machine has no result for an ID: the devices it runs on, where none was measured."""
    if info is not None and not info.declared:
        return "no case yet"
    devices = tuple(getattr(info, "devices", ()) or ())
    if devices and measured and not set(devices) & set(measured):
        return f"runs only on {', '.join(devices)}; this machine measured {', '.join(measured)}"
    return "not in these results"


def _devices_measured(results: load.Results) -> dict:
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
            j = judged.get((machine, case_id)) or verdicts.Judgement(
                verdicts.NOT_MEASURED, _absent_reason(infos.get(case_id), measured.get(machine, ()))
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
                    "errata": " | ".join(f"{e.kind.value}: {e.quote} — {e.evidence}" for e in j.errata),
                    "failed_tests": len(j.errors),
                }
            )
    return pd.DataFrame(out, columns=VERDICT_COLUMNS)


def build(paths, out: Path) -> Path:
    out = Path(out)
    results = load.load(paths)  # bad input is named first: it is what the user must fix
    check_out(out, load.collect_paths(paths))
    rows, outcomes, runs = results.rows, results.outcomes, results.runs
    entries = catalogue_of(results)
    known = {c.id: c for c in entries if c.declared}
    machines = list(dict.fromkeys(runs["machine"]))
    table = summary.build(rows, results.cases, results.pairs)
    judged = judge_all(results, table, entries)
    measured = _devices_measured(results)
    measured_anywhere = tuple(dict.fromkeys(d for devices in measured.values() for d in devices))
    verdict_rows = verdicts_table(judged, entries, measured)
    # summary.csv carries both verdicts beside each comparison (a join, not a write into it).
    table = table.merge(
        verdict_rows[["machine", "case", "technique_verdict", "notes_verdict"]],
        on=["machine", "case"],
        how="left",
    )

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
                    _absent_reason(case, measured_anywhere) if case else "no case yet"
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
        (tmp / "index.html").write_text(
            html.page(views, unknown, runs, machines, overviews, rooflines), encoding="utf-8"
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
