"""Save and restore every fp32-precision flag torch has, both APIs, even when the body raises.

Two APIs set the same state. The legacy one: ``torch.backends.cuda.matmul.allow_tf32``,
``torch.backends.cudnn.allow_tf32`` and ``torch.set_float32_matmul_precision``. The newer one
(torch 2.9+): ``fp32_precision`` attributes on ``torch.backends`` (global), on each backend
(``cuda.matmul``, ``cudnn``, ``mkldnn``) and on each op family (``cudnn.conv``, ``mkldnn.matmul``...).
They are not independent: ``set_float32_matmul_precision('medium')`` writes ``'tf32'`` into
``cuda.matmul`` and ``'bf16'`` into ``mkldnn.matmul``, and after a new-API write that the legacy
view cannot express, reading the legacy getter raises RuntimeError ("used mix of the legacy and
new APIs"). Restoring therefore writes the legacy values first and the new-API values last,
parents before children (a parent's write cascades into its children), then reads everything
back and raises if anything still differs: a silent leak of TF32 into later cases would change
their error and timing without a trace.

Saving, setting, restoring and verifying all of them costs ~110-170 µs on a CPU: more than many
timed calls. A variant that needs flags therefore carries these contexts as its block context
(`harness.measure.block_context.scoped`): a direct call enters it on each call, so a check or any
other direct caller gets the right flags, while the harness enters it once around a block of timed
calls.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch

# Parents before children: writing a parent's fp32_precision overwrites its children.
NEW_API = (
    "backends.fp32_precision",
    "backends.cuda.matmul.fp32_precision",
    "backends.cudnn.fp32_precision",
    "backends.cudnn.conv.fp32_precision",
    "backends.cudnn.rnn.fp32_precision",
    "backends.mkldnn.fp32_precision",
    "backends.mkldnn.matmul.fp32_precision",
    "backends.mkldnn.conv.fp32_precision",
    "backends.mkldnn.rnn.fp32_precision",
)
LEGACY_API = ("float32_matmul_precision", "backends.cuda.matmul.allow_tf32", "backends.cudnn.allow_tf32")

ABSENT = "absent"  # the attribute does not exist in this torch
UNREADABLE = "unreadable"  # reading raised (the two APIs were mixed); nothing to restore from


def has_new_api() -> bool:
    return hasattr(torch.backends, "fp32_precision")


def _resolve(path: str):
    parent = torch
    parts = path.split(".")
    for part in parts[:-1]:
        parent = getattr(parent, part)
    return parent, parts[-1]


def read(path: str):
    if path == "float32_matmul_precision":
        try:
            return torch.get_float32_matmul_precision()
        except RuntimeError:
            return UNREADABLE
    try:
        parent, name = _resolve(path)
        if not hasattr(parent, name):
            return ABSENT
        return getattr(parent, name)
    except AttributeError:
        return ABSENT
    except RuntimeError:
        return UNREADABLE


def write(path: str, value) -> None:
    if path == "float32_matmul_precision":
        torch.set_float32_matmul_precision(value)
        return
    parent, name = _resolve(path)
    setattr(parent, name, value)


def snapshot() -> dict[str, object]:
    return {path: read(path) for path in LEGACY_API + NEW_API}


def restore(saved: dict[str, object]) -> None:
    for path in LEGACY_API + NEW_API:
        value = saved[path]
        if value not in (ABSENT, UNREADABLE):
            write(path, value)
    now = snapshot()
    changed = {p: (saved[p], now[p]) for p in saved if saved[p] != now[p]}
    if changed:
        raise RuntimeError(f"precision flags not restored (saved, now): {changed}")


@contextlib.contextmanager
def preserved() -> Iterator[dict[str, object]]:
    """Every flag as it was before the block, whatever the block sets or raises."""
    saved = snapshot()
    try:
        yield saved
    finally:
        restore(saved)


@contextlib.contextmanager
def matmul_precision(level: str) -> Iterator[None]:
    """``torch.set_float32_matmul_precision(level)`` for the block only ('highest', 'high', 'medium')."""
    with preserved():
        torch.set_float32_matmul_precision(level)
        yield


@contextlib.contextmanager
def conv_precision(device: torch.device, reduced: bool) -> Iterator[None]:
    """fp32 convolutions in full precision, or in the backend's reduced one (cuDNN: TF32, oneDNN:
    bf16), for the block only. The new API where this torch has it, else the legacy cuDNN flag
    (the CPU had no conv precision switch before the new API)."""
    with preserved():
        if device.type == "cuda":
            if has_new_api():
                torch.backends.cudnn.conv.fp32_precision = "tf32" if reduced else "ieee"
            else:
                torch.backends.cudnn.allow_tf32 = reduced
        elif has_new_api():
            torch.backends.mkldnn.conv.fp32_precision = "bf16" if reduced else "ieee"
        yield
