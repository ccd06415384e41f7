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


def check_notes_is_contiguous(device):
    """The notes' isContiguous (its indentation repaired: the notes' snippet check lists that slip)
    against Tensor.is_contiguous() on drawn strided views, empty ones included."""
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
    empty_cex = smallest(
        views, lambda v: v.tensor.numel() == 0 and is_contiguous_notes(v.tensor) != v.tensor.is_contiguous()
    )
    return judge_notes_is_contiguous(
        seen,
        f"{run}",
        f"{nonempty_cex!r}" if nonempty_cex is not None else "",
        f"{empty_cex!r}" if empty_cex is not None else "",
    )


def judge_notes_is_contiguous(seen: dict, run: str, nonempty_cex: str, empty_cex: str) -> Finding:
    """The notes' definition and their isContiguous, against is_contiguous(): holds where the
    loop agrees on every view drawn; fails where it disagrees on a non-empty one; depends (on the
    tensor being non-empty) where only empty views disagree — torch calls every empty tensor
    contiguous, the notes' loop checks their strides."""
    nonempty_bad = seen["disagree"] > 0 or bool(nonempty_cex)
    empty_bad = seen["empty_disagree"] > 0 or bool(empty_cex)
    evidence = (
        f"{run}: the notes' isContiguous agrees with is_contiguous() on {seen['n'] - seen['disagree']} of "
        f"{seen['n']} non-empty views"
        + (f" (smallest disagreement: {nonempty_cex})" if nonempty_cex else "")
        + f" and on {seen['empty'] - seen['empty_disagree']} of {seen['empty']} empty ones"
        + (f" (smallest: {empty_cex}; torch calls every empty tensor contiguous)" if empty_bad else "")
    )
    if seen["n"] == 0:
        return Finding(Verdict.FAILS, evidence + ": no non-empty view was drawn, nothing was compared")
    if nonempty_bad:
        return Finding(Verdict.FAILS, evidence)
    if empty_bad:
        return Finding(Verdict.DEPENDS, evidence + ": it holds for non-empty tensors only")
    return Finding(Verdict.HOLDS, evidence)


def check_notes_formula(device):
    """The notes' "递归数学定义" (stride[k-1] = 1 and stride[i] = stride[i+1]·size[i+1], no
    exception for size-1 dims) against is_contiguous() on drawn non-empty strided views."""
    views = strided_views(str(device))
    seen = {"n": 0, "disagree": 0}

    def prop(v):
        if v.tensor.numel() == 0:
            return
        seen["n"] += 1
        seen["disagree"] += is_contiguous_formula(v.tensor) != v.tensor.is_contiguous()

    run = run_property(views, prop)
    cex = smallest(
        views, lambda v: v.tensor.numel() > 0 and is_contiguous_formula(v.tensor) != v.tensor.is_contiguous()
    )
    told = ""
    if cex is not None:
        formula, torch_says = is_contiguous_formula(cex.tensor), cex.tensor.is_contiguous()
        told = f"{cex!r}: formula {formula}, is_contiguous() {torch_says}"
    return judge_notes_formula(seen, f"{run}", told)


