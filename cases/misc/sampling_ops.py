"""Sampling and NaN helpers from notes 004 (items 33, 38, 39): `torch.multinomial`,
`repeat_interleave` vs `repeat`, NaN comparisons and nan-aware reductions.

Invalid multinomial weights are rejected differently per device: on the CPU the call raises
RuntimeError; on CUDA the weights are validated by an asynchronous device-side assert
(`_assert_async`), which surfaces at the next synchronisation and leaves the process's CUDA context
unusable. So on CUDA those probes run in fresh processes (`cases._launch.isolated`), never in the
test process.
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import torch

from cases._launch import isolated as _isolated
from cases.spec import Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict
from harness.measure import device as harness_device


def _raises(fn, exc=RuntimeError) -> bool:
    try:
        fn()
    except exc:
        return True
    return False


INVALID_WEIGHTS = {
    "negative": [1.0, -1.0],
    "all-zero": [0.0, 0.0, 0.0],
    "infinite": [1.0, float("inf")],
}


def multinomial_rejects(device: str, weights: list[float]) -> dict:
    """torch.multinomial on `weights`, finished on the device: what it raised, as data. On CUDA
    this must run in a process of its own (see the module docstring)."""
    w = torch.tensor(weights, device=device)
    try:
        torch.multinomial(w, 1)
        if w.is_cuda:
            harness_device.of(w.device).synchronize()
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
    w = torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    vector = tuple(torch.multinomial(w, 3, generator=g).shape)
    matrix = tuple(torch.multinomial(w.repeat(5, 1), 3, generator=g).shape)
    return judge_multinomial_shapes(vector, matrix, num_samples=3, rows=5)


def judge_multinomial_shapes(vector: tuple, matrix: tuple, num_samples: int, rows: int) -> Finding:
    """The notes: a vector gives a vector of num_samples indices, an (m, n) matrix an
    (m, num_samples) one."""
    right = vector == (num_samples,) and matrix == (rows, num_samples)
    return Finding(
        Verdict.HOLDS if right else Verdict.FAILS,
        f"vector of 4 weights → {vector}, ({rows}, 4) → {matrix} for num_samples = {num_samples} "
        f"(the notes: ({num_samples},) and ({rows}, {num_samples}))",
    )


def check_multinomial_weights(device):
    g = torch.Generator(device=device).manual_seed(0)
    w = torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)  # unnormalised weights
    rejected = _rejections(device)
    n = 200_000
    counts = (
        torch.bincount(torch.multinomial(w, n, replacement=True, generator=g), minlength=4).cpu().double()
    )
    p = w.cpu().double() / w.sum().item()
    z = ((counts - n * p) / (n * p * (1 - p)).sqrt()).abs().max().item()
    return judge_multinomial_weights(rejected, z, n, device.type)


def judge_multinomial_weights(rejected: dict[str, dict], z: float, n: int, where: str) -> Finding:
    """The notes: weights need not sum to 1 but must be non-negative, finite, with a non-zero sum.
    Unnormalised weights must draw with p = w/Σw (with replacement, each of 4 counts within 6σ of
    n·p: a false alarm once in 10⁸ runs; a probability off by 0.01 is ≥ 9σ at n = 200,000), and
    each invalid weight vector (`rejected`: what `multinomial_rejects` saw) must be refused."""
    accepted = [name for name, r in rejected.items() if not r["raised"]]
    isolated = any(r.get("isolated") for r in rejected.values())
    holds = not accepted and z < 6
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"with replacement, {n} draws from unnormalised weights match p = w/Σw within {z:.1f} σ; on {where}: "
        + "; ".join(f"{name} → {_how(r) if r['raised'] else 'ACCEPTED'}" for name, r in rejected.items())
        + (" (each seen in a fresh process)" if isolated else ""),
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
    """The notes: "无放回抽样的时候，num_samples数必须小于每一行的元素数": without replacement,
    num_samples must be *less than* the row length n. Fails where n of n runs (the bound is ≤ n,
    though torch's own docstring says "lower than" too) or where n + 1 is not refused; holds only
    where n of n is refused and n + 1 too."""
    holds = not n_of_n_runs and over_raises
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        "without replacement: n of n "
        + (
            "runs" + (" and returns a permutation" if permutation else " but NOT a permutation")
            if n_of_n_runs
            else "raises"
        )
        + f"; n + 1 {'raises' if over_raises else 'does NOT raise'}"
        + (
            ": num_samples may equal the row length, the bound is ≤ n, not < n (torch's docstring also says "
            "'lower than')"
            if n_of_n_runs
            else ""
        ),
    )


def check_multinomial_zero_weights_last(device):
    """The notes: without replacement, zero-weight entries are drawn only after all the others."""
    g = torch.Generator(device=device).manual_seed(0)
    w = torch.tensor([1.0, 0.0, 2.0, 0.0, 3.0], device=device)  # indices 0, 2, 4 carry the weight
    try:
        draws = torch.stack([torch.multinomial(w, 5, generator=g) for _ in range(200)]).cpu()
    except RuntimeError as exc:
        return judge_zero_weights_last(str(exc).splitlines()[0], 0, 0, device.type)
    assert (draws.sort(1).values == torch.arange(5)).all(), "each row must be a permutation"  # torch's own
    positive_first = int((draws[:, :3] % 2 == 0).all(1).sum())
    return judge_zero_weights_last("", positive_first, len(draws), device.type)


def judge_zero_weights_last(error: str, positive_first: int, draws: int, where: str) -> Finding:
    """Drawing all 5 of 5 weights (3 non-zero) without replacement: every draw must put the three
    positive-weight indices first. Raising instead (as some versions did past the non-zero count)
    leaves the claim false as written."""
    if error:
        return Finding(Verdict.FAILS, f"on {where}, num_samples = 5 > 3 non-zero weights raises: {error}")
    holds = draws > 0 and positive_first == draws
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"on {where} (torch {torch.__version__}), num_samples = 5 > 3 non-zero weights runs, and in "
        f"{positive_first} of {draws} draws the zero-weight indices came only after all positive ones",
    )


def check_repeat_interleave(device):
    x = torch.tensor([[1, 2], [3, 4]], device=device)
    xn = x.cpu().numpy()

    def same(t, a):
        return torch.equal(t.cpu(), torch.from_numpy(np.asarray(a)))

    reps = torch.tensor([1, 3], device=device)  # one count per row, each row then repeated whole
    observed = {
        "flattens without dim (as np.repeat)": same(x.repeat_interleave(2), np.repeat(xn, 2)),
        "dim=0 (as np.repeat axis=0)": same(x.repeat_interleave(2, dim=0), np.repeat(xn, 2, axis=0)),
        "a repeats tensor per row": same(x.repeat_interleave(reps, dim=0), np.repeat(xn, [1, 3], axis=0)),
    }
    return judge_repeat_interleave(observed)


def judge_repeat_interleave(observed: dict[str, bool]) -> Finding:
    """The notes: repeat_interleave works per element like np.repeat, flattens without a dim, and
    takes an int or a 1-D tensor of counts. Each observation names one of these."""
    wrong = [what for what, ok in observed.items() if not ok]
    return Finding(
        Verdict.FAILS if wrong or not observed else Verdict.HOLDS,
        "repeat_interleave: "
        + "; ".join(f"{what}: {'yes' if ok else 'NO'}" for what, ok in observed.items()),
    )


def check_repeats_size(device):
    """The notes, in bold: "repeats must have the same size as input along dim". Tried on 2 rows with
    repeats tensors of 2, 3 and 1 entries."""
    x = torch.tensor([[1, 2], [3, 4]], device=device)
    outcomes = {}
    for reps in ([1, 3], [1, 2, 3], [2]):
        try:
            out = x.repeat_interleave(torch.tensor(reps, device=device), dim=0)
            outcomes[len(reps)] = f"runs → {tuple(out.shape)}"
        except RuntimeError as exc:
            outcomes[len(reps)] = "raises: " + str(exc).splitlines()[0][:90]
    return judge_repeats_size(outcomes, size_along_dim=x.shape[0])


def judge_repeats_size(outcomes: dict[int, str], size_along_dim: int) -> Finding:
    """Holds where only a repeats tensor of input.size(dim) entries runs; fails where one of another
    length runs (a one-element tensor broadcast over the dim, as torch documents), or where the
    right length is refused."""
    runs = {n for n, what in outcomes.items() if what.startswith("runs")}
    holds = runs == {size_along_dim}
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"repeats tensors against {size_along_dim} rows (dim=0): "
        + "; ".join(f"{n} entries {what}" for n, what in outcomes.items())
        + (
            ""
            if holds
            else f": not only size {size_along_dim} is taken: a one-element repeats is broadcast over the "
            "dim (the rule is size(dim) or 1; the notes' bold words are the error message for other lengths)"
        ),
    )


def check_repeat(device):
    x = torch.tensor([[1, 2], [3, 4]], device=device)
    xn = x.cpu().numpy()
    tiled = torch.equal(x.repeat(2, 1).cpu(), torch.from_numpy(np.tile(xn, (2, 1))))
    flat_tiled = torch.equal(x.flatten().repeat(2).cpu(), torch.from_numpy(np.tile(xn.flatten(), 2)))
    # The notes' `np.arrary.repeats()`: numpy has neither `np.arrary` nor `ndarray.repeats`; read as
    # ndarray.repeat, the method its spelling is closest to (an erratum of the notes, a typo).
    spelled = [
        name
        for name, ok in (
            ("np.arrary", hasattr(np, "arrary")),
            ("ndarray.repeats", hasattr(np.ndarray, "repeats")),
        )
        if not ok
    ]
    ndarray_repeat = xn.repeat(2)
    like_tensor_repeat = np.array_equal(ndarray_repeat, x.flatten().repeat(2).cpu().numpy())
    return judge_repeat(tiled and flat_tiled, like_tensor_repeat, ndarray_repeat.tolist(), spelled)


def judge_repeat(
    tensor_repeat_tiles: bool, ndarray_repeat_same: bool, ndarray_repeat: list, missing_names: list = ()
) -> Finding:
    """The notes: "`tensor.repeat()`和`np.arrary.repeats()` 一样，是对整体的操作": tensor.repeat works on
    the whole tensor (np.tile) and is like numpy's ndarray.repeat. Holds only where both are so;
    numpy's ndarray.repeat repeats each element (np.repeat), so the likeness fails. The misspelled
    numpy names (`np.arrary`, `repeats`) are a typo, an erratum."""
    errata = ()
    if missing_names:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                "`np.arrary.repeats()`",
                f"numpy has no {' and no '.join(missing_names)}: the method is ndarray.repeat",
            ),
        )
    return Finding(
        Verdict.HOLDS if tensor_repeat_tiles and ndarray_repeat_same else Verdict.FAILS,
        "tensor.repeat "
        + ("repeats the whole tensor (= np.tile); " if tensor_repeat_tiles else "is NOT np.tile; ")
        + (
            "ndarray.repeat matches it"
            if ndarray_repeat_same
            else f"ndarray.repeat does NOT: it repeats each element (np.array([[1, 2], [3, 4]]).repeat(2) = "
            f"{ndarray_repeat}), like repeat_interleave; tensor.repeat's numpy twin is np.tile"
        ),
        errata,
    )


def check_nan(device):
    nan = float("nan")
    t = torch.tensor([1.0, nan, float("inf")], device=device)
    observed = {
        "nan != nan (python, numpy, torch)": nan != nan
        and not (np.nan == np.nan)
        and not (torch.nan == torch.nan),
        "tensor == itself is False at nan": not bool((t == t).all()),
        "isnan": t.isnan().tolist() == [False, True, False]
        and np.isnan([1.0, nan, np.inf]).tolist() == [False, True, False],
        "isinf": t.isinf().tolist() == [False, False, True]
        and np.isinf([1.0, nan, np.inf]).tolist() == [False, False, True],
        "isfinite": t.isfinite().tolist() == [True, False, False]
        and np.isfinite([1.0, nan, np.inf]).tolist() == [True, False, False],
    }
    return judge_nan(observed)


def judge_nan(observed: dict[str, bool]) -> Finding:
    """The notes: np.nan == np.nan is always False; isnan, isinf, isfinite mark nan, inf, neither."""
    wrong = [what for what, ok in observed.items() if not ok]
    return Finding(
        Verdict.FAILS if wrong else Verdict.HOLDS,
        "; ".join(f"{what}: {'as stated' if ok else 'NOT as stated'}" for what, ok in observed.items()),
    )


def check_nan_reductions(device):
    x = np.arange(10.0)
    x[3] = np.nan
    xt = torch.from_numpy(x).to(device)
    sums = {
        "numpy sum": float(x.sum()),
        "numpy nansum": float(np.nansum(x)),
        "torch sum": xt.sum().item(),
        "torch nansum": torch.nansum(xt).item(),
    }
    numpy_twins = {n: hasattr(torch, n) for n in ("nanmax", "nanmin", "nanargmax", "nanargmin")}
    listed = all(hasattr(np, n) for n in ("nansum", "nanmax", "nanmin", "nanargmax", "nanargmin"))
    return judge_nan_reductions(sums, listed, numpy_twins)


def judge_nan_reductions(sums: dict[str, float], listed_exist: bool, torch_twins: dict[str, bool]) -> Finding:
    """The notes' example: x = arange(10.) with x[3] = nan: x.sum() is nan, np.nansum(x) is 42.0
    (torch alike); the functions they list exist in numpy. torch's missing twins are context."""
    holds = (
        np.isnan(sums["numpy sum"])
        and np.isnan(sums["torch sum"])
        and sums["numpy nansum"] == 42.0
        and sums["torch nansum"] == 42.0
        and listed_exist
    )
    missing = [n for n, ok in torch_twins.items() if not ok]
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        ", ".join(f"{k} {v:g}" for k, v in sums.items())
        + f" (the notes: nan and 42.0); numpy has nansum/nanmax/nanmin/nanargmax/nanargmin: {listed_exist}. "
        f"No torch twin for {', '.join(missing) or 'none'} ("
        f"torch has nansum, nanmean, nanmedian, nanquantile)",
    )


