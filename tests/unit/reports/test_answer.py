"""The run's last lines (reports.answer): what each timed claim says at its largest size, whether the
machine was busy, a findings tally that adds up, and where the results went."""

from __future__ import annotations

import numpy as np
import pytest

from cases.parallel import dp_vs_ddp
from harness.contract import record
from reports import answer


def _pair(fast_ms: float, slow_ms: float, size: int, busy: str = "") -> record.PairTiming:
    # Paired rounds with a small spread (±1%) so the interval is narrow and the answer is the ratio's.
    wobble = 1 + 0.01 * np.sin(np.arange(12))
    return record.PairTiming(
        case="distance.pairwise",
        fast="matmul",
        slow="broadcast",
        size={"n": size},
        size_label=f"n{size}",
        dtype="float32",
        device="cpu",
        fast_s=tuple(fast_ms * 1e-3 * wobble),
        slow_s=tuple(slow_ms * 1e-3 * wobble[::-1]),
        x="n",
        load={"busy": busy} if busy else {"busy": ""},
    )


def _check(verdict, errata=()) -> record.Outcome:
    return record.Outcome(
        case="shape.ops",
        kind="check",
        name="view",
        outcome="passed",
        finding=record.Finding(verdict, "observed", tuple(errata)),
    )


def test_the_largest_size_answers_and_busy_is_said():
    small, large = _pair(1, 2, 64), _pair(1, 10, 1024, busy="load average 4 on 2 cores")
    text = "\n".join(answer.lines([small, large], [], "results/bench.json"))
    assert "n1024" in text and "n64 " not in text  # one line per claim: its largest size
    assert "faster (busy)" in text
    assert "noise: 1/2 pairs were timed on a busy machine" in text
    assert "python -m reports build results/bench.json" in text


def test_findings_tally_adds_up_to_the_number_of_checks():
    typo = record.Erratum(record.ErratumKind.TYPO, "x.veiw", "no such method")
    outcomes = [
        _check(record.Verdict.HOLDS),
        _check(record.Verdict.HOLDS),
        _check(record.Verdict.DEPENDS),
        _check(None, [typo]),  # reads the notes only: no verdict
    ]
    text = "\n".join(answer.lines([], outcomes, None))
    assert "findings: 4 checks: 2 holds, 1 depends, 1 report only" in text
    only_notes = "\n".join(answer.lines([], outcomes[3:], None))
    assert "findings: 1 checks: 1 report only" in only_notes
    assert "notes' errata: 1 in 1 techniques" in text


def _rank(world: int, rank: int, steps_s: list[float]) -> dict:
    return {
        "world_size": world,
        "rank": rank,
        "backend": "gloo",
        "params": 2e6,
        "batch": 64,
        "modes": {"ddp": {"step_s": steps_s}},
    }


def test_ddp_scaling_is_tabulated_per_world_size():
    # One rank: 40 ms a step; two ranks on the same global batch: 25 ms (slowest rank) → T1/(2·T2) = 0.8.
    base = [_rank(1, 0, [0.040] * 5)]
    two = [_rank(2, 0, [0.025] * 5), _rank(2, 1, [0.020] * 5)]
    times = [0.025] * 5
    measured, finding = dp_vs_ddp.ddp_scaling(two, times, base)
    assert measured["scaling_efficiency"] == pytest.approx(0.8)
    assert "efficiency T1/(N·TN) = 0.80" in finding.evidence
    outcome = record.Outcome(
        case="parallel.dp_vs_ddp",
        kind="check",
        name="ddp_scaling-w2",
        device="cpu",
        outcome="passed",
        measured=measured,
    )
    text = answer.lines([], [outcome], None)
    (row,) = [line for line in text if line.strip().startswith("cpu")]
    assert row.split() == ["cpu", "2", "25.0", "40.0", "0.80"]


def test_the_report_hint_is_a_command_that_works_for_a_path_with_spaces():
    from reports import answer

    last = answer.lines([], [], "my results/run 1.json")[-1]
    assert last.endswith("python -m reports build 'my results/run 1.json'")


def test_a_timed_pair_that_decides_no_claim_is_marked_context():
    from harness.contract import rules

    claimed = record.CaseInfo(
        id="distance.pairwise", tier=1, rule=rules.Faster(fast="matmul", slow="broadcast", claim="faster")
    )
    text = "\n".join(answer.lines([_pair(1, 10, 1024)], [], None, {"distance.pairwise": claimed}))
    assert "faster" in text and "context" not in text
    unclaimed = record.CaseInfo(
        id="distance.pairwise", tier=1, rule=rules.Faster(fast="matmul", slow="broadcast")
    )
    text = "\n".join(answer.lines([_pair(1, 10, 1024)], [], None, {"distance.pairwise": unclaimed}))
    assert "(context: decides no claim)" in text
