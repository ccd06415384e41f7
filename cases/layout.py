"""Contiguity, views and copies (notes 004 "pytorch contiguous", 002 "补充").

A strided tensor is (storage, offset, sizes, strides); element [i0..ik] lives at
offset + Σ i_d·stride_d. `transpose`/`permute`/slicing/`expand`/`as_strided` change only the
metadata; `view` must find strides for the new shape that address the same elements in the same
row-major order, and raises when none exist; `reshape` is that view when it exists and a copy
otherwise; `contiguous()` copies exactly when the tensor is not already row-major.

The checks draw hundreds of random strided views with Hypothesis and hold each rule against an
independent oracle: the notes' own `isContiguous` (written out below as the notes give it) and a
brute-force search for view strides over the element addresses. The timed variants measure what
`.contiguous()` costs when it has to copy: a transposing copy against a straight copy of the same
bytes (the machine's copy bandwidth), with `bytes_moved` so reports give GB/s.
"""

from __future__ import annotations

import itertools
import math
import shutil
import subprocess
import tempfile
import warnings
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from cases._lib.inputs import generator, strided
from cases._lib.precision import ieee_fp32
from cases._lib.properties import run_property, smallest
from cases.spec import (
    UNIT_ROUNDOFF,
    Case,
    Check,
    Claim,
    ClaimKind,
    Comparison,
    Erratum,
    ErratumKind,
    Finding,
    InputFamily,
    Tol,
    Verdict,
    library,
    naive,
    optimized,
)
from harness.contract.rules import FromFindings

FP32 = torch.float32
U = UNIT_ROUNDOFF[FP32]


# ---- the notes' algorithm, as written (only the indentation is repaired) --------------------------


def is_contiguous_notes(tensor) -> bool:
    """notes 004, "C++/Python描述Tensor是否连续的递归版本": size-1 dims are skipped."""
    z = 1
    d = tensor.dim() - 1
    size = tensor.size()
    stride = tensor.stride()
    while d >= 0:
        if size[d] != 1:
            if stride[d] == z:
                z *= size[d]
            else:
                return False
        d -= 1
    return True


def is_contiguous_formula(tensor) -> bool:
    """notes 004, the "递归数学定义": stride[k-1] = 1 and stride[i] = stride[i+1]·size[i+1] for
    every i, with no exception for size-1 dims."""
    size, stride = tensor.size(), tensor.stride()
    k = len(size)
    if k == 0:
        return True
    return stride[k - 1] == 1 and all(stride[i] == stride[i + 1] * size[i + 1] for i in range(k - 1))


# ---- the oracle for view: brute force over element addresses -----------------------------------


def _addresses(tensor) -> list[int]:
    """Storage index of every element, in row-major (logical) order."""
    off, stride = tensor.storage_offset(), tensor.stride()
    return [
        off + sum(i * s for i, s in zip(idx, stride)) for idx in itertools.product(*map(range, tensor.shape))
    ]


def view_strides(tensor, shape) -> tuple[int, ...] | None:
    """Non-negative strides under which `shape` addresses exactly the elements of `tensor` in its
    row-major order, or None when no such strides exist (then `view` must raise).

    Each new dim of size > 1 must step by the address difference of its unit step in the flattened
    order; the candidate is then verified on every element. An empty tensor holds no addresses, so
    any strides do (torch then gives it contiguous ones).
    """
    shape = tuple(shape)
    contiguous = tuple(math.prod(shape[d + 1 :]) for d in range(len(shape)))
    if tensor.numel() == 0:
        return contiguous
    addr = _addresses(tensor)
    strides = tuple(addr[contiguous[d]] - addr[0] if n > 1 else 0 for d, n in enumerate(shape))
    if any(s < 0 for s in strides):
        return None
    for j, idx in enumerate(itertools.product(*map(range, shape))):
        if addr[j] != addr[0] + sum(i * s for i, s in zip(idx, strides)):
            return None
    return strides


def _same_storage(a, b) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


# ---- random strided views ------------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    tensor: torch.Tensor
    steps: str

    def __repr__(self) -> str:
        t = self.tensor
        return f"{self.steps} → shape {tuple(t.shape)}, stride {t.stride()}, offset {t.storage_offset()}"


@st.composite
def strided_views(draw, device="cpu"):
    """A contiguous tensor over a storage with spare room, then up to three metadata-only ops."""
    shape = draw(st.lists(st.integers(1, 5), max_size=4))
    if shape and draw(st.integers(0, 9)) == 0:  # one tensor in ten is empty
        shape[draw(st.integers(0, len(shape) - 1))] = 0
    numel, spare = math.prod(shape), draw(st.integers(0, 6))
    t = torch.arange(numel + spare, dtype=FP32, device=device)[:numel].view(shape)
    steps = [f"arange({numel + spare})[:{numel}].view{tuple(shape)}"]
    for op in draw(st.lists(st.sampled_from(_OPS), max_size=3)):
        t, step = op(draw, t)
        if step:
            steps.append(step)
    return View(t, ".".join(steps))