# Inline code in 004's prose (items 38 and 33), not a fenced snippet `notes.parse` could hand out: the
# quote is the notes' words; the code beside it is that line made runnable (the signature as a def,
# the cast on an array).
NOTES_SPELLINGS = {
    "`torch.multinomial(input,num_samples,replacement-False) -> LongTensor`": (
        "def multinomial(input, num_samples, replacement-False): pass"
    ),
    "x = x.asstype(np.float32)": "import numpy as np\nx = np.arange(10.)\nx = x.asstype(np.float32)",
}


def check_notes_spellings(device):
    """Two lines of items 38 and 33 run as written: the signature (as a def) and the dtype cast."""
    errors = {}
    for quote, source in NOTES_SPELLINGS.items():
        try:
            exec(compile(source, "<notes>", "exec"), {})
            errors[quote] = ""
        except (SyntaxError, AttributeError, NameError) as exc:
            errors[quote] = f"{type(exc).__name__}: {exc}"
    signature = "`torch.multinomial(input,num_samples,replacement-False) -> LongTensor`"
    if errors[signature]:
        # The line is the notes' own copy of the signature: its `-` is theirs, torch's says `=`.
        errors[signature] = (
            f"`replacement-False` for `replacement=False`: as a def, {errors[signature]}; torch's "
            f"multinomial defaults replacement to {_replacement_default()}"
        )
    return judge_notes_spellings(errors)


