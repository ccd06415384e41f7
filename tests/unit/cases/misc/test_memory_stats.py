"""The judges of `cases/misc/memory_stats.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases.misc import memory_stats
from cases.spec import ErratumKind, Verdict

MIB = 2**20


# ---- misc.memory_stats ------------------------------------------------------------------------------


def test_max_memory_allocated_judged_on_the_peak():
    assert memory_stats.judge_max_memory_allocated(128 * MIB, 128 * MIB, 64 * MIB).verdict is Verdict.HOLDS
    assert memory_stats.judge_max_memory_allocated(128 * MIB, 64 * MIB, 64 * MIB).verdict is Verdict.FAILS
    assert memory_stats.judge_max_memory_allocated(64 * MIB, 64 * MIB, 64 * MIB).verdict is Verdict.FAILS


def test_reset_to_the_current_allocation_fails_the_notes_zero():
    f = memory_stats.judge_reset_max_memory_allocated(128 * MIB, 64 * MIB, 64 * MIB)
    assert f.verdict is Verdict.FAILS and f.errata == () and "NOT to 0" in f.evidence
    assert memory_stats.judge_reset_max_memory_allocated(128 * MIB, 0, 64 * MIB).verdict is Verdict.HOLDS
    not_reset = memory_stats.judge_reset_max_memory_allocated(128 * MIB, 128 * MIB, 64 * MIB)
    assert not_reset.verdict is Verdict.FAILS and "NOT reset" in not_reset.evidence


def test_reset_deprecation_is_an_erratum_never_a_verdict():
    f = memory_stats.judge_reset_deprecated(
        "reset_max_memory_allocated now calls reset_peak_memory_stats", "2.13"
    )
    assert f.verdict is None and f.errata[0].kind is ErratumKind.DEPRECATED_API
    assert memory_stats.judge_reset_deprecated("", "1.4").errata == ()


def test_reset_deprecation_seen_on_the_cpu():
    import torch

    f = memory_stats.check_reset_deprecated(torch.device("cpu"))
    assert [e.kind for e in f.errata] == [ErratumKind.DEPRECATED_API]


def test_version_cuda_judged_against_the_compiled_version():
    assert memory_stats.judge_version_cuda("12.4", 12040, "H100").verdict is Verdict.HOLDS
    assert memory_stats.judge_version_cuda("12.4", None, "H100").verdict is Verdict.HOLDS
    assert memory_stats.judge_version_cuda("11.8", 12040, "H100").verdict is Verdict.FAILS
    assert memory_stats.judge_version_cuda(None, 12040, "H100").verdict is Verdict.FAILS