def judge_notes_formula(seen: dict, run: str, counterexample: str) -> Finding:
    """The notes' formula as the definition of contiguity: holds where it agrees with
    is_contiguous() on every non-empty view drawn, fails where it disagrees (torch skips the
    strides of size-1 dims; the formula does not, as the notes' own loop below it does)."""
    evidence = (
        f"{run}: the formula agrees with is_contiguous() on {seen['n'] - seen['disagree']} of {seen['n']} "
    )
    evidence += "non-empty views"
    if seen["n"] == 0:
        return Finding(Verdict.FAILS, evidence + ": none drawn, nothing was compared")
    if seen["disagree"] or counterexample:
        return Finding(
            Verdict.FAILS,
            evidence + f"; smallest disagreement {counterexample}: a size-1 dim's stride is free in torch "
            "(the notes' loop skips it: `if size[d]!=1`), the formula requires it",
        )
    return Finding(Verdict.HOLDS, evidence)


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
    """The notes: "`torch.view()`等方法需要连续的Tensor (… view就必须共享内存)". Fails where a
    view of a non-contiguous tensor succeeded (view needs strides compatible with the new shape,
    not contiguity), or where a view that succeeded did not share storage in row-major order
    (the brute-force stride search disagreed); holds otherwise. Both outcomes (a view, a raise,
    the transposed matrix's flatten raising) must have been seen, or the draw showed nothing."""
    said = (
        f"{run}: view succeeded on {counts['ok']} and raised on {counts['raised']}; "
        f"{counts['mismatch']} disagreed with the brute-force stride search; view(12) on "
        "arange(12).reshape(3,4).t() "
        + (f"raises ({transposed_raised})" if transposed_raised else "does NOT raise")
    )
    if not (counts["ok"] > 0 and counts["raised"] > 0 and transposed_raised) or counts["mismatch"]:
        return Finding(Verdict.FAILS, said + ": view is NOT the stride rule the check models")
    if view_of_noncontiguous:
        return Finding(
            Verdict.FAILS,
            f"{said}; {view_of_noncontiguous}: view needs strides compatible with the new shape, not a "
            "contiguous tensor (it shares storage, as the notes say; where no such strides exist it "
            "raises, and reshape or contiguous().view() copies)",
        )
    return Finding(Verdict.HOLDS, said + "; no view of a non-contiguous tensor succeeded")


def check_reshape_rule(device):
    """`reshape`: its values against contiguous().view(), its view/copy choice against the
    brute-force stride search, and whether every contiguous source was reused (no copy)."""
    counts = {"view": 0, "copy": 0, "view_of_noncontiguous": 0, "mismatch": 0, "contiguous_copied": 0}

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
        shared = _same_storage(out, t)
        counts["mismatch"] += shared != viewable
        counts["view" if viewable else "copy"] += 1
        counts["view_of_noncontiguous"] += viewable and not t.is_contiguous()
        counts["contiguous_copied"] += t.is_contiguous() and not shared

    run = run_property(views_and_shapes(str(device)), prop)
    return judge_reshape_rule(counts, f"{run}")


def judge_reshape_rule(counts: dict, run: str) -> Finding:
    """The notes: reshape is "类似于" contiguous().view(), and "可以开辟一个新的空间，也可以利用原有
    的空间如果原来的数组本来就是连续的". Holds where its values equal contiguous().view()'s, every
    contiguous source was reshaped without a copy, and both a view and a copy were seen; fails
    otherwise. Where reshape viewed a non-contiguous tensor (contiguous().view() copies it) the
    evidence says so: the notes say "similar to" and "if", not "the same" and "only if"."""
    evidence = (
        f"{run}: reshape returned a view {counts['view']} times and a copy {counts['copy']} times; "
        f"{counts['mismatch']} times its values or its view/copy choice disagreed with contiguous().view() "
        f"and the brute-force stride search; {counts.get('contiguous_copied', 0)} contiguous sources copied; "
        f"{counts['view_of_noncontiguous']} non-contiguous sources reshaped without a copy (where "
        "contiguous().view() copies: reshape copies only when no view exists)"
    )
    holds = (
        counts.get("mismatch", 0) == 0
        and counts.get("contiguous_copied", 0) == 0
        and counts["view"] > 0
        and counts["copy"] > 0
    )
    return Finding(Verdict.HOLDS if holds else Verdict.FAILS, evidence)


def check_contiguous_copies_only_when_needed(device):
    """contiguous() on drawn strided views: a new row-major storage with the same values for the
    non-contiguous ones; for the contiguous ones, whether it allocated (the notes: "额外开辟") or
    returned the tensor itself."""
    counts = {"contiguous": 0, "returned_self": 0, "noncontiguous": 0, "copy_wrong": 0}

    def prop(v):
        t = v.tensor
        c = t.contiguous()
        if t.is_contiguous():
            counts["contiguous"] += 1
            counts["returned_self"] += c is t
        else:
            counts["noncontiguous"] += 1
            counts["copy_wrong"] += not (c.is_contiguous() and torch.equal(c, t) and not _same_storage(c, t))

    run = run_property(strided_views(str(device)), prop)
    return judge_contiguous_copies(counts, f"{run}")


