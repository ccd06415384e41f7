"""``python -m reports gate``'s work: read the runs (files, folders or the history), compare,
write the step summary and the suspects, and give the exit status with the table."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from reports import load
from reports.gate.compare import compare
from reports.gate.lines import exit_code
from reports.gate.text import markdown, suspects


def run(
    baseline_path,
    current_path,
    *,
    tolerance=0.10,
    absolute=False,
    recheck_paths=(),
    suspects_path=None,
    known=None,
    allow_unjudged=False,
    history=None,
    last=5,
    branch="main",
) -> tuple[int, str]:
    if not 0 <= tolerance < 1:
        raise load.ResultsError(f"--tolerance {tolerance} must be in [0, 1)")
    if history is None:
        baseline = load.load([baseline_path])
        current = load.load([current_path])
    else:  # the last runs of the current run's machine key, read back as a baseline folder is
        from reports.history.store import baseline_results

        current = load.load([current_path])
        baseline, used = baseline_results(
            history, current, [current_path, *recheck_paths], last=last, branch=branch
        )
        baseline_path = f"{history} (last {len(used)} runs)"
    rechecks = tuple(load.load([p]) for p in recheck_paths)
    lines = compare(
        baseline,
        current,
        tolerance=tolerance,
        absolute=absolute,
        rechecks=rechecks,
        known=known,
        names=(str(baseline_path), str(current_path), *map(str, recheck_paths)),
    )
    text = markdown(lines, tolerance, baseline_runs=len(baseline.runs), allow_unjudged=allow_unjudged)
    once = [
        f"{dup} (the same run as {first})"
        for results in (baseline, current, *rechecks)
        for dup, first in results.duplicates
    ]
    if once:
        text += "\nCounted once: " + "; ".join(once) + "\n"
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        # The table and the exit code are the answer; a summary file CI cannot take must not lose them.
        try:
            with open(summary_file, "a", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError as exc:
            print(
                f"reports: GITHUB_STEP_SUMMARY {summary_file}: not written ({exc.strerror or exc}); "
                "the table is below",
                file=sys.stderr,
            )
    if suspects_path:
        try:
            Path(suspects_path).write_text(suspects(lines) + "\n", encoding="utf-8")
        except OSError as exc:
            raise load.ResultsError(
                f"{suspects_path}: cannot write --suspects ({exc.strerror or exc})"
            ) from None
    return exit_code(lines, allow_unjudged), text
