"""The host allocator's state, pinned before anything is timed and recorded with the run.

PyTorch's CPU tensors come from the C library's malloc. glibc serves a request above its mmap
threshold with fresh pages from the kernel (each touched page faults and is zeroed) and returns
them on free; below it, from the heap, whose freed top is given back to the kernel once it
exceeds the trim threshold. Both thresholds adapt to what the process freed before (the mmap
threshold rises to the size of a mapped block freed, up to 32 MiB, and the trim threshold to
twice that), so the same 16 MiB temporary costs a different amount depending on the process's
history: `distance.pairwise`'s broadcast at n = 128 (two 16 MiB temporaries a call) took
14.5 ms a call in a fresh process and 2.4 ms after the larger sizes had run (AMD EPYC, 2 cores,
torch 2.13; and 1.4-1.7 ms in both states with the thresholds pinned as here, where unpinned it
flipped between 1.6 and 14.5 ms from one fresh process to the next). Timings that depend on which
points ran earlier are not results.

`pin` fixes both thresholds (glibc then stops adapting them): blocks under 32 MiB (the largest
mmap threshold glibc accepts) are reused from the heap, which is never trimmed, as in a
long-running program whose working set has settled. A block of 32 MiB and more is mapped fresh
(and faulted) only where the heap has no free room for it: malloc looks for room before it maps,
so such a block's cost still depends on what the process freed before. `distance.pairwise`'s
broadcast at n = 256 (two 64 MiB temporaries) took 57.7 ms a call in a fresh pinned process and
19.0 ms in the same process once 360 MiB of 30 MiB blocks had been freed into its heap (2-core
Xeon, AMX, torch 2.13.0+cpu, 2026-11-27), and 9.5, 11.0 and 24.5 ms in three quick runs of the
suite against a median of 36.5 ms in five fresh pinned interpreters: not fixed here (docs/measuring.md,
"How it measures"). Worker processes inherit the same settings
through the environment (``GLIBC_TUNABLES``). Elsewhere (another C library, macOS) nothing is
pinned and the record says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import platform

MMAP_THRESHOLD = 32 * 2**20  # glibc's maximum (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 2**31 - 1  # mallopt takes a C int: the largest, so the heap top is kept
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_PERTURB = -1, -3, -6  # <malloc.h>
# Freed blocks are filled with it, handed-out ones with its complement 0xFE: -1.7e38 in fp32 and
# bf16, -5.3e303 in fp64, NaN in fp16, -7e16 in int64: never within a bound of any answer.
PERTURB_BYTE = 0x01
TUNABLES = f"glibc.malloc.mmap_threshold={MMAP_THRESHOLD}:glibc.malloc.trim_threshold={TRIM_THRESHOLD}"
# The other end of what a default program sees: glibc's initial mmap threshold (128 KiB) held, so
# it never adapts. Every block of 128 KiB and more is mapped fresh when asked for (each touched page
# faults and is zeroed) and unmapped when freed: a default program's first calls, and every call of
# one whose heap top is trimmed between calls. `harness.measure.faulted_pages` times in it.
FAULTED_MMAP_THRESHOLD = 128 * 2**10
FAULTED_TUNABLES = f"glibc.malloc.mmap_threshold={FAULTED_MMAP_THRESHOLD}"


def environment_with(tunables: str) -> str:
    """``GLIBC_TUNABLES`` for a child process: this process's, its malloc thresholds replaced by
    `tunables`."""
    kept = [
        t
        for t in os.environ.get("GLIBC_TUNABLES", "").split(":")
        if t and "malloc.mmap" not in t and "malloc.trim" not in t
    ]
    return ":".join([*kept, tunables])


def _transparent_hugepages() -> str:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            text = f.read()
    except OSError:
        return "unknown"
    return text[text.index("[") + 1 : text.index("]")] if "[" in text else text.strip()


def pin() -> dict:
    """Fix glibc's thresholds in this process and, through the environment, in its children.
    Returns what was done, for the run's machine info."""
    state = {"transparent_hugepages": _transparent_hugepages()}
    libc_name, libc_version = platform.libc_ver()
    if libc_name != "glibc":
        return {**state, "pinned": False, "why": f"C library {libc_name or 'unknown'}: thresholds not pinned"}
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        ok = (
            libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
            and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
        )
    except (OSError, AttributeError) as exc:
        return {**state, "pinned": False, "why": f"mallopt unavailable: {exc}"}
    if not ok:
        return {**state, "pinned": False, "why": "mallopt refused the thresholds"}
    os.environ["GLIBC_TUNABLES"] = environment_with(TUNABLES)
    return {
        **state,
        "pinned": True,
        "library": f"glibc {libc_version}",
        "mmap_threshold": MMAP_THRESHOLD,
        "trim_threshold": TRIM_THRESHOLD,
    }


@functools.lru_cache(maxsize=None)
def _glibc():
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


@contextlib.contextmanager
def perturbed():
    """Inside the block, every heap block glibc hands out is filled with 0xFE bytes and every one
    freed with 0x01 (``mallopt(M_PERTURB)``), so memory a tensor gets uninitialised never holds
    what was freed: a variant returning ``torch.empty`` it never wrote returns -1.7e38 (fp32)
    everywhere instead of the answer another call left there. Without it, a block freed and asked
    for again at the same size came back holding the freed answer bit for bit for 13 of 42 variant
    outputs here (glibc 2.36, thresholds pinned). Blocks from 32 MiB on are mapped fresh
    (zeros) and not filled, and a block of at most 1 KiB that glibc hands back through its tcache
    skips the fill (its `return_cached` path: 1 in 240 tries at 32 bytes, measured), which
    `harness.measure.poison_recycled` covers. Every malloc and free inside costs a memset: for
    checks, not timings. A process forked inside keeps it (data.loading's DataLoader workers, which
    end with their epoch); one started with exec does not. Yields whether it is on (False: no
    glibc, nothing changed)."""
    libc = _glibc()
    on = libc is not None and libc.mallopt(_M_PERTURB, PERTURB_BYTE) == 1
    try:
        yield on
    finally:
        if on:
            libc.mallopt(_M_PERTURB, 0)