def judge_contiguous_copies(counts: dict, run: str) -> Finding:
    """The notes: contiguous() "额外开辟一个底层一维数组" (allocates a new row-major array). Fails
    where a non-contiguous tensor's result is not a new row-major storage with its values; where
    contiguous tensors come back as themselves (no allocation) it depends on the tensor not being
    contiguous already; holds where every call allocated. Both kinds of tensor must be drawn."""
    evidence = (
        f"{run}: contiguous() on {counts['noncontiguous']} non-contiguous views: "
        f"{counts['copy_wrong']} not a new row-major storage with equal values; on {counts['contiguous']} "
        f"contiguous ones: {counts['returned_self']} returned the tensor itself (no new memory)"
    )
    if not (counts["contiguous"] and counts["noncontiguous"]) or counts["copy_wrong"]:
        return Finding(Verdict.FAILS, evidence)
    if counts["returned_self"]:
        return Finding(
            Verdict.DEPENDS,
            evidence + ": it allocates only for a tensor that is not contiguous already",
        )
    return Finding(Verdict.HOLDS, evidence)


def check_permute_changes_strides_only(device):
    """The notes: transpose/permute keep the storage and its order and change only the stride
    metadata. On drawn views and random permutations: same storage and data_ptr, the strides and
    sizes permuted, the source untouched."""
    counts = {"n": 0, "wrong": 0}
    first = []

    @st.composite
    def views_and_perms(draw):
        v = draw(strided_views(str(device)))
        return v, tuple(draw(st.permutations(range(v.tensor.dim()))))

    def prop(example):
        v, perm = example
        t = v.tensor
        before = (t.stride(), tuple(t.shape))
        out = t.permute(perm)
        counts["n"] += 1
        right = (
            out.data_ptr() == t.data_ptr()
            and _same_storage(out, t)
            and out.stride() == tuple(before[0][p] for p in perm)
            and tuple(out.shape) == tuple(before[1][p] for p in perm)
            and (t.stride(), tuple(t.shape)) == before
        )
        if not right:
            counts["wrong"] += 1
            first.append(f"{v}.permute{perm}: strides {out.stride()}")

    run = run_property(views_and_perms(), prop)
    return judge_permute_strides(counts, f"{run}" + (f"; first: {first[0]}" if first else ""))


def judge_permute_strides(counts: dict, run: str) -> Finding:
    """Holds where every permute shared its source's storage at the same address, with the strides
    and sizes permuted and the source unchanged; fails otherwise, or where nothing was drawn."""
    holds = counts["n"] > 0 and counts["wrong"] == 0
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"{run}: {counts['n'] - counts['wrong']} of {counts['n']} permutes kept the storage and its "
        "address and only permuted strides and sizes, the source unchanged",
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
            counts["source_changed"] += not t.is_contiguous()

    run = run_property(views_and_shapes(str(device)), prop)
    return judge_view_keeps_contiguity(counts, run)


def judge_view_keeps_contiguity(counts: dict, run: str) -> Finding:
    """The notes: view and permute "两者都会使得原来的tensor变为不是contiguous的". Read on the
    results (neither op changes its source; that too is observed): holds where permutes of two
    dims of size > 1 and views of contiguous tensors both come out non-contiguous; fails where
    every view of a contiguous tensor is contiguous (and its source stays so)."""
    evidence = (
        f"{run}: {counts['noncontiguous_permutes']} of {counts['permutes']} permutes swapping two dims of "
        f"size > 1 were non-contiguous; {counts['noncontiguous_views']} of {counts['views']} views of "
        f"contiguous tensors were, and {counts.get('source_changed', 0)} sources changed"
    )
    if not counts["views"] or not counts["permutes"]:
        return Finding(Verdict.FAILS, evidence + ": nothing drawn")
    if counts["noncontiguous_views"] == 0 and counts.get("source_changed", 0) == 0:
        return Finding(
            Verdict.FAILS,
            evidence + ": a view of a contiguous tensor is contiguous, and neither op changes the tensor it "
            "is called on; only permute (transpose) gives a non-contiguous result",
        )
    permute_breaks = counts["noncontiguous_permutes"] == counts["permutes"]
    return Finding(Verdict.HOLDS if permute_breaks else Verdict.FAILS, evidence)


