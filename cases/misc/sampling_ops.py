"""Sampling and NaN helpers from notes 004 (items 33, 38, 39): `torch.multinomial`,
`repeat_interleave` vs `repeat`, NaN comparisons and nan-aware reductions.

Invalid multinomial weights are rejected differently per device: on the CPU the call raises
RuntimeError; on CUDA the weights are validated by an asynchronous device-side assert
(`_assert_async`), which surfaces at the next synchronisation and leaves the process's CUDA context
unusable. So on CUDA those probes run in fresh processes (`cases._lib.isolated`), never in the test process.
"""

from __future__ import annotations

import re

import numpy as np
import torch

from cases._lib import isolated as _isolated
from cases.spec import Case, Check, Erratum, ErratumKind, Finding, Verdict


def _raises(fn, exc=RuntimeError) -> bool:
    try:
        fn()
    except exc:
        return True
    return False


INVALID_WEIGHTS = {"negative": [1.0, -1.0], "all-zero": [0.0, 0.0, 0.0]}


def multinomial_rejects(device: str, weights: list[float]) -> dict:
    """torch.multinomial on `weights`, finished on the device: what it raised, as data. On CUDA
    this must run in a process of its own (see the module docstring)."""
    w = torch.tensor(weights, device=device)
    try:
        torch.multinomial(w, 1)
        if w.is_cuda:
            torch.cuda.synchronize(w.device)
    except RuntimeError as exc:
        return {"raised": type(exc).__name__, "message": str(exc).strip().splitlines()[0]}
    return {"raised": None, "message": ""}


def _asserts_on_device(device) -> bool:
    """Whether invalid input can end in a device-side assert on `device` (CUDA kernels validate
    asynchronously; the CPU raises at the call)."""
    return device.type == "cuda"


def _rejections(device) -> dict[str, dict]:
    """`multinomial_rejects` for each invalid weight vector: in this process on the CPU, each in a
    fresh process where a device-side assert could end this one's CUDA context."""
    if not _asserts_on_device(device):
        return {name: multinomial_rejects(str(device), w) for name, w in INVALID_WEIGHTS.items()}
    calls = [
        ("cases.misc.sampling_ops:multinomial_rejects", (str(device), w)) for w in INVALID_WEIGHTS.values()
    ]
    found = {}
    for name, outcome in zip(INVALID_WEIGHTS, _isolated.run_each(calls)):
        assert outcome.error is None, f"the {name} probe failed outside torch.multinomial: {outcome.error}"
        kernel = re.search(r"Assertion `(.+?)` failed", outcome.output)
        found[name] = {**outcome.value, "kernel": kernel.group(1) if kernel else None, "isolated": True}
    return found


def _how(r: dict) -> str:
    if "device-side assert" in r["message"]:
        return "a device-side assert" + (f" ('{r['kernel']}')" if r.get("kernel") else "")
    return f"{r['raised']} ('{r['message'][:80]}')"


def check_multinomial_shapes(device):
    g = torch.Generator(device=device).manual_seed(0)
    w = torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)  # unnormalised weights are fine
    assert torch.multinomial(w, 3, generator=g).shape == (3,)
    assert torch.multinomial(w.repeat(5, 1), 3, generator=g).shape == (5, 3)
    rejected = _rejections(device)
    for name, r in rejected.items():
        assert r["raised"], f"torch.multinomial accepted {name} weights on {device.type}"
    isolated = any(r.get("isolated") for r in rejected.values())
    n = 200_000
    counts = (
        torch.bincount(torch.multinomial(w, n, replacement=True, generator=g), minlength=4).cpu().double()
    )
    p = w.cpu().double() / w.sum().item()
    z = ((counts - n * p) / (n * p * (1 - p)).sqrt()).abs().max().item()
    # 6σ on each of 4 binomial counts: a false alarm once in 10⁸ runs; a probability off by 0.01 is ≥ 9σ.
    assert z < 6, f"with-replacement frequencies off by {z:.1f} standard deviations"
    return Finding(
        Verdict.HOLDS,
        f"vector → (num_samples,), (m, n) → (m, num_samples); weights need not sum to 1 but must be "
        f"non-negative with a non-zero sum (on {device.type}: "
        + "; ".join(f"{name} → {_how(r)}" for name, r in rejected.items())
        + (", each seen in a fresh process" if isolated else "")
        + f"); with replacement, {n} draws match p = w/Σw within {z:.1f} σ",
    )


def check_multinomial_bound(device):
    """The notes: without replacement, num_samples must be *less than* the row length."""
    g = torch.Generator(device=device).manual_seed(0)
    w = torch.tensor([1.0, 1.0, 1.0], device=device)
    try:
        full = torch.multinomial(w, 3, generator=g)
    except RuntimeError:
        full = None
    permutation = full is None or sorted(full.tolist()) == [0, 1, 2]
    over_raises = _raises(lambda: torch.multinomial(w, 4, generator=g))
    return judge_multinomial_bound(full is not None, permutation, over_raises)