def _transpose(draw, t):
    if t.dim() < 2:
        return t, ""
    i, j = draw(st.integers(0, t.dim() - 1)), draw(st.integers(0, t.dim() - 1))
    return t.transpose(i, j), f"transpose({i}, {j})"


def _permute(draw, t):
    perm = draw(st.permutations(range(t.dim())))
    return t.permute(tuple(perm)), f"permute{tuple(perm)}"


def _slice(draw, t):
    if t.dim() == 0:
        return t, ""
    d = draw(st.integers(0, t.dim() - 1))
    start, step = draw(st.integers(0, t.shape[d])), draw(st.integers(1, 3))
    index = (slice(None),) * d + (slice(start, None, step),)
    return t[index], f"[{':, ' * d}{start}::{step}]"


def _expand(draw, t):
    lead = draw(st.integers(0, 1))
    sizes = [draw(st.integers(0, 3)) if n == 1 else n for n in t.shape]
    sizes = [draw(st.integers(1, 3))] * lead + sizes
    return t.expand(tuple(sizes)), f"expand{tuple(sizes)}"


def _unsqueeze(draw, t):
    d = draw(st.integers(0, t.dim()))
    return t.unsqueeze(d), f"unsqueeze({d})"


def _as_strided(draw, t):
    room = t.untyped_storage().nbytes() // t.element_size()
    shape = draw(st.lists(st.integers(0, 4), max_size=3))
    stride = [draw(st.integers(0, 6)) for _ in shape]
    offset = draw(st.integers(0, 3))
    if math.prod(shape) and offset + sum((n - 1) * s for n, s in zip(shape, stride)) >= room:
        return t, ""  # out of bounds: as_strided would read past the storage
    return t.as_strided(shape, stride, offset), f"as_strided({tuple(shape)}, {tuple(stride)}, {offset})"


_OPS = (_transpose, _permute, _slice, _expand, _unsqueeze, _as_strided)


@st.composite
def new_shapes(draw, numel):
    """A shape with `numel` elements: a random factorisation into 1 to 4 dims (size-1 dims too)."""
    dims, rest = [], numel
    for _ in range(draw(st.integers(0, 3))):
        if rest == 0:
            dims.append(draw(st.integers(0, 3)))
            continue
        divisors = [k for k in range(1, rest + 1) if rest % k == 0]
        k = draw(st.sampled_from(divisors))
        dims.append(k)
        rest //= k
    dims.append(rest)
    return tuple(draw(st.permutations(dims)))


@st.composite
def views_and_shapes(draw, device="cpu"):
    view = draw(strided_views(device))
    return view, draw(new_shapes(view.tensor.numel()))


# ---- checks -------------------------------------------------------------------------------------


# notes 004's Python version exactly as written: its `else:` is one space off its `if`, and its
# last line starts with a tab.
NOTES_IS_CONTIGUOUS_SOURCE = (
    "def isContiguous(tensor):\n"
    "  z = 1\n"
    "  d = tensor.dim()-1\n"
    "  size = tensor.size()\n"
    "  stride = tensor.stride()\n"
    "  while d>=0:\n"
    "    if size[d]!=1:\n"
    "      if stride[d]==z:\n"
    "        z*=size[d]\n"
    "       else:\n"
    "        return False\n"
    "    d-=1\n"
    "\treturn True\n"
)


# notes 004's C version exactly as written, after a stub of the TH types it names (the notes give
# the function only): `z*=self->size[d]` has no semicolon and `stride[d]` names no variable.
NOTES_IS_CONTIGUOUS_C = """
int THTensor(isContiguous)(const THTensor *self)
{
  long z=1;
  int d;
 \tfor (d=self->nDimension-1;d>=0;d--)
  {
    if (self->size[d]!=1)
    {
      if (stride[d]==z)
        z*=self->size[d]
      else
        return 0;
    }
  }
  return 1;
}
"""
_TH_STUB = (
    "typedef struct { int nDimension; long *size; long *stride; } THTensor;\n"
    "#define THTensor(name) THTensor_##name\n"
)


