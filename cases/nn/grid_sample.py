"""`affine_grid` + `grid_sample`, the STN sampler (notes 000/001 "STN", 001 "grid_sample").

Normalised coordinates: x is the width axis, (−1, −1) is the top-left. With ``align_corners=True``
−1 and 1 are the centres of the corner pixels; with ``False`` (the default since 1.3) they are the
outer edges of the corner pixels, so pixel centres sit at (2i + 1)/W − 1.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

from cases.spec import UNIT_ROUNDOFF, Case, Check, Finding, Verdict

IDENTITY = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))


def _img(device, shape=(2, 3, 7, 9), seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(device)


def _theta(rows, n, device):
    return torch.tensor(rows, device=device).expand(n, 2, 3)


def _resampling_bound(x) -> float:
    """Sampling at pixel centres: a normalised coordinate rounds to ≤ u (it is ≤ 1) and unnormalising
    scales it by size/2 pixels, so a bilinear weight is off by ≤ u·size/2 per axis and moves the output
    by that times a neighbour difference (≤ 2·max|x|): u·(H + W)·max|x| at first order."""
    return UNIT_ROUNDOFF[torch.float32] * (x.shape[-2] + x.shape[-1]) * x.abs().max().item()


def check_identity(device):
    x = _img(device)
    errors = {}
    for ac in (False, True):
        grid = F.affine_grid(_theta(IDENTITY, 2, device), list(x.shape), align_corners=ac)
        errors[ac] = (F.grid_sample(x, grid, align_corners=ac) - x).abs().max().item()
        assert errors[ac] <= _resampling_bound(x), (ac, errors[ac])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grid = F.affine_grid(_theta(IDENTITY, 2, device), list(x.shape))  # the notes' call
        notes_out = F.grid_sample(x, grid)
    warned = [str(w.message) for w in caught if "align_corners" in str(w.message)]
    theta = _theta(IDENTITY, 2, device)
    explicit = F.grid_sample(x, F.affine_grid(theta, list(x.shape), align_corners=False), align_corners=False)
    # The same call with the default spelled out: bit-identical, no slack.
    assert torch.equal(notes_out, explicit), "notes' call = align_corners=False"
    return Finding(
        Verdict.HOLDS,
        f"identity theta reproduces the input: max error {errors[False]:.2g} (align_corners=False), "
        f"{errors[True]:.2g} (True); the notes' call without align_corners behaves as False and "
        f"{'warns' if warned else 'does not warn'} ({len(warned)} warnings)",
    )


def check_align_corners_consistency(device):
    x = _img(device)
    grid = F.affine_grid(_theta(IDENTITY, 2, device), list(x.shape), align_corners=True)
    mixed = (F.grid_sample(x, grid, align_corners=False) - x).abs().max().item()
    # Mixed, the samples move by a fraction of a pixel between std-1 neighbours: O(1) errors, against
    # the consistent pair's u·(H + W)·max|x| = 1e-5 (`_resampling_bound`).
    assert mixed > 0.1, "mixing align_corners between affine_grid and grid_sample should distort"
    return Finding(
        Verdict.HOLDS,
        f"affine_grid(align_corners=True) + grid_sample(align_corners=False) "
        f"is not the identity: max error {mixed:.3g} (input std 1) — keep them consistent",
    )


def check_corners_and_translation(device):
    x = _img(device, (1, 1, 4, 5))
    h, w = x.shape[-2:]
    corners = torch.tensor([[[[-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0], [1.0, 1.0]]]], device=device)
    at = F.grid_sample(x, corners, align_corners=True)[0, 0, 0]
    expected = torch.stack([x[0, 0, 0, 0], x[0, 0, 0, w - 1], x[0, 0, h - 1, 0], x[0, 0, h - 1, w - 1]])
    assert torch.equal(at, expected), "align_corners=True: (±1, ±1) are the corner pixel centres"
    # align_corners=False: (−1, −1) is the outer corner; border padding clamps it to pixel (0, 0),
    # zero padding averages it with three zeros.
    tl = corners[:, :, :1]
    assert torch.equal(
        F.grid_sample(x, tl, align_corners=False, padding_mode="border")[0, 0, 0, 0], x[0, 0, 0, 0]
    )
    zero_pad = F.grid_sample(x, tl, align_corners=False)[0, 0, 0, 0]
    # (−1, −1) unnormalises to (−0.5, −0.5) and the weight to 0.5·0.5, all exact in binary: exact.
    torch.testing.assert_close(zero_pad, 0.25 * x[0, 0, 0, 0], rtol=0, atol=0)
    # Translation by one pixel to the right in x: theta t_x = 2/W samples x[..., j + 1].
    shift = ((1.0, 0.0, 2.0 / w), (0.0, 1.0, 0.0))
    grid = F.affine_grid(_theta(shift, 1, device), list(x.shape), align_corners=False)
    out = F.grid_sample(x, grid, align_corners=False)
    torch.testing.assert_close(out[..., :-1], x[..., 1:], rtol=0, atol=_resampling_bound(x))
    # Past the right edge every bilinear neighbour is padding: exact zeros.
    assert out[..., -1].abs().max().item() == 0.0, "sampling past the right edge gives zeros"
    return Finding(
        Verdict.HOLDS,
        "(−1,−1) samples pixel (0,0) exactly with align_corners=True (and (1,1) the bottom-right); with "
        "False it is the outer corner (0.25·x[0,0] under zero padding); theta t_x=2/W shifts by one pixel",
    )


CASE = Case(
    id="nn.grid_sample",
    tier=3,
    claim="affine_grid + grid_sample resample an input by theta; (−1,−1) is the top-left, (1,1) the bottom-"
    "right; align_corners must agree between affine_grid and grid_sample.",
    source="000/001 STN, 001 grid_sample",
    checks={
        "identity": Check(check_identity),
        "align_corners_consistency": Check(check_align_corners_consistency),
        "corners_and_translation": Check(check_corners_and_translation),
    },
)