def judge_multinomial_bound(n_of_n_runs: bool, permutation: bool, over_raises: bool) -> Finding:
    """The technique: sampling without replacement draws distinct indices and refuses more draws
    than there are entries. The notes' "num_samples must be less than the row length" echoes
    torch's own docstring ("must be lower than"); that n of n also works makes the wording an
    erratum (a wrong statement, shared with the docstring), never the technique's failure."""
    works = permutation and over_raises
    errata = ()
    if n_of_n_runs:
        errata = (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "无放回抽样的时候，num_samples数必须小于每一行的元素数 (must be less than)",
                "num_samples = n runs and returns a permutation; only n + 1 raises: the bound is ≤ n "
                "(torch's own docstring also says 'lower than')",
            ),
        )
    return Finding(
        Verdict.HOLDS if works else Verdict.FAILS,
        f"without replacement: n of n {'runs, a permutation' if n_of_n_runs and permutation else 'raises'}"
        f"; n + 1 {'raises' if over_raises else 'does NOT raise'}",
        errata,
    )


def check_multinomial_zero_weights_last(device):
    """The notes: without replacement, zero-weight entries are drawn only after all the others."""
    g = torch.Generator(device=device).manual_seed(0)
    w = torch.tensor([1.0, 0.0, 2.0, 0.0, 3.0], device=device)  # indices 0, 2, 4 carry the weight
    try:
        draws = torch.stack([torch.multinomial(w, 5, generator=g) for _ in range(200)]).cpu()
    except RuntimeError as exc:
        return Finding(
            Verdict.FAILS,
            f"on {device.type}, num_samples = 5 > 3 non-zero weights raises: {str(exc).splitlines()[0]}",
        )
    assert (draws.sort(1).values == torch.arange(5)).all(), "each row must be a permutation"
    positive_first = bool((draws[:, :3] % 2 == 0).all())
    return Finding(
        Verdict.HOLDS if positive_first else Verdict.FAILS,
        f"on {device.type} (torch {torch.__version__}), num_samples = 5 > 3 non-zero weights runs, and in "
        f"200 draws the zero-weight indices came {'only' if positive_first else 'not only'} after all "
        "positive ones",
    )


def check_repeat_interleave(device):
    x = torch.tensor([[1, 2], [3, 4]], device=device)
    xn = x.cpu().numpy()
    assert torch.equal(x.repeat_interleave(2).cpu(), torch.from_numpy(np.repeat(xn, 2)))  # flattens
    assert torch.equal(x.repeat_interleave(2, dim=0).cpu(), torch.from_numpy(np.repeat(xn, 2, axis=0)))
    reps = torch.tensor([1, 3], device=device)  # one count per row, each row then repeated whole
    assert torch.equal(
        x.repeat_interleave(reps, dim=0).cpu(), torch.from_numpy(np.repeat(xn, [1, 3], axis=0))
    )
    assert torch.equal(x.repeat(2, 1).cpu(), torch.from_numpy(np.tile(xn, (2, 1))))  # the whole tensor
    assert _raises(lambda: x.repeat_interleave(torch.tensor([1, 2, 3], device=device), dim=0))
    return Finding(
        Verdict.HOLDS,
        "repeat_interleave = np.repeat (per element; no dim flattens first; a repeats tensor must have "
        "input.size(dim) entries, a wrong length raises), repeat = np.tile (whole tensor), as the notes say",
    )


def check_nan(device):
    nan = float("nan")
    assert nan != nan and not (np.nan == np.nan) and not (torch.nan == torch.nan)
    t = torch.tensor([1.0, nan, float("inf")], device=device)
    assert t.isnan().tolist() == [False, True, False] and t.isinf().tolist() == [False, False, True]
    assert t.isfinite().tolist() == [True, False, False] and not bool((t == t).all())
    x = np.arange(10.0)
    x[3] = np.nan
    assert np.isnan(x.sum()) and np.nansum(x) == 42.0
    xt = torch.from_numpy(x).to(device)
    assert torch.isnan(xt.sum()) and torch.nansum(xt).item() == 42.0 and torch.nanmean(xt).item() == 42.0 / 9
    missing = [n for n in ("nanmax", "nanmin", "nanargmax", "nanargmin") if not hasattr(torch, n)]
    assert all(hasattr(np, n) for n in ("nanmax", "nanmin", "nanargmax", "nanargmin"))
    return Finding(
        Verdict.HOLDS,
        f"nan != nan (numpy and torch), isnan/isinf/isfinite as stated; x.sum() is nan and nansum is 42.0 "
        f"in numpy and torch. The notes' numpy list has no torch twin for {', '.join(missing) or 'none'} "
        f"(torch has nansum, nanmean, nanmedian, nanquantile)",
    )


CASE = Case(
    id="misc.sampling_ops",
    tier=3,
    claim="multinomial samples indices per row (without replacement num_samples < n, zero weights last); "
    "repeat_interleave repeats elements, repeat the whole tensor; nan != nan; nan-aware reductions.",
    source="004 items 33, 38, 39",
    checks={
        "multinomial_shapes": Check(check_multinomial_shapes),
        "multinomial_bound": Check(check_multinomial_bound),
        "multinomial_zero_weights_last": Check(check_multinomial_zero_weights_last),
        "repeat_interleave": Check(check_repeat_interleave),
        "nan": Check(check_nan),
    },
)