def _c_compile_errors(source: str) -> str | None:
    """The C compiler's errors on `source` ("" when it compiles), or None without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".c") as f:
        f.write(_TH_STUB + source)
        f.flush()
        done = subprocess.run([cc, "-fsyntax-only", "-x", "c", f.name], capture_output=True, text=True)
    errors = [line.split("error: ", 1)[1] for line in done.stderr.splitlines() if "error: " in line]
    return "; ".join(errors) if done.returncode else ""


def _compile_error(source: str) -> str:
    try:
        compile(source, "<notes>", "exec")
    except SyntaxError as exc:
        return f"{type(exc).__name__} on line {exc.lineno}: {exc.msg}"
    return ""


def check_notes_is_contiguous(device):
    """The notes' isContiguous, and their formula, against Tensor.is_contiguous()."""
    views = strided_views(str(device))
    seen = {"n": 0, "disagree": 0, "empty_disagree": 0, "empty": 0}

    def prop(v):
        t = v.tensor
        differs = is_contiguous_notes(t) != t.is_contiguous()
        key = "empty" if t.numel() == 0 else "n"
        seen[key] += 1
        seen["empty_disagree" if key == "empty" else "disagree"] += differs

    run = run_property(views, prop)
    nonempty_cex = smallest(
        views, lambda v: v.tensor.numel() > 0 and is_contiguous_notes(v.tensor) != v.tensor.is_contiguous()
    )
    code_cex = smallest(views, lambda v: is_contiguous_notes(v.tensor) != v.tensor.is_contiguous())
    formula_cex = smallest(views, lambda v: is_contiguous_formula(v.tensor) != v.tensor.is_contiguous())
    empty_cex = code_cex if code_cex is not None and code_cex.tensor.numel() == 0 else None
    evidence = (
        f"{run}: the notes' isContiguous agrees with is_contiguous() on "
        f"{seen['n'] - seen['disagree']} of {seen['n']} non-empty views"
        + (f" (smallest disagreement: {nonempty_cex!r})" if nonempty_cex is not None else "")
        + f"; on {seen['empty_disagree']} of {seen['empty']} empty ones it does not (torch calls every empty "
        f"tensor contiguous). Smallest counterexample (code): {code_cex!r}, notes "
        f"{code_cex and is_contiguous_notes(code_cex.tensor)}, torch "
        f"{code_cex and code_cex.tensor.is_contiguous()}. "
        f"The notes' formula (no skip for size-1 dims): {formula_cex!r}, formula "
        f"{formula_cex and is_contiguous_formula(formula_cex.tensor)}, torch "
        f"{formula_cex and formula_cex.tensor.is_contiguous()}"
    )
    return judge_notes_is_contiguous(
        seen["n"] > 0 and seen["disagree"] == 0 and nonempty_cex is None,
        evidence,
        f"{empty_cex!r}" if empty_cex is not None else "",
        f"{formula_cex!r}" if formula_cex is not None else "",
        snippet_error=_compile_error(NOTES_IS_CONTIGUOUS_SOURCE),
        c_snippet_error=_c_compile_errors(NOTES_IS_CONTIGUOUS_C),
    )


def judge_notes_is_contiguous(
    agrees_nonempty: bool,
    evidence: str,
    code_cex: str,
    formula_cex: str,
    snippet_error: str = "",
    c_snippet_error: str | None = "",
) -> Finding:
    """The technique is the notes' rule of contiguity: their loop agrees with torch on every
    non-empty view drawn. Where their code or formula misses a corner torch defines otherwise
    (empty tensors, size-1 dims), that is a wrong formula of the notes; where their Python version
    does not compile as written, a typo. Errata, deciding nothing."""
    errata = []
    if code_cex:
        errata.append(
            Erratum(
                ErratumKind.WRONG_SHAPE_OR_FORMULA,
                "isContiguous (notes 004)",
                f"false on an empty view torch calls contiguous: {code_cex}",
            )
        )
    if formula_cex:
        errata.append(
            Erratum(
                ErratumKind.WRONG_SHAPE_OR_FORMULA,
                "stride[i] = Π size[j>i] (notes 004)",
                f"no skip for size-1 dims: false on {formula_cex}",
            )
        )
    if snippet_error:
        errata.append(
            Erratum(
                ErratumKind.TYPO,
                "def isContiguous(tensor): … `       else:` … `<tab>return True`",
                f"the notes' Python version does not compile as written ({snippet_error}); "
                "with the indentation repaired it is the loop judged here",
            )
        )
    if c_snippet_error:
        errata.append(
            Erratum(
                ErratumKind.TYPO,
                "int THTensor(isContiguous)(const THTensor *self) … "
                "if (stride[d]==z) z*=self->size[d] else …",
                f"the notes' C version does not compile as written (with the TH types stubbed): "
                f"{c_snippet_error}; self->stride[d] and a `;` are meant",
            )
        )
    if c_snippet_error is None:
        evidence += "; the notes' C version was not compiled (no C compiler here)"
    return Finding(Verdict.HOLDS if agrees_nonempty else Verdict.FAILS, evidence, tuple(errata))


def check_view_rule(device):
    """`view` succeeds exactly when strides exist (brute force), shares storage, keeps the order."""
    counts = {"ok": 0, "raised": 0, "mismatch": 0}
    first = []

    def prop(example):
        v, shape = example
        t, strides = v.tensor, view_strides(v.tensor, shape)
        try:
            out = t.view(shape)
        except RuntimeError as exc:
            counts["raised"] += 1
            if strides is not None or "view size is not compatible" not in str(exc):
                counts["mismatch"] += 1
                first.append(f"{v}.view{shape} raised ({exc}) but strides {strides} exist")
            return
        counts["ok"] += 1
        right = (
            strides is not None
            and (_same_storage(out, t) or t.numel() == 0)
            and torch.equal(out.reshape(-1), t.reshape(-1))
        )
        if not right:
            counts["mismatch"] += 1
            first.append(f"{v}.view{shape} succeeded; brute-force strides {strides}")

    run = run_property(views_and_shapes(str(device)), prop)
    t = torch.arange(12.0, device=device).reshape(3, 4).t()
    try:
        t.view(12)
        transposed_raised = ""
    except RuntimeError as exc:
        transposed_raised = str(exc).split(".")[0]
    # The notes: "torch.view()等方法需要连续的Tensor". Splitting the first dim of the transposed
    # matrix needs no contiguity: strides (1, 4) → (2, 1, 4) address the same elements.
    view_of_noncontiguous = ""
    try:
        split = t.view(2, 2, 3)
        if not t.is_contiguous() and _same_storage(split, t):
            view_of_noncontiguous = (
                f"arange(12).reshape(3,4).t() (is_contiguous() False, strides {t.stride()}).view(2,2,3) "
                f"succeeds, sharing its storage (strides {split.stride()})"
            )
    except RuntimeError:
        pass
    return judge_view_rule(
        counts,
        transposed_raised,
        f"{run}" + (f"; first mismatch: {first[0]}" if first else ""),
        view_of_noncontiguous,
    )