def check_notes_snippet(device):
    """notes 004: `a = torch.range(12).reshape(3,4)` … (True, False, True), shared data_ptr, and
    the comments on strides and shapes. `torch.range(12)` raises in torch 2.x (range needs an end;
    deprecated, end-inclusive): the slip repaired as torch.arange(12), the erratum listed by the
    notes' snippet check."""
    a = torch.arange(12, device=device).reshape(3, 4)
    b = a.transpose(0, 1)
    c = b.contiguous()
    printed = (a.is_contiguous(), b.is_contiguous(), c.is_contiguous())
    shared = (a.data_ptr() == b.data_ptr(), b.data_ptr() == c.data_ptr())
    # "#True,代表确实共享了内存,只是stride和shape不相同" / "#False,… stride不相同,shape相同"
    comments = (
        a.stride() != b.stride() and a.shape != b.shape,
        b.stride() != c.stride() and b.shape == c.shape,
    )
    return judge_notes_snippet(printed, shared, comments)


def judge_notes_snippet(printed: tuple, shared: tuple, comments: tuple) -> Finding:
    """Holds where the snippet prints what the notes print — (True, False, True), a/b share
    data_ptr, b/c do not — and their comments on strides and shapes hold; fails otherwise."""
    holds = printed == (True, False, True) and shared == (True, False) and all(comments)
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"with torch.arange(12): is_contiguous {printed} (notes: True,False,True); a/b data_ptr equal "
        f"{shared[0]}, b/c {shared[1]} (notes: True, False); a/b differ in stride and shape: {comments[0]}; "
        f"b/c differ in stride, same shape: {comments[1]}",
    )


def check_notes_strides(device):
    """The notes' prose on the same transpose: an (a, b) array steps 1 along a row and "a" down a
    column, and its transpose has strides (a, 1). Observed on (a, b) = (3, 4) and (2, 5)."""
    seen = []
    for rows, cols in ((3, 4), (2, 5)):
        m = torch.arange(rows * cols, device=device).reshape(rows, cols)
        seen.append(((rows, cols), m.stride(), m.t().stride()))
    return judge_notes_strides(seen)


