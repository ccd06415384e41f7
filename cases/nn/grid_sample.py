"""`affine_grid` + `grid_sample`, the STN sampler (notes 000/001 "STN", 001 "grid_sample").

Normalised coordinates: x is the width axis, (−1, −1) is the top-left. With ``align_corners=True``
−1 and 1 are the centres of the corner pixels; with ``False`` (the default since 1.3) they are the
outer edges of the corner pixels, so pixel centres sit at (2i + 1)/W − 1.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

from cases.spec import UNIT_ROUNDOFF, Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict

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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grid = F.affine_grid(_theta(IDENTITY, 2, device), list(x.shape))  # the notes' call
        notes_out = F.grid_sample(x, grid)
    warned = [str(w.message) for w in caught if "align_corners" in str(w.message)]
    theta = _theta(IDENTITY, 2, device)
    explicit = F.grid_sample(x, F.affine_grid(theta, list(x.shape), align_corners=False), align_corners=False)
    # The same call with the default spelled out: bit-identical, no slack.
    return judge_identity(errors, _resampling_bound(x), torch.equal(notes_out, explicit), len(warned))


def judge_identity(errors: dict, bound: float, notes_call_is_false: bool, warnings_seen: int) -> Finding:
    """The notes' STN lines resample x by theta: identity theta gives x back within the resampling
    bound for both align_corners, and the notes' call (no align_corners) is the False one."""
    ok = all(e <= bound for e in errors.values()) and notes_call_is_false
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"identity theta reproduces the input: max error {errors[False]:.2g} (align_corners=False), "
        f"{errors[True]:.2g} (True), bound {bound:.2g}; the notes' call without align_corners "
        f"{'behaves as' if notes_call_is_false else 'DIFFERS FROM'} False and "
        f"{'warns' if warnings_seen else 'does not warn'} ({warnings_seen} warnings)",
    )


def check_align_corners_consistency(device):
    x = _img(device)
    grid = F.affine_grid(_theta(IDENTITY, 2, device), list(x.shape), align_corners=True)
    mixed = (F.grid_sample(x, grid, align_corners=False) - x).abs().max().item()
    consistent = (F.grid_sample(x, grid, align_corners=True) - x).abs().max().item()
    # interpolate() beside them: a bilinear upsampling to twice the size against grid_sample on an
    # identity grid of that size. Border padding, because interpolate clamps source positions
    # outside the image to its edge where zero padding would mix in zeros.
    out = [2 * x.shape[-2], 2 * x.shape[-1]]
    theta = _theta(IDENTITY, x.shape[0], device)
    interp = {}
    for ac_i in (False, True):
        up = F.interpolate(x, size=out, mode="bilinear", align_corners=ac_i)
        for ac_g in (False, True):
            g = F.affine_grid(theta, [*x.shape[:2], *out], align_corners=ac_g)
            sampled = F.grid_sample(x, g, align_corners=ac_g, padding_mode="border")
            interp[ac_i, ac_g] = (up - sampled).abs().max().item()
    interp_consistent = max(interp[False, False], interp[True, True])
    interp_mixed = min(interp[False, True], interp[True, False])
    # Mixed, the samples move by a fraction of a pixel between std-1 neighbours: O(1) errors, against
    # the consistent pair's u·(H + W)·max|x| = 1e-5 (`_resampling_bound`); interpolate and
    # grid_sample each place a sample within that bound of the true position, so 2× apart.
    return judge_align_corners(
        mixed,
        consistent,
        _resampling_bound(x),
        hasattr(F, "intepolate"),
        interp_consistent=interp_consistent,
        interp_mixed=interp_mixed,
    )


def judge_align_corners(
    mixed: float,
    consistent: float,
    bound: float,
    intepolate_exists: bool,
    interp_consistent: float = 0.0,
    interp_mixed: float = 1.0,
) -> Finding:
    """ "align_corners ... should agree with interpolate() and affine_grid()": holds when the
    consistent pairs agree (affine_grid + grid_sample is the identity within the bound, interpolate
    equals grid_sample within twice it) and the mixed pairs do not (an O(1) distortion, > 0.1 on
    std-1 inputs); fails otherwise. The notes spell the function `intepolate()`: a typo when no
    such name exists."""
    errata = ()
    if not intepolate_exists:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                "其应该与 `intepolate()` 和 `affine_grid()` 处保持一致",
                "torch.nn.functional has no `intepolate`; the function is `F.interpolate`",
            ),
        )
    ok = consistent <= bound and mixed > 0.1 and interp_consistent <= 2 * bound and interp_mixed > 0.1
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"affine_grid(align_corners=True) + grid_sample(align_corners=False) "
        f"{'is not' if mixed > 0.1 else 'IS'} the identity: max error {mixed:.3g} (input std 1), against "
        f"{consistent:.2g} when both say True (bound {bound:.2g}); interpolate(bilinear, 2× size) against "
        f"grid_sample on an identity grid (border padding): {interp_consistent:.2g} apart with the same "
        f"align_corners (bound {2 * bound:.2g}), {interp_mixed:.3g} with different ones"
        + ("" if ok else ": NOT as the notes say"),
        errata,
    )


def check_align_corners_meaning(device):
    x = _img(device)
    # Sample positions well inside the image, away from every corner and edge (|coordinate| ≤ 0.5,
    # 0 left out: it is the one point both settings map alike).
    g = torch.Generator().manual_seed(2)
    coords = (torch.rand(1, 64, 1, 2, generator=g) * 0.4 + 0.1) * torch.tensor([1.0, -1.0])
    grid = coords.to(device).expand(x.shape[0], -1, -1, -1)
    moved = (F.grid_sample(x, grid, align_corners=True) - F.grid_sample(x, grid, align_corners=False)).abs()
    corner = torch.tensor([[[[-1.0, -1.0]]]], device=device).expand(x.shape[0], -1, -1, -1)
    at_corner = (
        F.grid_sample(x, corner, align_corners=True) - F.grid_sample(x, corner, align_corners=False)
    ).abs()
    return judge_align_corners_meaning(moved.max().item(), at_corner.max().item(), _resampling_bound(x))