def judge_view_rule(
    counts: dict, transposed_raised: str, run: str, view_of_noncontiguous: str = ""
) -> Finding:
    """The technique: view succeeds, sharing storage in row-major order, exactly when strides for
    the new shape exist, and raises otherwise (a transposed matrix cannot be flattened). Both
    outcomes must have been seen for the property to say anything. The notes' "view needs a
    contiguous tensor" is a wrong statement where a view of a non-contiguous tensor succeeded."""
    holds = counts["mismatch"] == 0 and counts["ok"] > 0 and counts["raised"] > 0 and bool(transposed_raised)
    errata = ()
    if view_of_noncontiguous:
        errata = (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "`torch.view()`等方法需要连续的Tensor",
                f"{view_of_noncontiguous}: view needs strides compatible with the new shape, not a "
                "contiguous tensor",
            ),
        )
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"{run}: view succeeded on {counts['ok']} and raised on {counts['raised']}; "
        f"{counts['mismatch']} disagreed with the brute-force stride search; view(12) on "
        "arange(12).reshape(3,4).t() "
        + (f"raises ({transposed_raised})" if transposed_raised else "does NOT raise"),
        errata,
    )


def check_reshape_rule(device):
    """`reshape` is a view when one exists and a copy otherwise — not `contiguous().view()`."""
    counts = {"view": 0, "copy": 0, "view_of_noncontiguous": 0, "mismatch": 0}

    def prop(example):
        v, shape = example
        t = v.tensor
        out = t.reshape(shape)
        if out.shape != shape or not torch.equal(out, t.contiguous().view(shape)):
            counts["mismatch"] += 1
            return
        if t.numel() == 0:
            return
        viewable = view_strides(t, shape) is not None
        counts["mismatch"] += _same_storage(out, t) != viewable
        counts["view" if viewable else "copy"] += 1
        counts["view_of_noncontiguous"] += viewable and not t.is_contiguous()

    run = run_property(views_and_shapes(str(device)), prop)
    # The notes: reshape ≈ contiguous().view(), reusing memory "if the array was contiguous". A
    # transposed matrix is not contiguous, yet splitting its first dim needs no copy.
    t = torch.arange(12, device=device).reshape(3, 4).t()
    shared = _same_storage(t.reshape(2, 2, 3), t)
    copied = not _same_storage(t.contiguous().view(2, 2, 3), t)
    example = ""
    if not t.is_contiguous() and shared and copied:
        example = (
            "arange(12).reshape(3,4).t() (is_contiguous() False, strides (1, 4)).reshape(2,2,3) shares its "
            "storage, .contiguous().view(2,2,3) copies"
        )
    return judge_reshape_rule(
        counts,
        f"{run}: reshape returned a view {counts['view']} times and a copy {counts['copy']} times; "
        f"{counts['mismatch']} times its values or its view/copy choice disagreed with contiguous().view() "
        "and the brute-force stride search",
        example,
    )


def judge_reshape_rule(counts: dict, evidence: str, view_of_noncontiguous: str) -> Finding:
    """The technique: reshape is a view exactly when one exists, else a copy, with the values of
    contiguous().view(). The notes' 'reshape is like contiguous().view(), reusing the memory if the
    array was contiguous' is a wrong statement where reshape viewed a non-contiguous tensor that
    contiguous().view() copies."""
    errata = ()
    if view_of_noncontiguous:
        errata = (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "reshape方法类似于tensor.contiguous().view(*args) … "
                "可以利用原有的空间如果原来的数组本来就是连续的",
                f"{view_of_noncontiguous}; {counts['view_of_noncontiguous']} of the drawn non-contiguous "
                "tensors were reshaped without a copy (reshape copies only when no view exists)",
            ),
        )
    holds = counts.get("mismatch", 0) == 0 and counts["view"] > 0 and counts["copy"] > 0
    return Finding(Verdict.HOLDS if holds else Verdict.FAILS, evidence, errata)


def check_contiguous_copies_only_when_needed(device):
    counts = {"self": 0, "copied": 0, "mismatch": 0}

    def prop(v):
        t = v.tensor
        c = t.contiguous()
        if t.is_contiguous():
            counts["self"] += 1
            counts["mismatch"] += c is not t
        else:
            counts["copied"] += 1
            counts["mismatch"] += not (c.is_contiguous() and torch.equal(c, t) and not _same_storage(c, t))

    run = run_property(strided_views(str(device)), prop)
    return judge_contiguous_copies(counts, f"{run}")


