"""The report's History section: per catalogue ID and machine key, the speed-up over runs (one line
per size and pair, the change points marked) and the verdict changes between runs with commit and
torch version.

`python -m reports build` builds the report from the results (reports.build), then this adds the
section to its ``index.html`` (and the plots to ``plots/history--*.png``) where a history is given
(``--history``) or sits beside the results (``history.sqlite`` in a results file's folder, or in a
results folder): the page is replaced whole (a temporary file renamed over it), never half-written.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from reports import html, plots
from reports.history import changes, store

MIN_RUNS = 2  # an ID seen in fewer runs has no history to draw


def beside(results_args) -> Path | None:
    """A history.sqlite in the folder of a results file, or in a results folder."""
    for arg in results_args or ():
        path = Path(arg)
        folder = path if path.is_dir() else path.parent
        if (folder / store.FILENAME).is_file():
            return folder / store.FILENAME
    return None


def history_plot(series: dict, cps: dict, title: str) -> bytes:
    """The speed-up of each (size, where, pair) over the runs of one ID; change points as dashed
    lines at the first run after them. ``series``: label → DataFrame(run_id, commit_id, time, log)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    runs = sorted({(t, r) for g in series.values() for t, r in zip(g["time"], g["run_id"])})
    pos = {r: i for i, (_, r) in enumerate(runs)}
    commit = {}
    for g in series.values():
        commit.update(dict(zip(g["run_id"], g["commit_id"])))
    fig = Figure(figsize=(9, 3.6), dpi=plots.DPI)
    ax = fig.add_subplot()
    for label, g in series.items():
        x = [pos[r] for r in g["run_id"]]
        (line,) = ax.plot(x, np.exp(g["log"].to_numpy()), marker="o", ms=3, lw=1, label=label)
        for cp in cps.get(label, ()):
            ax.axvline(pos[g["run_id"].iloc[cp]] - 0.5, color=line.get_color(), ls="--", lw=1)
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels(
        [f"{i + 1}\n{str(commit.get(r, ''))[:7]}" for i, (_, r) in enumerate(runs)],
        fontsize=7,
        rotation=0 if len(runs) <= 6 else 90,  # past six runs the commits' labels run into each other
    )
    ax.set_xlabel("run (oldest first) / commit")
    ax.set_ylabel("speed-up (×)")
    values = [v for g in series.values() for v in np.exp(g["log"].to_numpy())]
    if plots._spans_decades(values):
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(plots._PLAIN)
        # The minor ticks' default labels are mathtext, which the reports print raw (parse_math off).
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    if len(series) <= 12:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return plots._png(fig)


def views(history) -> list[html.HistoryView]:
    with store.connect(history, create=False) as db:
        series = changes.speedup_series(db)
        found = changes.verdict_changes(db)
        runs = store.runs(db)
    per_id: dict = {}
    parts: dict = {}
    for (machine, case, size, where, pair), g in series.items():
        label = f"{size} {where} {pair}"
        per_id.setdefault((case, machine), {})[label] = g
        parts[case, machine, label] = (size, where, pair)
    verdicts_of: dict = {}
    for c in found:
        verdicts_of.setdefault((c.case, c.group), []).append(
            (c.run_id, c.commit, c.torch, c.pair, c.before, c.after)
        )
    out = []
    keys = sorted(set(per_id) | set(verdicts_of))
    for case, machine in keys:
        lines = per_id.get((case, machine), {})
        n_runs = int((runs["machine"] == machine).sum())
        if n_runs < MIN_RUNS:
            continue
        cps, rows = {}, []
        for label, g in lines.items():
            y = g["log"].to_numpy()
            found_at = changes.detect(y)
            cps[label] = found_at
            bounds = [0, *found_at, y.size]
            for j, cp in enumerate(found_at):
                before = math.exp(float(np.mean(y[bounds[j] : cp])))
                after = math.exp(float(np.mean(y[cp : bounds[j + 2]])))
                r = g.iloc[cp]
                size, where, pair = parts[case, machine, label]
                rows.append(
                    (
                        int(r["run_id"]),
                        str(r["commit_id"]),
                        changes._versions(r),
                        size,
                        where,
                        pair,
                        f"{before:.3g}×",
                        f"{after:.3g}×",
                        after / before - 1,
                    )
                )
        plot = history_plot(lines, cps, f"{case} — {machine}: speed-up per run") if lines else None
        out.append(
            html.HistoryView(case, machine, n_runs, plot, sorted(rows), verdicts_of.get((case, machine), []))
        )
    return out


def add_to_report(index: Path, results_args, history=None) -> Path | None:
    """Add the History section to a built report; the history used, or None where there is none."""
    path = Path(history) if history else beside(results_args)
    if path is None:
        return None
    found = views(path)
    index = Path(index)
    plots_dir = index.parent / "plots"
    plots_dir.mkdir(exist_ok=True)
    for v in found:
        if v.plot:
            name = "".join(c if c.isalnum() or c in "-." else "_" for c in f"history--{v.id}--{v.machine}")[
                :120
            ]
            (plots_dir / f"{name}.png").write_bytes(v.plot)
    page = index.read_text(encoding="utf-8")
    end = page.rfind("</body></html>")
    section = html.history_section(found, str(path))
    page = page[:end] + section + "\n" + page[end:]
    tmp = index.with_name(f".{index.name}.{os.getpid()}.tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, index)
    return path
