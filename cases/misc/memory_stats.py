"""CUDA memory statistics and version (notes 003 杂录). The statistics need a GPU: skipped with the
reason elsewhere; the notes' deprecated call is observed on every device.

``reset_max_memory_allocated`` (the notes' name) is deprecated: it now calls
``reset_peak_memory_stats``, which resets *every* peak statistic, and warns saying so (before it
touches the device, so a CPU-only build shows the warning too). It resets the peak to what is
allocated now, not to 0 as the notes say: that claim of theirs fails wherever memory is allocated.
"""

from __future__ import annotations

import re
import warnings

import torch

from cases.spec import Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict
from notes.deprecation import is_deprecation

# Outside the device seam on purpose (tests/unit/properties/test_device_seam.py reads this): the
# notes' calls are what is checked, so the case calls them by the notes' names.
CUDA_ONLY = "the technique is torch.cuda's caching-allocator statistics, called as the notes call them"

MIB = 2**20
BLOCK = 2 * MIB  # the caching allocator rounds requests over 1 MiB up to 2 MiB blocks


def check_max_memory_allocated(device):
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    n = 64 * MIB // 4  # 64 MiB of float32: a multiple of the allocator's 2 MiB block rounding
    x = torch.empty(n, dtype=torch.float32, device=device)
    y = torch.empty(n, dtype=torch.float32, device=device)
    peak_two = torch.cuda.max_memory_allocated(device) - base
    del y
    peak_after_free = torch.cuda.max_memory_allocated(device) - base
    current = torch.cuda.memory_allocated(device) - base
    del x
    return judge_max_memory_allocated(peak_two, peak_after_free, current)


def judge_max_memory_allocated(peak_two: int, peak_after_free: int, current: int) -> Finding:
    """The notes: max_memory_allocated gives the largest memory held since the start (here: since
    the last reset). Two 64 MiB tensors must show a peak of 128 MiB (one 2 MiB block of slack) that
    stays after one is freed, while the current allocation drops to 64 MiB."""
    rose = 0 <= peak_two - 128 * MIB < BLOCK
    kept = peak_after_free == peak_two and current < peak_two
    return Finding(
        Verdict.HOLDS if rose and kept else Verdict.FAILS,
        f"max_memory_allocated rose by {peak_two / MIB:.2f} MiB for two 64 MiB tensors (want 128) and "
        f"read {peak_after_free / MIB:.2f} MiB after one was freed (current {current / MIB:.2f} MiB): the "
        f"peak {'is kept' if kept else 'is NOT kept'}",
    )


def check_reset_max_memory_allocated(device):
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    n = 64 * MIB // 4
    x = torch.empty(n, dtype=torch.float32, device=device)
    y = torch.empty(n, dtype=torch.float32, device=device)
    del y
    before = torch.cuda.max_memory_allocated(device) - base
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the deprecation: `reset_deprecated`'s matter
        torch.cuda.reset_max_memory_allocated(device)  # the notes' call
    after = torch.cuda.max_memory_allocated(device) - base
    current = torch.cuda.memory_allocated(device) - base
    del x
    return judge_reset_max_memory_allocated(before, after, current)


def judge_reset_max_memory_allocated(before: int, after: int, current: int) -> Finding:
    """The notes: reset_max_memory_allocated() sets the peak "设置为0" (to 0). With a 64 MiB tensor
    alive, as in any program that holds a model, a peak of 0 after the call holds; a peak at the
    memory allocated now (what torch does: the peak restarts from there) fails the notes' words
    while the reset itself works; a peak not brought down at all fails both."""
    reset = after < before and abs(after - current) < BLOCK
    to_zero = after == 0
    if to_zero:
        how = "is set to 0, as stated"
    elif reset:
        how = (
            f"drops to the memory allocated now ({after / MIB:.2f} MiB with a 64 MiB tensor alive), "
            "NOT to 0: the reset works, from the current allocation (torch.cuda.reset_peak_memory_stats, "
            "its current name)"
        )
    else:
        how = "is NOT reset"
    return Finding(
        Verdict.HOLDS if to_zero else Verdict.FAILS,
        f"peak {before / MIB:.2f} MiB before reset_max_memory_allocated, {after / MIB:.2f} MiB after, with "
        f"{current / MIB:.2f} MiB allocated: the peak {how}",
    )


