"""CUDA memory statistics and version (notes 003 杂录). CUDA only: skipped with the reason elsewhere.

``reset_max_memory_allocated`` (the notes' name) is deprecated: it now calls
``reset_peak_memory_stats``, which resets *every* peak statistic, and warns saying so.
"""

from __future__ import annotations

import re
import warnings

import torch

from cases.spec import Case, Check, Finding, Verdict

MIB = 2**20


def check_max_memory_allocated(device):
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    n = 64 * MIB // 4  # 64 MiB of float32: a multiple of the allocator's 2 MiB block rounding
    x = torch.empty(n, dtype=torch.float32, device=device)
    y = torch.empty(n, dtype=torch.float32, device=device)
    peak_two = torch.cuda.max_memory_allocated(device) - base
    # Blocks over 1 MiB are rounded to 2 MiB, so 64 MiB requests are exact; allow one block of slack.
    assert 0 <= peak_two - 128 * MIB < 2 * MIB, (
        f"peak after two 64 MiB tensors: {peak_two / MIB:.2f} MiB over base"
    )
    del y
    assert torch.cuda.max_memory_allocated(device) - base == peak_two, "the peak should not drop on free"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.reset_max_memory_allocated(device)  # the notes' call
    deprecated = [w for w in caught if issubclass(w.category, FutureWarning)]
    after_reset = torch.cuda.max_memory_allocated(device) - base
    assert 0 <= after_reset - 64 * MIB < 2 * MIB, (
        f"after the reset the peak is the current {after_reset / MIB:.2f} MiB"
    )
    torch.cuda.reset_peak_memory_stats(device)
    assert torch.cuda.max_memory_allocated(device) == torch.cuda.memory_allocated(device)
    del x
    return Finding(
        Verdict.DEPENDS if deprecated else Verdict.HOLDS,
        f"max_memory_allocated rose by {peak_two / MIB:.2f} MiB for two 64 MiB tensors and kept it after a "
        f"free; reset_max_memory_allocated reset it to the current {after_reset / MIB:.2f} MiB "
        + (
            f"but warns ({deprecated[0].message.args[0][:70]}…): use reset_peak_memory_stats"
            if deprecated
            else "without a warning"
        ),
    )


def check_version_cuda(device):
    version = torch.version.cuda
    assert isinstance(version, str) and re.fullmatch(r"\d+\.\d+(\.\d+)?", version), version
    major, minor = torch.cuda.get_device_capability(device)
    return Finding(
        Verdict.HOLDS,
        f"torch.version.cuda = {version!r} (a string; None on CPU-only builds); "
        f"device {torch.cuda.get_device_name(device)} sm_{major}{minor}",
    )


CASE = Case(
    id="misc.memory_stats",
    tier=3,
    claim="torch.cuda.max_memory_allocated gives the peak GPU memory so far, reset_max_memory_allocated "
    "resets it; torch.version.cuda holds the CUDA version.",
    source="003 杂录",
    checks={
        "max_memory_allocated": Check(check_max_memory_allocated, requires=("cuda",), devices=("cuda",)),
        "version_cuda": Check(check_version_cuda, requires=("cuda",), devices=("cuda",)),
    },
)