def judge_contiguous_copies(counts: dict, run: str) -> Finding:
    """The technique: contiguous() returns the tensor itself when it is already row-major and a new
    row-major storage with the same values otherwise."""
    holds = counts["mismatch"] == 0 and counts["self"] > 0 and counts["copied"] > 0
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"{run}: contiguous() on {counts['self']} contiguous views and {counts['copied']} others: "
        f"{counts['mismatch']} did not return the tensor itself, resp. a new contiguous storage with "
        "equal values",
    )


def check_view_keeps_contiguity(device):
    """The notes: "view ... and permute ... both make the tensor non-contiguous"."""
    counts = {
        "views": 0,
        "noncontiguous_views": 0,
        "source_changed": 0,
        "permutes": 0,
        "noncontiguous_permutes": 0,
    }

    def prop(example):
        v, shape = example
        t = v.tensor.contiguous()
        out = t.view(shape)
        counts["views"] += 1
        counts["source_changed"] += not t.is_contiguous()
        counts["noncontiguous_views"] += not out.is_contiguous()
        moved = [d for d in range(t.dim()) if t.shape[d] > 1]
        if len(moved) >= 2 and t.numel() > 0:
            perm = list(range(t.dim()))
            perm[moved[0]], perm[moved[-1]] = perm[moved[-1]], perm[moved[0]]
            counts["permutes"] += 1
            counts["noncontiguous_permutes"] += not t.permute(tuple(perm)).is_contiguous()

    run = run_property(views_and_shapes(str(device)), prop)
    return judge_view_keeps_contiguity(counts, run)


def judge_view_keeps_contiguity(counts: dict, run: str) -> Finding:
    """The technique: permuting two dims of size > 1 makes a contiguous tensor non-contiguous. The
    notes say view does too: where no view of a contiguous tensor (nor its source) was
    non-contiguous, that is a wrong statement of the notes."""
    permute_breaks = counts["noncontiguous_permutes"] == counts["permutes"] > 0
    errata = ()
    if counts["noncontiguous_views"] == 0 and counts.get("source_changed", 0) == 0:
        errata = (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "torch.view() … permute … 两者都会使得原来的tensor变为不是contiguous的",
                f"{counts['views']} views of contiguous tensors: the source stayed contiguous and "
                "every view was contiguous (a view of a contiguous tensor is)",
            ),
        )
    return Finding(
        Verdict.HOLDS if permute_breaks else Verdict.FAILS,
        f"{run}: {counts['noncontiguous_permutes']} of {counts['permutes']} permutes swapping two dims of "
        f"size > 1 were non-contiguous; {counts['noncontiguous_views']} of {counts['views']} views of "
        f"contiguous tensors were, and {counts.get('source_changed', 0)} sources changed",
        errata,
    )


def check_notes_snippet(device):
    """notes 004: `a = torch.range(12).reshape(3,4)` … (True, False, True), shared data_ptr."""
    try:
        torch.range(12)
        range_error = None
    except TypeError as exc:
        range_error = str(exc)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        inclusive = torch.range(0, 12).numel()
    deprecation = next((str(w.message) for w in caught if "deprecated" in str(w.message)), "")
    a = torch.arange(12, device=device).reshape(3, 4)
    b = a.transpose(0, 1)
    c = b.contiguous()
    printed = (a.is_contiguous(), b.is_contiguous(), c.is_contiguous()) == (True, False, True)
    shared = a.data_ptr() == b.data_ptr() and b.data_ptr() != c.data_ptr()
    # The notes' prose on the same transpose: an (a, b) array steps 1 along a row and "a" down a
    # column, and its transpose has strides (a, 1). Here (a, b) = (3, 4).
    strides = (tuple(a.shape), a.stride(), b.stride())
    return judge_notes_snippet(range_error, printed and shared, inclusive, deprecation, strides)


def judge_notes_snippet(
    range_error: str | None,
    results_hold: bool,
    inclusive: int,
    deprecation: str = "",
    strides: tuple | None = None,
) -> Finding:
    """The technique: the snippet's printed contiguity and storage sharing, with torch.arange.
    torch.range as written is a deprecated API of the notes (it warns so; it is end-inclusive, and
    range(12) lacks its end), an erratum. `strides`: ((a, b), the matrix's strides, its
    transpose's), against the notes' "列相邻只需要a; 现在的stride为(a,1)": a wrong formula where
    they differ."""
    errata = []
    if strides is not None:
        (rows, cols), before, after = strides
        said_before, said_after = (rows, 1), (rows, 1)
        if before != said_before or after != said_after:
            errata.append(
                Erratum(
                    ErratumKind.WRONG_SHAPE_OR_FORMULA,
                    "原来数组(a,b)访问行相邻只需要1,列相邻只需要a;现在的stride为(a,1)",
                    f"an ({rows}, {cols}) row-major array has strides {before} (the next row is b = {cols} "
                    f"elements on, not a), and its transpose {after}, not (a, 1) = {said_after}",
                )
            )
    if range_error is not None or deprecation:
        said = [
            f"warns: {deprecation.split(' because')[0]}" if deprecation else "",
            f"range(12) raises ({range_error})" if range_error else "",
        ]
        errata.append(
            Erratum(
                ErratumKind.DEPRECATED_API,
                "a = torch.range(12).reshape(3,4)",
                "; ".join(x for x in said if x)
                + f"; it is end-inclusive (range(0, 12) has {inclusive} elements, not 12): torch.arange(12) "
                "is meant",
            )
        )
    return Finding(
        Verdict.HOLDS if results_hold else Verdict.FAILS,
        "with torch.arange(12) the printed results "
        + ("hold: (True, False, True), a/b share data_ptr, c does not" if results_hold else "do NOT hold")
        + (f"; strides {strides[1]} → {strides[2]} after transpose" if strides else ""),
        tuple(errata),
    )


