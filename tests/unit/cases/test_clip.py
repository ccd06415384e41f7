"""The judges of `cases/clip.py`: each verdict follows from what its check observed (a different observation
gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import clip
from harness.contract.gain import Ratio
from harness.contract.record import ErratumKind, Verdict


def test_clip_judges():
    ok = {"notes": (0.0, 1e-8, 1.0), "torch": (0.0, 1e-8, 1.0)}
    assert clip.judge_inf_norm(ok, 1.05, 4.2).verdict is Verdict.HOLDS
    assert clip.judge_inf_norm({**ok, "notes": (1e-3, 1e-8, 1.0)}, 1.05, 4.2).verdict is Verdict.FAILS
    assert clip.judge_inf_norm({**ok, "torch": (0.0, 1e-8, 2.0)}, 1.05, 4.2).verdict is Verdict.FAILS
    assert clip.judge_returned_norm(1e-8, 1e-6, "float", "Tensor").verdict is Verdict.HOLDS
    assert clip.judge_returned_norm(1e-3, 1e-6, "float", "Tensor").verdict is Verdict.FAILS
    f = clip.judge_notes_snippet("name 'inf' is not defined", "torch._six is gone", True)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.TYPO
    assert "torch._six" in f.errata[0].evidence
    assert not clip.judge_notes_snippet("", "", True).errata
    assert clip.judge_notes_snippet("x", "y", False).verdict is Verdict.FAILS
    fast, same = Ratio(4.0, 3.8, 4.2, 12), Ratio(1.0, 0.98, 1.02, 12)
    assert clip.judge_foreach_scaling([(4, same), (1024, fast)], None, "w").verdict is Verdict.HOLDS
    assert clip.judge_foreach_scaling([(4, fast), (1024, same)], None, "w").verdict is Verdict.FAILS
    assert clip.judge_foreach_scaling([(4, fast), (1024, fast)], "busy", "w").verdict is Verdict.DEPENDS


def test_clip_speed_is_context_and_correctness_decides():
    from cases import get_case

    case = get_case("clip.grad_norm")
    assert case.checks["loop_vs_foreach_scaling"].claim is None and not case.verdict.claim
    assert {c.id for c in case.claims} == {"total_norm", "inf_norm", "returns_total_norm"}
