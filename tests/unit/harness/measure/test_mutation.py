"""Every timed variant's own check rejects wrong answers: negative controls, generated.

For every variant of every comparison of every case (all tiers and roles, in every dtype it runs
on the CPU) at the quick profile's smallest size, on the CPU, through the suite's own check
(`VariantPoint`'s inputs, oracle and tolerance at that size, `measure.checked_call`, as
`test_check` runs it), a stand-in for the variant answers wrongly, and the check must fail:

* ``zeros``: one output replaced by zeros;
* ``constant``: one output replaced by its own mean, everywhere;
* ``bias``: one output with every element moved the same way by 2.5× that element's own bound
  (atol + floor·max|truth| + rtol·|truth|; norm-wise, 2.5·norm·||truth|| spread evenly), and
  by at least one step of the dtype: just outside the bound, where 10× would be too easy;
* ``replay``: the variant's result on another seed's inputs (computed once, returned again);
* ``mutated input``: the right result, returned after one element of one input was moved by one
  step of its dtype in place: the first argument of each kind (tensor, list, dict, module,
  dataclass) and the last one, so every branch of the input watch is shown to see it;
* ``stale buffer``: KernelBench's case. The variant computes the right answer on the same inputs
  (as the variant checked before it does in test_check, the comparison's inputs being shared),
  the answer is freed, and the stand-in returns ``torch.empty_strided`` of each output's shape,
  strides and dtype, never written: uninitialised memory that glibc's heap (or CUDA's caching
  allocator) hands back from the block just freed, the right answer in it. Nothing here forces
  the reuse: the tally counts how often the allocator really handed the freed block back (the
  realistic case, not a contrived one), and the check must reject every one, which it does
  because `measure.poison_recycled` overwrites that block before the call.

A control that cannot apply is counted as not applicable with the reason (zeros where the truth is
zeros, a constant where the truth is one value, a bias on a truth value, an argument with no tensor
in it), never skipped unseen. One that is not rejected fails its target's test unless
`KNOWN_GAPS` names it with the reason. The compiled twins are not targets of their own: a twin has
its naive variant's inputs, oracle and tolerance, and a control replaces its output, so its check
is the naive variant's, controlled here.

The last tests show the suite's path catching what the first call cannot: a variant that writes
into its inputs (`test_check`), and one that is right on its first call and wrong once warm
(`test_benchmark`'s check of the last timed call).
"""

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