# ---- timed: what .contiguous() costs when it copies --------------------------------------------


def make_matrix(size, dtype, device, seed):
    g = generator(device, seed)
    return (torch.randn((size["n"], size["m"]), generator=g, dtype=FP32, device=device).to(dtype),)


def make_transposed(size, dtype, device, seed):
    """The same logical (n, m) matrix stored column-major: the view `.contiguous()` must copy."""
    (x,) = make_matrix(size, dtype, device, seed)
    return (x.t().contiguous().t(),)


def transposed_copy(x):
    # Reads n·m elements with stride n and writes them row-major: every read cache line
    # carries one useful element unless the kernel tiles the transpose.
    return x.contiguous()


def straight_copy(x):
    # Reads and writes n·m elements sequentially: the machine's copy bandwidth.
    return x.clone()


def check_timed_copies_are_row_major(device):
    """The timed variants are only comparable if both really produce a new row-major tensor;
    values alone (what the oracle sees) cannot tell a copy from a strided view."""
    size = {"n": 64, "m": 48}
    seen = {}
    for name, fn, maker in (
        ("transposed_contiguous", transposed_copy, make_transposed),
        ("clone", straight_copy, make_matrix),
    ):
        (x,) = maker(size, FP32, device, 0)
        out = fn(x)
        seen[name] = (out.stride(), out.is_contiguous(), _same_storage(out, x), torch.equal(out, x))
    return judge_copies_are_row_major(seen)


def judge_copies_are_row_major(seen: dict) -> Finding:
    """`seen`: name → (result's strides, is_contiguous, shares the input's storage, equal values).
    The notes: contiguous() of a transposed tensor "额外开辟一个底层一维数组" laid out row-major: a
    new storage, row-major, the same values (for the clone too, or the two timings compare
    different work)."""
    wrong = [n for n, (_, contiguous, shared, equal) in seen.items() if not contiguous or shared or not equal]
    return Finding(
        Verdict.FAILS if wrong or not seen else Verdict.HOLDS,
        "; ".join(
            f"{n}: strides {st}, {'row-major' if c else 'NOT row-major'}, "
            f"{'SHARES the input storage' if sh else 'new storage'}, values {'equal' if eq else 'DIFFER'}"
            for n, (st, c, sh, eq) in seen.items()
        ),
    )


def copy_float64(x):
    return x.to(torch.float64).contiguous()


# ---- timed parts: one op on the same logical matrix in three layouts; a conv in two formats ------
#
# Each op of OPS is a part of the case: its inputs are two n×n fp32 matrices (x, w), and x is
# stored row-major (the optimized layout), column-major (the same values with transposed strides:
# the naive one), or column-major made contiguous inside the timed call (the library's fix, which
# pays for the copy). Every variant is checked against the op in float64.


def make_pair(size, dtype, device, seed):
    (x,) = make_matrix({"n": size["n"], "m": size["n"]}, dtype, device, seed)
    (w,) = make_matrix({"n": size["n"], "m": size["n"]}, dtype, device, seed + 1)
    return x, w


def make_pair_colmajor(size, dtype, device, seed):
    x, w = make_pair(size, dtype, device, seed)
    return x.t().contiguous().t(), w


def _strided_pair(x, w):
    return strided(x), strided(w)


def _op_part(op, flops, bytes_moved, tolerance) -> Comparison:
    def contiguous_first(x, w):
        return op(x.contiguous(), w)

    def in_float64(x, w):
        return op(x.double(), w.double())

    return Comparison(
        make_inputs=make_pair,
        variants={
            "rowmajor": optimized(op),
            "colmajor": naive(op, inputs=make_pair_colmajor),
            "colmajor_contiguous_first": library(contiguous_first, inputs=make_pair_colmajor),
        },
        oracle=in_float64,
        tolerance={FP32: tolerance},
        sizes={"quick": [{"n": 256}, {"n": 1024}], "full": [{"n": n} for n in (1024, 4096, 16384)]},
        input_families={
            # Neither row- nor column-major: the op's generic strided path, and .contiguous()'s copy.
            "strided": InputFamily(_strided_pair),
            "one_by_one": InputFamily(resize=lambda s: {"n": 1}),  # every stride legal, a 1×1 result
        },
        flops=flops,
        bytes_moved=bytes_moved,
    )


