"""What a case or variant needs, as short tokens, and why it cannot run here when it cannot.

Tokens: ``cuda``; ``cuda>=8.0`` (compute capability); ``gpus>=2``; ``module:NAME`` (an optional
package); ``distributed`` (torch.distributed built in); ``nccl`` (torch built with NCCL, for
one-process-per-GPU launches); ``compiler`` (torch.compile can build kernels for the device: a working
C++ compiler on CPU, Triton on CUDA); ``tf32_flags`` (torch's TF32 flags decide whether fp32 runs
in TF32 on CUDA: neither NVIDIA_TF32_OVERRIDE=0 nor TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 in the
environment) and ``ieee_fp32`` (IEEE fp32 cuBLAS matmuls on CUDA when asked for: no
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1). Those two are met on a CPU, where the variables do nothing;
on CUDA a check that measures TF32 on against off, or holds fp32 to an IEEE bound, would go red
for the environment's sake, so it is not measured, and says which variable to unset. The pytest
markers and skip reasons are derived from these in one place (`conftest.py`), so a case never
writes ``skipif`` itself. What the machine has is read in `harness.machine.premises`; this module only
turns it into reasons.
"""

from __future__ import annotations

import importlib.util
import re

import torch

from harness.machine import premises
from harness.measure import device as devices

CUDA_MISSING = "CUDA not available"
_COMPARE = re.compile(r"^(cuda|gpus)>=(\d+(?:\.\d+)?)$")
_PLAIN = {"cuda", "distributed", "nccl", "compiler", "tf32_flags", "ieee_fp32"}
_OVERRIDES = {"tf32_flags": premises.tf32_flags_decide, "ieee_fp32": premises.ieee_fp32}


def overridden(device: str) -> list[str]:
    """One line per requirement the environment's override variables take away on `device`, for
    the run to say before its first test."""
    return [
        f"{premise}: the checks that need it are not measured"
        for premise in (check(device) for check in _OVERRIDES.values())
        if not premise.present
    ]


def validate(token: str) -> None:
    if token in _PLAIN or token.startswith("module:") or _COMPARE.match(token):
        return
    raise ValueError(
        f"unknown requirement {token!r}; use cuda, cuda>=MAJOR.MINOR, gpus>=N, module:NAME, distributed, "
        "nccl, compiler, tf32_flags or ieee_fp32"
    )


def needs_gpu(requires, device: str) -> bool:
    return device == "cuda" or any(t == "cuda" or _COMPARE.match(t) for t in requires)


def gpus_needed(requires) -> int:
    counts = [int(float(m.group(2))) for t in requires if (m := _COMPARE.match(t)) and m.group(1) == "gpus"]
    return max(counts, default=0)


def unmet(requires, device: str) -> str | None:
    """The reason these requirements are not met on this machine for `device`, or None."""
    for token in requires:
        validate(token)
    if needs_gpu(requires, device) and not devices.cuda_available():
        return CUDA_MISSING
    for token in requires:
        if token.startswith("module:"):
            name = token.split(":", 1)[1]
            if importlib.util.find_spec(name) is None:
                return f"needs the optional package {name!r}"
        elif token == "distributed" and not torch.distributed.is_available():
            return "torch.distributed is not built into this torch"
        elif token == "nccl" and not (found := premises.nccl()).present:
            return f"needs NCCL: {found.evidence}"
        elif token == "compiler" and not (found := premises.torch_compile(device)).present:
            return f"torch.compile cannot build kernels for {device} here: {found.evidence}"
        elif token in _OVERRIDES and not (found := _OVERRIDES[token](device)).present:
            names = ", ".join(premises.tf32_overrides_in_force())
            return f"{found.evidence}: not measured on {device} (unset {names} to measure it)"
        elif m := _COMPARE.match(token):
            kind, value = m.group(1), float(m.group(2))
            if kind == "gpus" and premises.gpu_count() < value:
                return f"needs >= {int(value)} GPUs, found {premises.gpu_count()}"
            if kind == "cuda":
                major, minor = devices.current_cuda().capability()
                if major + minor / 10 < value:
                    return f"needs compute capability >= {value}, found {major}.{minor}"
    return None
