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

import collections
import dataclasses
import functools
from dataclasses import dataclass

import pytest
import torch

from cases.spec import dtype_name, tolerance_at
from harness import measure
from harness.machine import requirements
from harness.measure import mutation
from tests.negative_controls import KNOWN_GAPS, bias, step_up
from tests.targets import name_of, target_id, variant_targets

KINDS = ("zeros", "constant", "bias", "replay", "mutated input", "stale buffer")
REJECTED, GAP, NOT_APPLICABLE = "rejected", "known gap", "not applicable"
HANDED_BACK = "the freed block handed back"  # a stale buffer given the right answer's own memory


TARGETS = variant_targets()
_name, _target_id = name_of, target_id


@dataclass(frozen=True)
class Control:
    kind: str
    what: str  # which output or input it changed
    outcome: str  # REJECTED, GAP, NOT_APPLICABLE, or "passed" (a check that let it through)
    detail: str  # the check's message, or why the control cannot apply


def _outputs(result) -> tuple:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _zeros(out: torch.Tensor, truth: torch.Tensor) -> torch.Tensor | str:
    if not torch.any(truth != 0):
        return "the truth is zeros"
    return torch.zeros_like(out)


def _constant(out: torch.Tensor, truth: torch.Tensor) -> torch.Tensor | str:
    t64 = truth.to(torch.float64)
    if t64.min() == t64.max():
        return f"the truth is one value ({t64.numel()} element(s))"
    mean = out.to(torch.float64).mean()
    if out.dtype == torch.bool:
        return torch.full_like(out, bool(mean >= 0.5))
    if not out.is_floating_point():
        mean = mean.round()
    return torch.full_like(out, mean.item())


class _StaleBuffer:
    """Returns uninitialised outputs shaped like `right`'s, after `right` is freed; records for
    each whether the allocator handed back the block the right answer was freed from."""

    def __init__(self, specs):
        self.specs, self.handed_back = specs, []

    def __call__(self):
        outs = []
        for shape, stride, dtype, device, freed_at in self.specs:
            out = torch.empty_strided(shape, stride, dtype=dtype, device=device)
            self.handed_back.append(out.data_ptr() == freed_at)
            outs.append(out)
        return outs[0] if len(outs) == 1 else tuple(outs)


def _stale_buffer(right) -> _StaleBuffer | str:
    """`right` (the variant's own answer, whose only reference this is) freed, and a stand-in
    handed uninitialised memory of its outputs' shapes: what the allocator reuses first."""
    outs = _outputs(right)
    if any(not isinstance(o, torch.Tensor) or o.layout != torch.strided for o in outs):
        return "an output that is not a dense tensor (its memory is not one block to reuse)"
    specs = [(o.shape, o.stride(), o.dtype, o.device, o.data_ptr()) for o in outs]
    return _StaleBuffer(specs)  # the last references to `right` go with this frame: freed


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
            held[index] = ~held[index] if held.dtype == torch.bool else step_up(held[index])
        return name
    raise ValueError("no non-empty tensor to change")


def _arguments_to_mutate(inputs: tuple) -> list[int]:
    """The first argument of each kind (tensor, list or tuple, dict, module, dataclass, other)
    and the last one: every branch of the input watch's walk, without one control per parameter
    of a model handed as dozens of tensors (O(n²) digests)."""
    kinds: dict[str, int] = {}
    for j, value in enumerate(inputs):
        kind = next(
            (k for k, cls in _ARGUMENT_KINDS if isinstance(value, cls)),
            "dataclass" if dataclasses.is_dataclass(value) else "other",
        )
        kinds.setdefault(kind, j)
    return sorted({*kinds.values(), len(inputs) - 1} - {-1})


_ARGUMENT_KINDS = (
    ("tensor", torch.Tensor),
    ("sequence", (tuple, list)),
    ("dict", dict),
    ("module", torch.nn.Module),
)


def _verdict(tol, inputs, truth, answer_fn) -> tuple[bool, str]:
    """Whether the variant's own check rejects `answer_fn` standing in for it, and its message.
    `inputs`: the arguments it is handed and watched over (harness.measure.mutation)."""
    try:
        _, err = measure.checked_call(answer_fn, inputs, truth, tol)
    except AssertionError as exc:  # a shape or arity the truth does not have: test_check fails too
        return True, str(exc)
    return not err.within, err.worst