def _sum_bound(size) -> Tol:
    # A sum of n terms of N(0, 1): rounding error ~u·√n of the terms' running size, on small and
    # large sums alike, so a floor at the results' scale (as for every reduction in the suite).
    return Tol(rtol=8 * U, floor=2 * U * math.sqrt(size["n"]))


OPS = {
    # Reads n² elements along rows / down columns; writes n.
    "sum_rows": _op_part(lambda x, w: x.sum(1), None, lambda s, b: s["n"] ** 2 * b, _sum_bound),
    "sum_cols": _op_part(lambda x, w: x.sum(0), None, lambda s, b: s["n"] ** 2 * b, _sum_bound),
    # x·2 is exact, +1 rounds once (fused or not): within u of the float64 result.
    "axpb": _op_part(lambda x, w: x * 2.0 + 1.0, None, lambda s, b: 2 * s["n"] ** 2 * b, Tol(rtol=U)),
    # One rounding per element.
    "add_rowmajor": _op_part(lambda x, w: x + w, None, lambda s, b: 3 * s["n"] ** 2 * b, Tol(rtol=U)),
    # 2n³ flops on 3n² elements; a dot product of length n per output: 2u·√n of the terms' size.
    "matmul": _op_part(
        ieee_fp32(torch.matmul),  # IEEE fp32 whatever TF32 setting the environment brings
        lambda s: 2 * s["n"] ** 3,
        lambda s, b: 3 * s["n"] ** 2 * b,
        lambda s: Tol(rtol=8 * U, floor=2 * U * math.sqrt(s["n"])),
    ),
}


def make_conv(size, dtype, device, seed):
    """(input, weight, bias) of a 3×3 conv from ``c`` to ``2c`` channels, NCHW (contiguous)."""
    g = generator(device, seed)
    b, c, hw = size["b"], size["c"], size["hw"]
    x = torch.randn((b, c, hw, hw), generator=g, device=device)
    weight = torch.randn((2 * c, c, 3, 3), generator=g, device=device) * 0.05
    bias = torch.randn(2 * c, generator=g, device=device) * 0.05
    return tuple(t.to(dtype) for t in (x, weight, bias))


def make_conv_channels_last(size, dtype, device, seed):
    x, weight, bias = make_conv(size, dtype, device, seed)
    cl = torch.channels_last
    return x.contiguous(memory_format=cl), weight.contiguous(memory_format=cl), bias


# fp32 means IEEE fp32 in both formats, checked and timed: cuDNN would otherwise run it in TF32
# (its default), a 10-bit mantissa, and the formats' errors and speeds would be TF32's.
@ieee_fp32
def conv3x3(x, weight, bias):
    return torch.nn.functional.conv2d(x, weight, bias, padding=1)


def conv3x3_float64(x, weight, bias):
    return torch.nn.functional.conv2d(x.double(), weight.double(), bias.double(), padding=1)


def conv_tolerance(channels: int) -> Tol:
    """The fp32 bound for the 3×3 conv over `channels` inputs, in either format.

    Each output sums K = 9·channels products of any sign: ~u·√K of the terms' size, on outputs
    near zero as on large ones, so a floor at the outputs' scale, 8u·√K (the factor 8 as for the
    conv cases: cuDNN and oneDNN pick Winograd or implicit-GEMM algorithms per layout, a few more
    roundings of transformed operands), plus 8u relative. IEEE fp32 only: the conv runs with
    TF32 off, whose error (~u_tf32 = 2⁻¹¹ of the terms' size, 1.2e-3 on an H100) is far outside.
    """
    return Tol(rtol=8 * U, floor=8 * U * math.sqrt(9 * channels))


CONV = Comparison(
    make_inputs=make_conv,
    variants={
        "contiguous": naive(conv3x3),
        "channels_last": optimized(conv3x3, inputs=make_conv_channels_last),
    },
    oracle=conv3x3_float64,
    tolerance={FP32: lambda s: conv_tolerance(s["c"])},
    sizes={
        "quick": [{"b": 8, "c": 32, "hw": 32}],
        "full": [{"b": 32, "c": 64, "hw": 56}, {"b": 64, "c": 128, "hw": 56}, {"b": 128, "c": 256, "hw": 28}],
    },
    flops=lambda s: 2 * s["b"] * 2 * s["c"] * s["hw"] ** 2 * s["c"] * 9,
    x="c",
    input_families={
        # The formats mixed: a channels_last input with an NCHW weight, and the reverse; then an
        # input in no format at all (every second element of a buffer).
        "channels_last_input_nchw_weight": InputFamily(
            lambda x, w, b: (x.contiguous(memory_format=torch.channels_last), w.contiguous(), b)
        ),
        "nchw_input_channels_last_weight": InputFamily(
            lambda x, w, b: (x.contiguous(), w.contiguous(memory_format=torch.channels_last), b)
        ),
        "strided_input": InputFamily(lambda x, w, b: (strided(x), w, b)),
        "batch_of_one_1x1_image": InputFamily(resize=lambda s: {**s, "b": 1, "hw": 1}),
    },
)


