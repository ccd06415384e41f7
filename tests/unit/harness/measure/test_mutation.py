"""Inputs a call wrote into (harness/measure/mutation.py): a mutated input is found where it sits, and what
the digest sees (one step, a swap, sparse values) and does not (a grad)."""

from __future__ import annotations

import math

import torch

from harness.measure import mutation


def _step_up(values: torch.Tensor) -> torch.Tensor:
    """Each value moved to the next one its dtype holds, upwards (integers: by 1)."""
    if values.is_floating_point():
        return torch.nextafter(values, torch.full_like(values, math.inf))
    return values + 1


def _mutate_one(value) -> str:
    """Move one element of the first non-empty tensor reachable from `value` one step up, in
    place, as a variant that writes into its input would; return its name (`value` is input 0)."""
    for name, tensor in mutation.tensors((value,)):
        part = mutation.parts(tensor)[-1]  # a sparse tensor's values
        if part.numel() == 0:
            continue
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(part.numel() // 2), part.shape))
        with torch.no_grad():
            held = part.detach()
            held[index] = ~held[index] if held.dtype == torch.bool else _step_up(held[index])
        return name
    raise ValueError("no non-empty tensor to change")


def test_a_mutated_input_is_found_where_it_sits():
    module = torch.nn.Linear(3, 2)
    inputs = (torch.zeros(4), [torch.ones(2), torch.arange(5)], module)
    before = mutation.snapshot(inputs)
    assert _mutate_one(inputs[1]) == "input 0[0]"  # named within the argument it was handed
    assert mutation.changed(inputs, before) == ["input 1[0]"]
    before = mutation.snapshot(inputs)
    _mutate_one(inputs[2])
    assert mutation.changed(inputs, before) == ["input 2.weight"]


# ---- the input watch -------------------------------------------------------------------------------


def test_the_digest_sees_one_step_a_swap_and_sparse_values_but_not_a_grad():
    x = torch.randn(1000, dtype=torch.float32)
    d = mutation.digest(x)
    x[500] = torch.nextafter(x[500], torch.tensor(math.inf))
    assert mutation.digest(x) != d
    d = mutation.digest(x)
    x[[3, 7]] = x[[7, 3]]
    assert mutation.digest(x) != d
    sparse = torch.eye(4).to_sparse()
    d = mutation.digest(sparse)
    sparse._values()[0] = 2.0
    assert mutation.digest(sparse) != d
    w = torch.ones(3, requires_grad=True)
    before = mutation.snapshot((w,))
    w.grad = torch.ones(3)
    assert mutation.changed((w,), before) == []
    strided = torch.arange(12.0).reshape(3, 4).t()  # non-contiguous: its storage is read
    d = mutation.digest(strided)
    strided[0, 2] += 1
    assert mutation.digest(strided) != d