def _replacement_default():
    try:
        return repr(inspect.signature(torch.multinomial).parameters["replacement"].default)
    except (TypeError, ValueError, KeyError):  # a builtin without a signature: its docstring says
        return "False (docstring: " + (torch.multinomial.__doc__ or "").split("\n")[1].strip()[:80] + ")"


def judge_notes_spellings(errors: dict[str, str]) -> Finding:
    """A misspelling of the notes' own is a typo: their signature line writes `replacement-False`
    for torch's `replacement=False` (as a def it does not compile), their cast `asstype` for
    `astype` (AttributeError). No verdict: the technique is the functions' behaviour, judged by the
    other checks."""
    errata = tuple(Erratum(ErratumKind.TYPO, quote, error) for quote, error in errors.items() if error)
    return Finding(
        None,
        "; ".join(f"{q} → {e or 'runs'}" for q, e in errors.items()),
        errata,
    )


CASE = Case(
    id="misc.sampling_ops",
    tier=3,
    claim="multinomial samples indices per row (without replacement num_samples < n, zero weights last); "
    "repeat_interleave repeats elements, repeat the whole tensor; nan != nan; nan-aware reductions.",
    source="004 items 33, 38, 39",
    claims=(
        Claim(
            "multinomial_shapes",
            "如果输入是一个 vector，输出也是个vector长度为num_samples … "
            "如果输入为一个长度为m*n的矩阵，输出为 m * num_samples的矩阵",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "multinomial_weights",
            "输入的矩阵每一行的元素都代表weights（不要求weights和为1，但必须非负，有限，并且和非零）",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="unnormalised weights draw with p = w/Σw; negative, infinite and all-zero rows are "
            "refused",
        ),
        Claim(
            "multinomial_bound",
            "无放回抽样的时候，num_samples数必须小于每一行的元素数",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="without replacement num_samples must be < n (the row length): n of n is refused",
        ),
        Claim(
            "zero_weights_last",
            "默认为无放回的抽样，对于那些value = 0的位置只有最后才会抽到",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="replacement defaults to False, and drawing more than the non-zero entries puts the "
            "zero-weight indices after all the positive ones",
        ),
        Claim(
            "repeat_interleave",
            "`torch.repeat_interleave(input,repeats,dim)` … 类似`np.repeat()` ,都是对每个元素的操作 … "
            "repeats : int 或 一维Tensor … 默认将原来张量拉平成1维再对所有元素repeat",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "repeats_size",
            "(repeats must have the same size as input along dim)",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="a repeats tensor of any length other than input.size(dim) is refused",
        ),
        Claim(
            "repeat_whole",
            "而`tensor.repeat()`和`np.arrary.repeats()` 一样，是对整体的操作",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="tensor.repeat() repeats the whole tensor (np.tile), like numpy's ndarray.repeat "
            "(`np.arrary.repeats`, a typo)",
        ),
        Claim(
            "nan_comparisons",
            "np.nan == np.nan永远为False … `np.isnan()`值为nan的时候为True … "
            "`np.isinf()` 值为inf的时候为True … `np.isfinite()` 值不是nan或者inf的时候为True",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "nan_reductions",
            ">>> x.sum()\nnan\n>>> np.nansum(x)\n42.0",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="the transcript's outputs: with x = arange(10.), x[3] = nan, x.sum() is nan and "
            "np.nansum(x) is 42.0 (torch's sum and nansum alike)",
        ),
    ),
    checks={
        "multinomial_shapes": Check(check_multinomial_shapes, claim="multinomial_shapes"),
        "multinomial_weights": Check(check_multinomial_weights, claim="multinomial_weights"),
        "multinomial_bound": Check(check_multinomial_bound, claim="multinomial_bound"),
        "multinomial_zero_weights_last": Check(
            check_multinomial_zero_weights_last, claim="zero_weights_last"
        ),
        "repeat_interleave": Check(check_repeat_interleave, claim="repeat_interleave"),
        "repeats_size": Check(check_repeats_size, claim="repeats_size"),
        "repeat": Check(check_repeat, claim="repeat_whole"),
        "nan": Check(check_nan, claim="nan_comparisons"),
        "nan_reductions": Check(check_nan_reductions, claim="nan_reductions"),
        "notes_spellings": Check(check_notes_spellings, devices=("cpu",)),
    },
)