def check_timed_inputs_have_their_layouts(device):
    """The parts compare layouts, so each variant's input must really be stored as named: values
    alone (what the oracle sees) cannot tell a column-major matrix from a row-major one."""
    size = {"n": 64}
    (x, _), (xt, _) = make_pair(size, FP32, device, 0), make_pair_colmajor(size, FP32, device, 0)
    (cl, weight, _) = make_conv_channels_last({"b": 2, "c": 4, "hw": 5}, FP32, device, 0)
    cl_ok = lambda t: t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous()  # noqa: E731
    return judge_timed_layouts(
        {
            "row-major matrix": x.is_contiguous() and torch.equal(x, xt),
            f"column-major matrix (strides {xt.stride()})": xt.stride() == (1, 64),
            "channels_last input": cl_ok(cl),
            "channels_last weight": cl_ok(weight),
        }
    )


def judge_timed_layouts(stored_as_named: dict) -> Finding:
    """The suite's own precondition, context: each timed input stored in the layout its variant
    names (values alone cannot tell). Decides no claim of the notes."""
    wrong = [what for what, ok in stored_as_named.items() if not ok]
    return Finding(
        Verdict.FAILS if wrong or not stored_as_named else Verdict.HOLDS,
        "timed inputs stored as named: " + ", ".join(stored_as_named)
        if not wrong
        else f"NOT stored as named: {', '.join(wrong)}",
    )


CASE = Case(
    # fp32 held to IEEE bounds: not measured on CUDA where TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32
    requires=("ieee_fp32",),
    id="layout.contiguous",
    tier=1,
    claim="transpose/permute change strides, not storage; view needs compatible strides; reshape = view when "
    "possible else copy; contiguous() copies only when needed (and the notes' isContiguous decides which).",
    source="004 pytorch contiguous; 002 补充",
    make_inputs=make_matrix,
    variants={
        # Its check against the truth: .contiguous() of a column-major view gives the same values.
        "transposed_contiguous": naive(transposed_copy, inputs=make_transposed, claim="contiguous_copies"),
        "clone": library(straight_copy),
    },
    oracle=copy_float64,
    tolerance={FP32: Tol(rtol=0.0, atol=0.0), torch.bfloat16: Tol(rtol=0.0, atol=0.0)},  # copies are exact
    dtypes={"cpu": (FP32,), "cuda": (FP32, torch.bfloat16)},
    sizes={
        "quick": [{"n": n, "m": n} for n in (256, 1024, 2048)],
        "full": [{"n": n, "m": n} for n in (1024, 4096, 8192, 16384, 32768)],
    },
    claims=(
        Claim(
            "is_contiguous",
            "torch.tensor.is_contiguous(): "
            "Tensor底层一维数组元素的存储顺序与Tensor按行优先一维展开的元素顺序是否一致 "
            "(and def isContiguous(tensor): …)",
            "004",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "transpose_strides",
            "transpose,permute,并没有改变最初数组的底层按行存储的顺序,并不会额外开辟一个内存空间,只是改变了stride的元信息",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "contiguous_copies",
            "torch.tensor.contiguous(): 额外开辟一个底层一维数组与tensor逻辑行优先展开数组存储方式相同的数据",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "snippet",
            "a.is_contiguous(),b.is_contiguous(),c.is_contiguous() #True,False,True; "
            "a.data_ptr() == b.data_ptr() #True; b.data_ptr() == c.data_ptr() #False",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "view_shares",
            "`torch.view()`等方法 … （由于历史的原因，大家默认规定view就必须共享内存）",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "reshape",
            "reshape()可以开辟一个新的空间，也可以利用原有的空间如果原来的数组本来就是连续的",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
    ),
    checks={
        "notes_is_contiguous": Check(check_notes_is_contiguous, claim="is_contiguous"),
        "view_rule": Check(check_view_rule, claim="view_shares"),
        "reshape_rule": Check(check_reshape_rule, claim="reshape"),
        "contiguous_copies_only_when_needed": Check(
            check_contiguous_copies_only_when_needed, claim="contiguous_copies"
        ),
        # Permuting two dims of size > 1 leaves a contiguous tensor non-contiguous (strides changed);
        # the notes' "view makes it non-contiguous too" is an erratum of this check.
        "view_keeps_contiguity": Check(check_view_keeps_contiguity, claim="transpose_strides"),
        "notes_snippet": Check(check_notes_snippet, claim="snippet"),
        "timed_copies_are_row_major": Check(check_timed_copies_are_row_major, claim="contiguous_copies"),
        # The suite's own precondition (each timed input stored as its variant names): context.
        "timed_inputs_have_their_layouts": Check(check_timed_inputs_have_their_layouts),
    },
    parts={**OPS, "conv3x3": CONV},
    input_families={
        # A source that is neither row- nor column-major, and a single row (a (1, m) column-major
        # view is row-major too: contiguous() need not copy, and must still be right).
        "strided": InputFamily(lambda x: (strided(x),)),
        "one_row": InputFamily(resize=lambda s: {**s, "n": 1}),
    },
    verdict=FromFindings(),
    bytes_moved=lambda s, b: 2 * s["n"] * s["m"] * b,  # read once, write once
)
