"""The device seam: the harness, plan, reports, glue and cases reach CUDA through
`harness.measure.device` (its `Device` objects and discovery functions), so a second backend or a
fake needs one module changed. What is left outside it is counted here, in code (comments,
docstrings and strings do not count), and modules outside it on purpose say why in a module-level
``CUDA_ONLY`` string."""

from __future__ import annotations

import ast
import io
import tokenize

from tests import paths

ROOT = paths.ROOT
PACKAGES = ("cases", "harness", "plan", "reports", "suite")
SEAM = "harness/measure/device.py"
# What still calls torch.cuda directly, outside the seam and the CUDA-only modules: the notes'
# torch.cuda.amp objects (cases/precision/amp.py, 4), the notes' device-count expression for DDP's
# device_ids (cases/parallel/dp_vs_ddp.py) and a rank's torch.cuda.set_device
# (cases/_launch/dist_worker.py). A new direct call raises it: route the call through the seam instead,
# or declare the module CUDA-only with its reason.
MAX_OUTSIDE = 6


def cuda_calls(source: str) -> int:
    """Occurrences of ``torch.cuda.`` as code: NAME . NAME . tokens, so text in comments, strings
    and docstrings is not counted."""
    if "cuda" not in source:  # no such tokens without the word: most modules skip the tokenizer
        return 0
    tokens = [
        t.string
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type in (tokenize.NAME, tokenize.OP)
    ]
    return sum(tokens[i : i + 4] == ["torch", ".", "cuda", "."] for i in range(len(tokens) - 3))


def cuda_only_reason(source: str) -> str | None:
    """The module-level ``CUDA_ONLY = "..."`` string, or None."""
    if "CUDA_ONLY" not in source:
        return None
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "CUDA_ONLY" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    return None


def modules() -> dict[str, str]:
    return {
        p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8")
        for package in PACKAGES
        for p in sorted((ROOT / package).rglob("*.py"))
    }


def test_counting_reads_code_only():
    source = '"""torch.cuda.synchronize() in a docstring"""\n# torch.cuda.empty_cache()\nx = "torch.cuda.x"\n'
    assert cuda_calls(source) == 0
    assert cuda_calls("import torch\ntorch.cuda.synchronize()\ny = torch . cuda . is_available()\n") == 2


def test_cuda_reached_through_the_device_module():
    outside = {
        path: n
        for path, source in modules().items()
        if path != SEAM and not cuda_only_reason(source) and (n := cuda_calls(source))
    }
    assert sum(outside.values()) <= MAX_OUTSIDE, (
        f"{sum(outside.values())} torch.cuda calls outside {SEAM} (at most {MAX_OUTSIDE}): {outside}"
    )


def test_cuda_only_modules_say_why_and_use_cuda():
    declared = {path: cuda_only_reason(source) for path, source in modules().items()}
    declared = {path: why for path, why in declared.items() if why is not None}
    assert declared, "no module declares itself CUDA-only"
    for path, why in declared.items():
        assert len(why.split()) >= 5, f"{path}: CUDA_ONLY should say why in words: {why!r}"
        # A module keeps the marker only while it calls torch.cuda: the marker is not a way to
        # switch the count off for a module that could use the seam.
        assert cuda_calls(modules()[path]), f"{path} declares CUDA_ONLY but calls no torch.cuda API"
