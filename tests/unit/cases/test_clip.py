"""The judges of `cases/clip.py`: each verdict follows from what its check observed (a different observation
gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import clip
from harness.contract.gain import Ratio
from harness.contract.record import Verdict


def test_clip_judges():
    ok = {"notes": (0.0, 1e-8, 1.0), "torch": (0.0, 1e-8, 1.0)}
    assert clip.judge_inf_norm(ok, 1.05, 4.2).verdict is Verdict.HOLDS
    assert clip.judge_inf_norm({**ok, "notes": (1e-3, 1e-8, 1.0)}, 1.05, 4.2).verdict is Verdict.FAILS
    # A max over the wrong values (one tensor's max only), or no clipping at all: the notes' claim fails.
    assert clip.judge_inf_norm({**ok, "notes": (0.7, 1e-8, 1.0)}, 1.05, 4.2).verdict is Verdict.FAILS
    assert clip.judge_inf_norm({**ok, "notes": (0.0, 3.0, 4.2)}, 1.05, 4.2).verdict is Verdict.FAILS
    assert clip.judge_inf_norm({"torch": (0.0, 1e-8, 1.0)}, 1.05, 4.2).verdict is Verdict.FAILS
    # torch's own result is reported beside the notes', deciding nothing.
    f = clip.judge_inf_norm({**ok, "torch": (0.0, 1e-8, 2.0)}, 1.05, 4.2)
    assert f.verdict is Verdict.HOLDS and "torch: norm off" in f.evidence
    assert clip.judge_returned_norm(1e-8, 1e-6, "float", "Tensor").verdict is Verdict.HOLDS
    assert clip.judge_returned_norm(1e-3, 1e-6, "float", "Tensor").verdict is Verdict.FAILS
    fast, same = Ratio(4.0, 3.8, 4.2, 12), Ratio(1.0, 0.98, 1.02, 12)
    assert clip.judge_foreach_scaling([(4, same), (1024, fast)], None, "w").verdict is Verdict.HOLDS
    assert clip.judge_foreach_scaling([(4, fast), (1024, same)], None, "w").verdict is Verdict.FAILS
    # A clear gain counts on a busy machine too; short of one, busy is could not judge, never depends.
    assert clip.judge_foreach_scaling([(4, fast), (1024, fast)], "busy", "w").verdict is Verdict.HOLDS
    assert (
        clip.judge_foreach_scaling([(4, fast), (1024, same)], "busy", "w").verdict is Verdict.COULD_NOT_JUDGE
    )


def test_clip_speed_is_context_and_correctness_decides():
    from cases import get_case

    case = get_case("clip.grad_norm")
    assert case.checks["loop_vs_foreach_scaling"].claim is None and not case.verdict.claim
    assert {c.id for c in case.claims} == {"total_norm", "inf_norm", "returns_total_norm"}


def test_clip_judges_the_notes_own_text():
    """The function judged is compiled from the note file; its one missing name (`inf`) is the
    snippets check's erratum, listed once (001:399), not again by this case."""
    import inspect

    import torch

    from cases import get_case

    assert "concatenated into a single" in inspect.getdoc(clip.notes_clip_grad_norm_)
    case = get_case("clip.grad_norm")
    for name, check in case.checks.items():
        if name in ("notes_snippets", "loop_vs_foreach_scaling"):
            continue
        finding = check.fn(torch.device("cpu"))
        assert not finding.errata, name
        assert finding.verdict is Verdict.HOLDS, (name, finding.evidence)