@functools.lru_cache(maxsize=None)
def controls_of(index: int) -> tuple[Control, ...] | str:
    """The controls of target `index`, or why it cannot run on this machine."""
    point = TARGETS[index]
    reason = requirements.unmet(point.requires, point.device)
    if reason:
        return reason
    tol = tolerance_at(point.tolerance, point.size)
    inputs = point.make_inputs(0)
    truth = point.oracle(*inputs)
    got, clean = measure.checked_call(point.variant.fn, inputs, truth, tol)
    assert clean.within, f"{point.id} as written fails its own check: {clean.worst}"
    found = []

    def judge(kind, what, answer, against=truth):
        if isinstance(answer, str):
            found.append(Control(kind, what, NOT_APPLICABLE, answer))
            return
        # Handed no inputs: a stand-in returning a prepared answer never touches them, and
        # digesting dozens of parameters per control made a target take 40 s.
        rejected, message = _verdict(tol, (), against, lambda: answer)
        found.append(Control(kind, what, REJECTED if rejected else "passed", message))

    gots, truths = _outputs(got), _outputs(truth)
    for i, (out, t) in enumerate(zip(gots, truths)):
        out, t = out.detach(), t.detach()
        what = f"output {i}" if len(gots) > 1 else "output"
        if out.numel() == 0:
            for kind in ("zeros", "constant", "bias"):
                judge(kind, what, "an empty output")
            continue
        for kind, wrong in (
            ("zeros", _zeros(out, t)),
            ("constant", _constant(out, t)),
            ("bias", bias(out, t, tol)),
        ):
            # The check bounds each output on its own and the others are the variant's own,
            # already within: the changed output alone decides (97 outputs, 3 controls each,
            # compared whole, were 9 s of one target).
            judge(kind, what, wrong, against=t)

    judge("replay", "seed 1's result", point.variant.fn(*point.make_inputs(1)))

    stale = _stale_buffer(point.variant.fn(*inputs))
    if isinstance(stale, str):
        found.append(Control("stale buffer", "every output", NOT_APPLICABLE, stale))
    else:
        rejected, message = _verdict(tol, (), truth, stale)
        what = HANDED_BACK if all(stale.handed_back) else "another block"
        found.append(Control("stale buffer", what, REJECTED if rejected else "passed", message or what))

    for j in _arguments_to_mutate(inputs):
        value = inputs[j]
        if not any(t.numel() for _, t in mutation.tensors((value,))):
            found.append(
                Control("mutated input", f"input {j}", NOT_APPLICABLE, "holds no (non-empty) tensor")
            )
            continue
        changed: list[str] = []

        def writes_into_input(*args, j=j, changed=changed):
            changed.append(_mutate_one(args[j]).replace("input 0", f"input {j}", 1))
            return got

        rejected, message = _verdict(tol, inputs, truth, writes_into_input)
        if rejected and changed[0] not in message:
            rejected, message = False, f"rejected, but the message does not name {changed[0]}: {message}"
        found.append(Control("mutated input", changed[0], REJECTED if rejected else "passed", message))
    return tuple(found)


def _gap_key(point, control):
    return (point.case.id, _name(point), dtype_name(point.dtype), control.kind, control.what)


# Every variant of every case, a few calls each: minutes on the CI machine, so out of the unit tier.
@pytest.mark.integration
@pytest.mark.parametrize("index", range(len(TARGETS)), ids=[_target_id(p) for p in TARGETS])
def test_every_control_is_rejected(index):
    point = TARGETS[index]
    controls = controls_of(index)
    if isinstance(controls, str):
        pytest.skip(controls)
    passed = [c for c in controls if c.outcome == "passed" and _gap_key(point, c) not in KNOWN_GAPS]
    assert not passed, f"{point.id}: the check lets through " + "; ".join(
        f"{c.kind} ({c.what}): {c.detail}" for c in passed
    )
    stale = [c for c in controls if c.outcome == REJECTED and _gap_key(point, c) in KNOWN_GAPS]
    assert not stale, f"{point.id}: rejected after all, drop from KNOWN_GAPS: {stale}"


@pytest.mark.integration
def test_the_tally_of_every_control(record_property):
    """Runs (or reads) every target's controls, prints rejected / generated per kind (visible with
    -rA) and records it; every generated control is rejected or a listed known gap."""
    tally = {kind: collections.Counter() for kind in KINDS}
    not_run, reasons = [], collections.Counter()
    for index, point in enumerate(TARGETS):
        controls = controls_of(index)
        if isinstance(controls, str):
            not_run.append(f"{_target_id(point)}: {controls}")
            continue
        for c in controls:
            outcome = GAP if c.outcome == "passed" and _gap_key(point, c) in KNOWN_GAPS else c.outcome
            tally[c.kind][outcome] += 1
            if outcome == NOT_APPLICABLE:
                reasons[f"{c.kind}: {c.detail}"] += 1
    lines = [f"negative controls: {len(TARGETS)} variant targets ({len(not_run)} not run here)"]
    for kind in KINDS:
        t = tally[kind]
        generated = t[REJECTED] + t[GAP] + t["passed"]
        lines.append(
            f"  {kind:14} rejected {t[REJECTED]:4} / generated {generated:4}"
            f"   known gaps {t[GAP]}   not applicable {t[NOT_APPLICABLE]}"
        )
    stale = [c for i in range(len(TARGETS)) if not isinstance(controls_of(i), str) for c in controls_of(i)]
    stale = [c for c in stale if c.kind == "stale buffer" and c.outcome != NOT_APPLICABLE]
    lines.append(
        f"  stale buffer: the allocator handed the freed answer's block back to "
        f"{sum(c.what == HANDED_BACK for c in stale)} of {len(stale)} stand-ins"
    )
    lines += [f"  not applicable, {reason}: {n}" for reason, n in sorted(reasons.items())]
    lines += [f"  not run, {line}" for line in not_run]
    print("\n".join(lines))
    record_property("negative_controls", {k: dict(v) for k, v in tally.items()})
    assert all(tally[kind]["passed"] == 0 for kind in KINDS), "\n".join(lines)
    assert all(tally[kind][REJECTED] > 0 for kind in KINDS), "\n".join(lines)