def judge_notes_strides(seen: list) -> Finding:
    """ "原来数组(a,b)访问行相邻只需要1,列相邻只需要a;现在的stride为(a,1)": holds where every
    (a, b) array steps 1 along a row and a down a column (strides (a, 1)) and its transpose has
    strides (a, 1); fails where they differ (a row-major (a, b) array has strides (b, 1), its
    transpose (1, b))."""
    wrong = [
        f"({r}, {c}): strides {before}, transposed {after}"
        for (r, c), before, after in seen
        if before != (r, 1) or after != (r, 1)
    ]
    told = "; ".join(f"({r}, {c}): strides {b}, transposed {a}" for (r, c), b, a in seen)
    if wrong:
        return Finding(
            Verdict.FAILS,
            f"{told}: the next element down a column is b elements on, not a, and the transpose's strides "
            "are (1, b), not (a, 1)",
        )
    return Finding(Verdict.HOLDS, told)


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
        context_pairs=(("rowmajor", "colmajor"),),
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
    context_pairs=(("channels_last", "contiguous"),),
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
    # Timed side by side, deciding no claim (the verdict comes from the findings): the
    # library's or the catalogue's better way against the notes'.
    context_pairs=(("clone", "transposed_contiguous"),),
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
            "`torch.tensor.is_contiguous()` : "
            "**Tensor底层一维数组元素的存储顺序与Tensor按行优先一维展开的元素顺序是否一致** … "
            "def isContiguous(tensor):",
            "004",
            ClaimKind.CORRECTNESS,
            reading="the notes' isContiguous (indentation repaired) returns what is_contiguous() returns, on "
            "every strided view",
        ),
        Claim(
            "formula",
            "tensor是否连续的递归数学定义 … stride[i]=stride[i+1]*size[i+1] … "
            "i=k-1为最后一个维度内存和语义上均连续因此stride应该为1",
            "004",
            ClaimKind.CORRECTNESS,
            reading="stride[k-1] = 1 and stride[i] = stride[i+1]·size[i+1] for every i decides contiguity "
            "as is_contiguous() does, on every non-empty strided view",
        ),
        Claim(
            "transpose_strides",
            "如果一个矩阵通过transpose,permute,并没有改变最初数组的底层按行存储的顺序,并不会额外开辟一个内存空间,"
            "只是改变了stride的元信息",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="permute keeps the storage and its address and only permutes strides and sizes",
        ),
        Claim(
            "stride_formula",
            "原来数组(a,b)访问行相邻只需要1,列相邻只需要a;现在的stride为(a,1)",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="a row-major (a, b) array has strides (a, 1), and its transpose (a, 1)",
        ),
        Claim(
            "contiguous_copies",
            "`torch.tensor.contiguous():`额外开辟一个底层一维数组与tensor逻辑行优先展开数组存储方式相同的数据",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="contiguous() returns a new storage holding the tensor's values in row-major order",
        ),
        Claim(
            "snippet",
            "a.is_contiguous(),b.is_contiguous(),c.is_contiguous() … #True,False,True … "
            "#True,代表确实共享了内存,只是stride和shape不相同 … "
            "#False,代表c额外开辟了内存,stride不相同,shape相同",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="the snippet, torch.range(12) repaired as torch.arange(12) (its erratum), prints what "
            "the notes print",
        ),
        Claim(
            "view_needs_contiguous",
            "`torch.view()`等方法需要连续的Tensor （由于历史的原因，大家默认规定view就必须共享内存）",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="view fails on a non-contiguous tensor; where it succeeds it shares the storage",
        ),
        Claim(
            "view_permute_noncontiguous",
            "torch.view()可以任意将tensor变为compatible的形状，然而permute只是交换axis而已；"
            "但是两者都会使得原来的tensor变为不是contiguous的",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="a view of a contiguous tensor, like a permute of two dims of size > 1, is "
            "non-contiguous",
        ),
        Claim(
            "reshape",
            "pytorch提供了`reshape`方法类似于`tensor.contiguous().view(*args)`，如果不关心底层数据是否使用了新的内存，"
            "使用reshape更加方便;reshape()可以开辟一个新的空间，也可以利用原有的空间如果原来的数组本来就是连续的",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="reshape gives contiguous().view()'s values, copying or not; a contiguous source is "
            "reused (no copy)",
        ),
    ),
    checks={
        "notes_is_contiguous": Check(check_notes_is_contiguous, claim="is_contiguous"),
        "notes_formula": Check(check_notes_formula, claim="formula"),
        "permute_changes_strides_only": Check(check_permute_changes_strides_only, claim="transpose_strides"),
        "notes_strides": Check(check_notes_strides, claim="stride_formula"),
        "view_rule": Check(check_view_rule, claim="view_needs_contiguous"),
        "reshape_rule": Check(check_reshape_rule, claim="reshape"),
        "contiguous_copies_only_when_needed": Check(
            check_contiguous_copies_only_when_needed, claim="contiguous_copies"
        ),
        "view_keeps_contiguity": Check(check_view_keeps_contiguity, claim="view_permute_noncontiguous"),
        "notes_snippet": Check(check_notes_snippet, claim="snippet"),
        # The suite's own preconditions (each timed variant makes a new row-major tensor; each timed
        # input stored as its variant names): context.
        "timed_copies_are_row_major": Check(check_timed_copies_are_row_major),
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
