"""The negative controls' shared pieces (tests/unit/properties/test_negative_controls.py checks them,
tests/integration/test_negative_controls.py runs them on every variant): the bias just outside a
variant's own bound, and the known gaps."""

from __future__ import annotations

import math

import torch

from cases.spec import Tol

BIAS_FACTOR = 2.5  # times the variant's own bound: just outside it (the issue asks for 2-3x)

# (case, part.variant, dtype, control kind, what) → why the check cannot reject it. Each entry is
# held to it: a listed control that is rejected after all fails as stale.
KNOWN_GAPS: dict[tuple[str, str, str, str, str], str] = {}


def step_up(values: torch.Tensor) -> torch.Tensor:
    """Each value moved to the next one its dtype holds, upwards (integers: by 1)."""
    if values.is_floating_point():
        return torch.nextafter(values, torch.full_like(values, math.inf))
    return values + 1


def bias(out: torch.Tensor, truth: torch.Tensor, tol: Tol) -> torch.Tensor | str:
    if out.dtype == torch.bool:
        return "a bias of a truth value means nothing (zeros and constant move it)"
    if out.is_complex():
        return "complex output"
    t64 = truth.to(device=out.device, dtype=torch.float64)
    if tol.norm is not None:
        bound = tol.norm * torch.linalg.vector_norm(t64) / math.sqrt(t64.numel())
        shift = torch.full_like(t64, BIAS_FACTOR * bound.item())
    else:
        bound = tol.atol + tol.floor * t64.abs().max() + tol.rtol * t64.abs()
        shift = BIAS_FACTOR * torch.broadcast_to(torch.as_tensor(bound, dtype=torch.float64), t64.shape)
    target = out.to(torch.float64) + shift
    moved = target.to(out.dtype) if out.is_floating_point() else target.ceil().to(out.dtype)
    # Rounding to the dtype may land short of the shift (or on `out` itself where the bound is
    # below one step): one step further up puts it at least `shift` away, so at least 1.5 bounds
    # from the truth, and never on the right answer.
    short = (moved.to(torch.float64) < target) | (moved == out)
    moved = torch.where(short, step_up(moved), moved)
    if not out.is_floating_point():
        info = torch.iinfo(out.dtype)
        top = out.to(torch.float64) + shift.ceil().clamp_min(1) > info.max
        moved = torch.where(top, out - shift.ceil().clamp_min(1).to(out.dtype), moved)
    return moved
