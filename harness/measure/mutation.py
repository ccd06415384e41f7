"""Inputs a call changed in place: a digest of every tensor reachable from the inputs, taken
before the call and compared after it.

Why it matters: the suite computes a comparison's inputs and float64 truth once and hands the same
tensors to every variant and every timed call (plan.InputCache). A variant that writes into
its inputs makes every later call, and every variant after it, run on other data than the truth
was computed from, and a timed loop over changing data measures something else.

Why a digest and not a copy: the full profile sizes inputs to fill a GPU, where a copy of them
would not fit. Each tensor's storage is read a chunk at a time as 16-bit words, and each chunk
summed with fixed random weights in 1..2²⁶ (an int64 sum of at most 2²¹ products below 2⁴² cannot
overflow): any changed word moves the sum by its change times a non-zero weight, and words
swapped in place move it unless their two weights happen to be equal.

Reached: tensors, the items of tuples, lists and dicts, the fields of dataclasses and the
parameters and buffers of modules (a parameter's `.grad` is not its value and is not watched).
Files on disk and other objects are not.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, Iterator

import torch

CHUNK_WORDS = 1 << 21  # 4 MiB of 16-bit words: the chunk's int64 copy and its products are 16 MiB each
_weights: dict[torch.device, torch.Tensor] = {}


def tensors(inputs: tuple) -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor reachable from a call's arguments, named by where it sits
    (``input 2``, ``input 0[3]``, ``input 4.module.fc.weight``)."""
    seen: set[int] = set()
    for i, value in enumerate(inputs):
        yield from _walk(f"input {i}", value, seen)


def _walk(name: str, value: Any, seen: set[int]) -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        yield name, value
    elif isinstance(value, (tuple, list)):
        for j, item in enumerate(value):
            yield from _walk(f"{name}[{j}]", item, seen)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(f"{name}[{key!r}]", item, seen)
    elif id(value) in seen:  # a module or dataclass reached twice (a cycle, or shared)
        return
    elif isinstance(value, torch.nn.Module):
        seen.add(id(value))
        for sub, tensor in itertools.chain(value.named_parameters(), value.named_buffers()):
            yield f"{name}.{sub}", tensor
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        seen.add(id(value))
        for field in dataclasses.fields(value):
            yield from _walk(f"{name}.{field.name}", getattr(value, field.name), seen)


def snapshot(inputs: tuple) -> dict[str, tuple[int, ...]]:
    """The digest of every tensor reachable from `inputs`, by name."""
    return {name: digest(tensor) for name, tensor in tensors(inputs)}


def changed(inputs: tuple, before: dict[str, tuple[int, ...]]) -> list[str]:
    """Names of the tensors whose bytes differ from `before` (or that appeared or went: a list
    input appended to or emptied in place is changed too)."""
    after = snapshot(inputs)
    return [name for name in dict.fromkeys([*before, *after]) if before.get(name) != after.get(name)]


def digest(tensor: torch.Tensor) -> tuple[int, ...]:
    """A weighted sum of the words behind `tensor`, one per chunk of each of its storages."""
    sums = []
    for part in parts(tensor.detach()):
        if part.device.type == "meta" or part.untyped_storage().nbytes() == 0:
            continue
        data = torch.empty(0, dtype=torch.uint8, device=part.device).set_(part.untyped_storage())
        # 16-bit words where the storage holds whole ones (a third of the bytes' int64 traffic);
        # an odd number of bytes (bool, uint8) is read byte by byte.
        words = data.view(torch.int16) if data.numel() % 2 == 0 else data
        weights = _weights_on(part.device)
        for start in range(0, words.numel(), CHUNK_WORDS):
            chunk = words[start : start + CHUNK_WORDS]
            sums.append((chunk.to(torch.int64) * weights[: chunk.numel()]).sum())
    return tuple(int(s) for s in torch.stack(sums).tolist()) if sums else ()


def parts(tensor: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The strided tensors that hold a tensor's values: itself, or a sparse tensor's index and
    value tensors."""
    layout = tensor.layout
    if layout == torch.sparse_coo:
        return tensor._indices(), tensor._values()
    if layout in (torch.sparse_csr, torch.sparse_bsr):
        return tensor.crow_indices(), tensor.col_indices(), tensor.values()
    if layout in (torch.sparse_csc, torch.sparse_bsc):
        return tensor.ccol_indices(), tensor.row_indices(), tensor.values()
    return (tensor,)


def _weights_on(device: torch.device) -> torch.Tensor:
    if device not in _weights:
        g = torch.Generator().manual_seed(0x5EED)
        weights = torch.randint(1, 2**26, (CHUNK_WORDS,), generator=g, dtype=torch.int64)
        _weights[device] = weights.to(device)
    return _weights[device]