def check_reset_deprecated(device):
    """The notes' `torch.cuda.reset_max_memory_allocated()`, called as written: it warns before it
    reaches the device, so the deprecation shows on a CPU-only build too (where the call then
    fails for want of CUDA: that failure is the machine's, not the notes')."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            torch.cuda.reset_max_memory_allocated(device if device.type == "cuda" else None)
        except (AssertionError, AttributeError, RuntimeError):
            pass  # no CUDA in this build: the warning came first
    deprecations = [w for w in caught if is_deprecation(w.category, str(w.message))]
    return judge_reset_deprecated(str(deprecations[0].message) if deprecations else "", torch.__version__)


def judge_reset_deprecated(warning: str, version: str) -> Finding:
    """The name the notes use is their matter: deprecated, it is an erratum on every device; the
    technique (resetting the peak) is `reset_max_memory_allocated`'s claim."""
    if not warning:
        return Finding(
            None, f"torch {version}: reset_max_memory_allocated runs without a deprecation warning"
        )
    return Finding(
        None,
        f"torch {version}: reset_max_memory_allocated warns '{warning[:120]}'",
        (
            Erratum(
                ErratumKind.DEPRECATED_API,
                "torch.cuda.reset_max_memory_allocated()",
                f"FutureWarning: '{warning[:160]}'; use torch.cuda.reset_peak_memory_stats()",
            ),
        ),
    )


def check_version_cuda(device):
    compiled = getattr(torch._C, "_cuda_getCompiledVersion", lambda: None)()  # e.g. 12040 for 12.4
    major, minor = torch.cuda.get_device_capability(device)
    return judge_version_cuda(
        torch.version.cuda, compiled, f"{torch.cuda.get_device_name(device)} sm_{major}{minor}"
    )


def judge_version_cuda(version, compiled: int | None, device_name: str) -> Finding:
    """The notes: torch.version.cuda holds the CUDA version. It must be a version string naming
    the CUDA toolkit this torch was built against (torch._C's compiled version, 1000·major +
    10·minor; None where torch._C does not say, and then the string's form alone is judged)."""
    expected = f"{compiled // 1000}.{compiled % 1000 // 10}" if compiled else "unknown"
    well_formed = isinstance(version, str) and re.fullmatch(r"\d+\.\d+(\.\d+)?", version) is not None
    same = well_formed and (not compiled or ".".join(version.split(".")[:2]) == expected)
    return Finding(
        Verdict.HOLDS if same else Verdict.FAILS,
        f"torch.version.cuda = {version!r}, the build's compiled CUDA {expected} ({compiled}); device "
        f"{device_name} (None on CPU-only builds)",
    )


CASE = Case(
    id="misc.memory_stats",
    tier=3,
    claim="torch.cuda.max_memory_allocated gives the peak GPU memory so far, reset_max_memory_allocated "
    "resets it; torch.version.cuda holds the CUDA version.",
    source="003 杂录",
    claims=(
        Claim(
            "max_memory_allocated",
            "`torch.cuda.max_memory_allocated(device=None)`函数用于输出程序从开始运行到目前为止GPU占用的最大内存",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="max_memory_allocated returns the largest memory held by tensors on the device since the "
            "start (or the last reset), and keeps it after the memory is freed",
        ),
        Claim(
            "reset_max_memory_allocated",
            "`torch.cuda.reset_max_memory_allocated()`函数用于将程序从开始运行到目前为止GPU占用的最大内存设置为0",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="after reset_max_memory_allocated() the peak reads 0, with memory still allocated",
        ),
        Claim(
            "version_cuda",
            "`torch.version.cuda` 变量存储了 cuda 的版本号",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="torch.version.cuda is the version string of the CUDA toolkit this torch was built with",
        ),
    ),
    checks={
        "max_memory_allocated": Check(
            check_max_memory_allocated, requires=("cuda",), devices=("cuda",), claim="max_memory_allocated"
        ),
        "reset_max_memory_allocated": Check(
            check_reset_max_memory_allocated,
            requires=("cuda",),
            devices=("cuda",),
            claim="reset_max_memory_allocated",
        ),
        # The notes' name, deprecated: an erratum on every device, deciding nothing.
        "reset_deprecated": Check(check_reset_deprecated),
        "version_cuda": Check(
            check_version_cuda, requires=("cuda",), devices=("cuda",), claim="version_cuda"
        ),
    },
)
