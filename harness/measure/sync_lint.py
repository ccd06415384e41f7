"""Hidden host-device synchronisation: a call run once under ``torch.cuda.set_sync_debug_mode("error")``.

A host-device synchronisation hidden in an "optimized" variant (``.item()``, ``nonzero``, a
boolean-mask index, a ``.cpu()``) stalls the CPU until the GPU drains its queue: the launch
pipeline empties and every later kernel starts late. It does not change results, so the checks
cannot see it; this lint can. It says what it found with the file and line rather than failing:
some optimized variants must synchronise (a data-dependent output shape), and the report says which.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from typing import Any, Callable, Iterator

import torch

# Outside the device seam on purpose (tests/unit/properties/test_device_seam.py reads this): the
# sync debug mode is torch.cuda's alone, with no torch.accelerator or other backend equivalent.
CUDA_ONLY = "torch.cuda.set_sync_debug_mode has no other backend's equivalent"


@contextlib.contextmanager
def synchronizing_calls_raise() -> Iterator[None]:
    """Inside, a CUDA call that synchronises with the host raises RuntimeError; the previous mode
    is back after, also when the block raises."""
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode(previous)


class HiddenSyncWarning(UserWarning):
    """An optimized variant synchronises host and device where its code says (a warning, not a
    failure: some must, for a data-dependent output shape)."""


def hidden_sync(call: Callable[[], Any], device, own_code: str) -> str | None:
    """None if a second `call()` on `device` does not synchronise with the host, else torch's
    message with where: the innermost frame under the directory `own_code` (the variant's own
    line), else the innermost frame. A RuntimeError of another kind is raised as it is."""
    call()  # lazy initialisation (cuBLAS handles, workspaces) may synchronise once: not the variant's
    torch.cuda.synchronize(device)
    found = None
    try:
        with synchronizing_calls_raise():
            call()
    except RuntimeError as exc:
        if "synchroniz" not in str(exc):
            raise
        found = f"{str(exc).splitlines()[0]} at {_where(exc, own_code)}"
    torch.cuda.synchronize(device)
    return found


def _where(exc: BaseException, own_code: str) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    root = os.path.abspath(own_code)
    ours = [f for f in frames if os.path.abspath(f.filename).startswith(root)]
    frame = (ours or frames)[-1]
    return f"{os.path.relpath(frame.filename)}:{frame.lineno} ({frame.line})"