def judge_align_corners_meaning(interior: float, corner: float, bound: float) -> Finding:
    """ "align_corners is the interpolation at the image's corners": holds where switching it changes
    samples at the corners only; fails where samples well inside the image (away from every corner)
    change by more than the resampling bound."""
    only_corners = interior <= bound
    return Finding(
        Verdict.HOLDS if only_corners else Verdict.FAILS,
        f"switching align_corners moves samples well inside the image by up to {interior:.3g} (input std 1, "
        f"bound {bound:.2g}) and at the corner (−1,−1) by {corner:.3g}"
        + (
            ": it changes samples at the corners only"
            if only_corners
            else ": not a corner setting; it says whether ±1 are the centres of the corner pixels (True) "
            "or their outer edges (False), which rescales every sample position by (size − 1)/size"
        ),
    )


def check_corners_and_translation(device):
    x = _img(device, (1, 1, 4, 5))
    h, w = x.shape[-2:]
    corners = torch.tensor([[[[-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0], [1.0, 1.0]]]], device=device)
    at = F.grid_sample(x, corners, align_corners=True)[0, 0, 0]
    expected = torch.stack([x[0, 0, 0, 0], x[0, 0, 0, w - 1], x[0, 0, h - 1, 0], x[0, 0, h - 1, w - 1]])
    seen = {"corners_true": torch.equal(at, expected)}
    # align_corners=False: (−1, −1) is the outer corner; border padding clamps it to pixel (0, 0),
    # zero padding averages it with three zeros.
    tl = corners[:, :, :1]
    border = F.grid_sample(x, tl, align_corners=False, padding_mode="border")[0, 0, 0, 0]
    seen["border_top_left"] = torch.equal(border, x[0, 0, 0, 0])
    zero_pad = F.grid_sample(x, tl, align_corners=False)[0, 0, 0, 0]
    # (−1, −1) unnormalises to (−0.5, −0.5) and the weight to 0.5·0.5, all exact in binary: exact.
    seen["zero_pad_quarter"] = torch.equal(zero_pad, 0.25 * x[0, 0, 0, 0])
    # Translation by one pixel to the right in x: theta t_x = 2/W samples x[..., j + 1].
    shift = ((1.0, 0.0, 2.0 / w), (0.0, 1.0, 0.0))
    grid = F.affine_grid(_theta(shift, 1, device), list(x.shape), align_corners=False)
    out = F.grid_sample(x, grid, align_corners=False)
    seen["shift_one_pixel"] = (out[..., :-1] - x[..., 1:]).abs().max().item() <= _resampling_bound(x)
    # Past the right edge every bilinear neighbour is padding: exact zeros.
    seen["outside_is_padding"] = out[..., -1].abs().max().item() == 0.0
    return judge_corners(seen)


def judge_corners(seen: dict[str, bool]) -> Finding:
    """ "x=-1, y=-1 is the top-left, x=1, y=1 the bottom-right; outside values are filled by
    padding_mode": every observation must hold."""
    wrong = sorted(k for k, ok in seen.items() if not ok)
    return Finding(
        Verdict.FAILS if wrong else Verdict.HOLDS,
        "(−1,−1) samples pixel (0,0) exactly with align_corners=True (and (1,1) the bottom-right); with "
        "False it is the outer corner (0.25·x[0,0] under zero padding, x[0,0] under border); theta "
        "t_x=2/W shifts by one pixel and beyond the edge gives padding zeros"
        + (f"; NOT observed: {', '.join(wrong)}" if wrong else ""),
    )


CASE = Case(
    id="nn.grid_sample",
    tier=3,
    claim="affine_grid + grid_sample resample an input by theta; (−1,−1) is the top-left, (1,1) the bottom-"
    "right; align_corners must agree between affine_grid and grid_sample.",
    source="000/001 STN, 001 grid_sample",
    claims=(
        Claim(
            "stn",
            "grid = F.affine_grid(theta, x.size())\nx = F.grid_sample(x, grid)",
            "001",
            ClaimKind.CORRECTNESS,
            reading="the notes' two lines resample x by theta (identity theta gives x back), with "
            "align_corners left at its default",
        ),
        Claim(
            "corners",
            "`x=-1, y=-1`代表左上角，`x=1, y=1`代表右下角，之外"
            "的值代表在图像外，通过 `padding_mode`指定填充方法",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="(−1, −1) is the top-left corner, (1, 1) the bottom-right, and positions beyond them "
            "take padding_mode's values",
        ),
        Claim(
            "align_corners_meaning",
            "`align_corners` 是指在图像角处插值方法",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="align_corners is a setting of how the image's corners are interpolated: switching "
            "it leaves samples away from the corners unchanged",
        ),
        Claim(
            "align_corners",
            "其应该与 `intepolate()` 和 `affine_grid()` 处保持一致",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="grid_sample's align_corners must be the one given to interpolate() and "
            "affine_grid(): consistent pairs agree, mixed pairs do not",
        ),
    ),
    checks={
        "identity": Check(check_identity, claim="stn"),
        "align_corners_consistency": Check(check_align_corners_consistency, claim="align_corners"),
        "corners_and_translation": Check(check_corners_and_translation, claim="corners"),
        "align_corners_meaning": Check(check_align_corners_meaning, claim="align_corners_meaning"),
    },
)
