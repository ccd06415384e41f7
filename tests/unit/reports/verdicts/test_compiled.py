"""What the report says of a compiled twin (reports.verdicts, reports.summary): how much of the gap compile
closes, a pair not compiled with its reason, a twin's source read from its record."""

import math

import pandas as pd
import pytest

from cases import all_cases
from harness.contract import record, rules
from reports import verdicts


def _row(fast, slow, against, t_fast, t_slow, size="n1"):
    return dict(
        machine="m",
        case="c",
        tier=1,
        size_label=size,
        x_name="n",
        x=1.0,
        dtype="float32",
        device="cpu",
        fast=fast,
        slow=slow,
        against=against,
        fast_rounds=10,
        slow_rounds=10,
        fast_median_s=t_fast,
        slow_median_s=t_slow,
        speedup=t_slow / t_fast,
        ci_low=math.nan,
        ci_high=math.nan,
        fast_peak_bytes=1.0,
        slow_peak_bytes=1.0,
        memory_ratio=1.0,
        verdict="",
    )


@pytest.mark.parametrize(
    "t_compiled, expected",
    [
        (1.05, "closes the gap"),  # within 10% of the optimized way
        (10**0.5, "closes part of it (50%)"),  # half the speedup, in log terms
        (9.8, "does not close it (1%)"),
    ],
)
def test_the_finding_says_how_much_of_the_gap_compile_closes(t_compiled, expected):
    summary = pd.DataFrame(
        [
            _row("opt", "naive", "rule", 1.0, 10.0),
            _row("compiled", "naive", "compiled", t_compiled, 10.0),
            _row("opt", "compiled", "compiled", 1.0, t_compiled),
        ]
    )
    lines = verdicts.compile_findings(summary)
    assert len(lines) == 1 and expected in lines[0] and "opt 10× over naive" in lines[0]


def test_a_large_speedup_short_of_the_trick_is_not_called_closed():
    """distance.pairwise on the CI machine: compiled broadcast 77× over broadcast, the matmul
    expansion 298×: 99% of the time saved, but still 3.9× slower than the trick."""
    summary = pd.DataFrame(
        [
            _row("opt", "naive", "rule", 1.78e-3, 0.531),
            _row("compiled", "naive", "compiled", 6.9e-3, 0.531),
            _row("opt", "compiled", "compiled", 1.78e-3, 6.9e-3),
        ]
    )
    (line,) = verdicts.compile_findings(summary)
    assert "closes part of it (76%)" in line and "3.88× faster than compiled" in line


def test_a_pair_not_compiled_carries_its_reason_into_the_results_and_the_report():
    from harness.contract import declared

    cases = declared.case_infos(all_cases())
    for case_id, naive in (("data.recordio", "one_file_per_sample"), ("parallel.allreduce", "master")):
        info = record.CaseInfo.from_data(cases[case_id].to_data())  # as a results file keeps it
        assert info.uncompilable.get(naive), (case_id, info.uncompilable)
        summary = pd.DataFrame({"slow": [naive], "fast": ["x"]})
        (line,) = verdicts.not_compiled(info, summary)
        assert line.startswith(f"not compiled: {naive}: ")
        assert verdicts.not_compiled(info, summary.assign(slow=["other"])) == []


def test_a_twins_source_is_read_from_the_record_not_its_name():
    """The report pairs a compiled twin with the naive variant its record names (`compiled_from`,
    set by the plan; a file written before that field has it from the upgrade on reading), never
    from the twin's name, which cannot say which of two naive variants `compiled` compiles."""
    from reports import summary

    group = summary.Group({})
    group.roles = {"loop": "naive", "gather": "naive", "fused": "optimized", "compiled": "compiled"}
    assert not any(against == "compiled" for _, _, against in group.pairs(None))  # the name is ambiguous
    group.sources = {"compiled": "gather"}
    case = record.CaseInfo(
        "x.case", 2, rule=rules.Faster("fused", "gather"), timed=(record.TimedPair("", "fused", "gather"),)
    )
    compiled_pairs = {(fast, slow) for fast, slow, against in group.pairs(case) if against == "compiled"}
    assert ("compiled", "gather") in compiled_pairs and ("fused", "compiled") in compiled_pairs
    assert not any(slow == "loop" and fast == "compiled" for fast, slow in compiled_pairs)
    del group.roles["gather"]  # the naive way it compiles was not timed at this size: nothing to pair
    assert not any(against == "compiled" for _, _, against in group.pairs(None))
