"""The gate's answer as text: the markdown table CI shows, its notes, and the `-k` expression of
the suspects to re-measure."""

from __future__ import annotations

import math

from reports.gate.lines import EXIT_UNJUDGED, FAILING, REGRESSED, UNJUDGED, UNSTABLE, Line, exit_code
from reports.gate.model import FAIL_LEVEL, PASS_LEVEL, PRIOR_DF, PRIOR_SIGMA, t_quantile


def _f(value, spec=".3g") -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def single_run_note(tolerance: float) -> str:
    se = PRIOR_SIGMA * math.sqrt(2)  # one run a side
    edge = math.log(1 - tolerance)
    fails = math.exp(-(edge - t_quantile(PRIOR_DF, FAIL_LEVEL) * se))
    passes = 1 - math.exp(
        -t_quantile(PRIOR_DF, PASS_LEVEL) * se
    )  # the narrowest tolerance at which an unchanged run can pass
    return (
        "Note: the baseline holds a single run, so it says nothing of how far this machine's runs of "
        f"unchanged code differ; a between-run σ of {PRIOR_SIGMA:.0%} (of the log speed-up) is assumed "
        f"for every pair: against one run only a speed-up that fell about {fails:.1f}× or more fails, "
        f"and no pair passes at a tolerance under {passes:.0%}: the rest is could not judge. "
        "Record baselines from three or more runs (a folder: runs are pooled)."
    )


def markdown(
    lines: list[Line], tolerance: float, baseline_runs: int = 2, allow_unjudged: bool = False
) -> str:
    def cell(text) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    code = exit_code(lines, allow_unjudged)
    status = {0: "pass", 1: "FAIL", EXIT_UNJUDGED: "COULD NOT JUDGE (exit 3; --allow-unjudged passes it)"}[
        code
    ]
    head = [
        f"### Regression gate: {status}",
        "",
        "Within-run speedups (each run's median of paired ratios, else slow median ÷ fast median), "
        "current runs ÷ baseline runs, with an interval of the change that counts the runs' own "
        f"between-run noise (t test, module reports.gate). The tolerance is -{tolerance:.0%} or the "
        "case's own (`Case.gate_tolerance`), never widened by a pair's noise: a pair passes only when the "
        f"interval's bottom (one-sided {PASS_LEVEL:.0%}) lies above it, fails when its top (one-sided "
        f"{FAIL_LEVEL:.1%}: ~80 pairs are gated at once) lies below it, and otherwise could not be judged "
        "(the note names the drop a pass would have hidden).",
        "",
        *([single_run_note(tolerance), ""] if baseline_runs < 2 else []),
        "| case | size | dtype device | pair | baseline speedup | current speedup | change | interval | "
        "verdict | note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = sorted(lines, key=lambda line: (line.verdict not in FAILING, line.case, line.size))
    body = [
        f"| {cell(line.case)} | {cell(line.size)} | {cell(line.where)} | {cell(line.pair)} | "
        f"{_f(line.baseline)} | {_f(line.current)} | {_f(line.change, '+.1%')} | {cell(line.ci)} | "
        f"{'**' + line.verdict + '**' if line.verdict in FAILING else line.verdict} | {cell(line.note)} |"
        for line in order
    ]
    return "\n".join(head + body) + "\n"


def suspects(lines: list[Line]) -> str:
    """A pytest ``-k`` expression selecting the regressed and unjudged case × size points (node IDs
    hold both), for re-measuring just those; empty when there is none."""
    points = sorted(
        {
            (line.case, line.size)
            for line in lines
            # A line of no case (the gate "judged no pair") names no point to re-measure: it would
            # make the expression start with " or ", which pytest refuses.
            if line.verdict in (REGRESSED, UNSTABLE, UNJUDGED) and line.case
        }
    )
    return " or ".join(f"({case} and {size})" if size else case for case, size in points)
