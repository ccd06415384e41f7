"""One-hot encoding three ways (notes 001 "one-hot", 004 item 14 "scatter_", 004 "torch.one_hot").

`torch.eye(C)[label]` writes a C×C identity and then gathers B rows of it; `zeros(B, C).scatter_`
writes B·C zeros and B ones; `F.one_hot` does the same in int64 (twice the bytes of fp32).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import strategies as st

from cases._lib.inputs import generator
from cases._lib.properties import run_property
from cases.spec import (
    Case,
    Check,
    Claim,
    ClaimKind,
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
from notes import parse

FP32 = torch.float32


def make_labels(size, dtype, device, seed):
    g = generator(device, seed)
    return torch.randint(0, size["c"], (size["b"],), generator=g, device=device), size["c"]


def eye_index(label, c):
    # C² writes for the identity, then B·C reads and writes for the gather.
    return torch.eye(c, device=label.device)[label]


def scatter(label, c):
    # B·C writes of zeros, then B scattered ones.
    return torch.zeros((label.numel(), c), device=label.device).scatter_(1, label[:, None], 1.0)


def one_hot(label, c):
    # As scatter, but int64: 8·B·C bytes written.
    return F.one_hot(label, c)


def onehot_numpy(label, c):
    out = np.zeros((label.numel(), c))
    out[np.arange(label.numel()), label.cpu().numpy()] = 1.0
    return torch.from_numpy(out)


def check_notes_names(device):
    """004 documents `torch.one_hot(tensor, num_classes=-1)` and says `torch.functional.one_hot`."""
    import torch.functional

    label = torch.tensor([0, 1, 0, 2, 3, 2], device=device)
    inferred = F.one_hot(label)  # num_classes=-1: max + 1
    batched = F.one_hot(label.view(2, 3), 5)  # input (*) → output (*, num_classes)
    missing = [
        n
        for n, mod in (("torch.one_hot", torch), ("torch.functional.one_hot", torch.functional))
        if not hasattr(mod, "one_hot")
    ]
    return judge_notes_names(
        tuple(inferred.shape), str(inferred.dtype), tuple(batched.shape), missing, torch.__version__
    )


def judge_notes_names(
    inferred_shape: tuple, dtype: str, batched_shape: tuple, missing: list[str], version: str
) -> Finding:
    """The technique: one-hot with num_classes=-1 inferring max+1 (labels 0..3 of 6 → (6, 4)),
    (*) → (*, C) ((2, 3) with C = 5 → (2, 3, 5)), as the notes describe (the output's dtype, int64,
    is reported: the notes state none). The names the
    notes give it are their own matter: each name this torch does not have is an erratum (a name
    that never existed is a typo for torch.nn.functional's)."""
    errata = tuple(
        Erratum(
            ErratumKind.TYPO,
            name,
            f"no {name} in torch {version}; the function is torch.nn.functional.one_hot",
        )
        for name in missing
    )
    inferred_ok = tuple(inferred_shape) == (6, 4)
    batched_ok = tuple(batched_shape) == (2, 3, 5)
    holds = inferred_ok and batched_ok
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"torch.nn.functional.one_hot: num_classes=-1 on labels up to 3 → shape {tuple(inferred_shape)} "
        f"(max+1: (6, 4)); input (2, 3) with C = 5 → {tuple(batched_shape)} ((*, C): (2, 3, 5)); "
        f"dtype {dtype}" + (": as the notes describe" if holds else ": NOT as described"),
        errata,
    )


@st.composite
def scatter_problems(draw):
    shape = tuple(draw(st.integers(1, 4)) for _ in range(3))
    dim = draw(st.integers(0, 2))
    index_shape = tuple(draw(st.integers(1, n)) for n in shape)
    # Distinct targets along `dim` (a random permutation's first entries): with duplicates, which
    # write wins is unspecified, so the formula would not define the result.
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    keys = torch.rand([shape[d] if d == dim else index_shape[d] for d in range(3)], generator=g)
    index = keys.argsort(dim).narrow(dim, 0, index_shape[dim])
    src = torch.randn(index_shape, generator=g) + 10.0  # never equal to the zeros it overwrites
    return shape, dim, index, src


def scatter_formula(self, dim, index, src):
    """The notes' formula, as a Python loop: self[index[i][j][k]][j][k] = src[i][j][k] for dim 0 …"""
    out = self.clone()
    for i in range(index.shape[0]):
        for j in range(index.shape[1]):
            for k in range(index.shape[2]):
                target = [i, j, k]
                target[dim] = int(index[i, j, k])
                out[tuple(target)] = src[i, j, k]
    return out


def check_scatter_formula(device):
    mismatches, dims = [], set()

    def prop(problem):
        shape, dim, index, src = problem
        base = torch.zeros(shape, device=device)
        got = base.clone().scatter_(dim, index.to(device), src.to(device))
        dims.add(dim)
        if not torch.equal(got, scatter_formula(base, dim, index.to(device), src.to(device))):
            mismatches.append((shape, dim, tuple(index.shape)))

    run = run_property(scatter_problems(), prop, max_examples=150)
    return judge_scatter_formula(run.examples, mismatches, sorted(dims), str(run))


def judge_scatter_formula(examples: int, mismatches: list, dims: list[int], run: str) -> Finding:
    """The notes' formula self[index[i][j][k]][j][k] = src[i][j][k] (dim 0, and likewise for dims
    1 and 2): holds when scatter_ equalled the loop on every drawn example, all three dims drawn."""
    holds = examples > 0 and not mismatches and set(dims) == {0, 1, 2}
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"{run}: scatter_(dim, index, src) "
        + (
            "matched the notes' index formula (a Python loop)"
            if not mismatches
            else f"DIFFERED from the notes' formula on {len(mismatches)} examples, e.g. {mismatches[0]}"
        )
        + f" for dims {dims} and random index/src shapes no larger than self's",
    )


# 004 item 14's snippet: `label = torch.tensor([0,1,0,2,3,2]).view(len(label),-1)` ... scatter_.
NOTES_SCATTER = "004#15"


def check_notes_snippet(device):
    """004 item 14's snippet, read from the note file and run with `label` defined before its first
    line (the NameError as written, and `label_size` defined nowhere, are the notes' snippets
    check's erratum) and label_size = 4: first as written, then with a float src."""
    snippet = parse.snippet_text(NOTES_SCATTER)
    slips = []
    scope = {"torch": torch, "label_size": 4, "label": torch.tensor([0, 1, 0, 2, 3, 2])}
    try:
        exec(snippet, scope)  # noqa: S102 - the notes' own text
    except RuntimeError as exc:
        slips.append(
            (
                ErratumKind.RAISES,
                "src = torch.ones_like(label)",
                f"RuntimeError as written ({str(exc).splitlines()[0]}): src takes label's int64 into "
                "float zeros; torch.ones_like(label, dtype=torch.float) (as the notes' embed_protein "
                "does with dtype=float) runs",
            )
        )
    repaired = dict(scope, label=torch.tensor([0, 1, 0, 2, 3, 2]))
    exec(snippet.replace("torch.ones_like(label)", "torch.ones_like(label, dtype=torch.float)"), repaired)  # noqa: S102
    got = repaired["x_oneHot"]
    expected = F.one_hot(torch.tensor([0, 1, 0, 2, 3, 2]), 4).float()
    if not hasattr(torch, "to_numpy"):
        slips.append(
            (
                ErratumKind.TYPO,
                "torch.to_numpy",
                "torch has no to_numpy; Tensor.numpy() is meant (embed_protein)",
            )
        )
    if not hasattr(torch.tensor, "scatter_"):
        slips.append(
            (
                ErratumKind.TYPO,
                "torch.tensor.scatter_(dim,index,src,reduce=None)",
                "torch.tensor is a function with no scatter_; the method is torch.Tensor.scatter_",
            )
        )
    return judge_notes_snippet(slips, bool(got.shape == expected.shape and torch.equal(got, expected)))


def judge_notes_snippet(slips: list[tuple], fixed_equals_one_hot: bool) -> Finding:
    """The claim: the snippet turns label into its one-hot encoding (F.one_hot's result), judged
    with its slips repaired. `slips`: (kind, quote, evidence) of each slip of the pen besides the
    ones the notes' snippets check records (a src of the wrong dtype that raises, a function name
    torch never had): each one erratum."""
    errata = tuple(Erratum(kind, quote, what) for kind, quote, what in slips)
    return Finding(
        Verdict.HOLDS if fixed_equals_one_hot else Verdict.FAILS,
        "with label defined first and a float src the snippet gives F.one_hot's result "
        + ("exactly" if fixed_equals_one_hot else "NOT (the scatter_ one-hot differs)")
        + (f"; as written: {'; '.join(w for _, _, w in slips)}" if slips else "; it runs as written"),
        errata,
    )


def _all_zero(label, c):
    # Every label 0: the output's first column all ones, and scatter_'s index all the same.
    return torch.zeros_like(label), c


def _all_last(label, c):
    # Every label the last class C - 1 (ties on the edge of the range eye(C) is indexed with).
    return torch.full_like(label, c - 1), c


INPUT_FAMILIES = {
    "all_labels_zero": InputFamily(_all_zero),
    "all_labels_last_class": InputFamily(_all_last),
    "empty_batch": InputFamily(resize=lambda s: {**s, "b": 0}),  # a (0, C) result
    "one_class": InputFamily(resize=lambda s: {**s, "c": 1}),  # every label 0, a (B, 1) result
}


def _bytes(s, b):
    return s["b"] * s["c"] * b


CASE = Case(
    id="onehot.encode",
    # Timed side by side, deciding no claim (the verdict comes from the findings): the
    # library's or the catalogue's better way against the notes'.
    context_pairs=(("scatter", "eye_index"),),
    tier=2,
    claim="One-hot encoding via torch.eye(C)[label], via zeros().scatter_(1, label, 1), or via "
    "torch.one_hot.",
    source="001 one-hot; 004 scatter_ and torch.one_hot",
    make_inputs=make_labels,
    variants={
        "eye_index": naive(
            eye_index, peak_bytes=lambda s, b: s["c"] ** 2 * 4 + _bytes(s, 4), claim="eye_index"
        ),
        "scatter": optimized(scatter, peak_bytes=lambda s, b: _bytes(s, 4), claim="scatter_one_hot"),
        "one_hot": library(one_hot, peak_bytes=lambda s, b: _bytes(s, 8)),
    },
    oracle=onehot_numpy,
    tolerance={FP32: Tol(rtol=0.0, atol=0.0)},  # exact 0/1
    sizes={
        "quick": [{"b": 4096, "c": c} for c in (10, 100, 1000)],
        "full": [{"b": 65536, "c": c} for c in (10, 100, 1000, 10000)],
    },
    x="c",
    claims=(
        Claim(
            "eye_index",
            "base = torch.eye(num_class) … one_hot = base[label]",
            "001",
            ClaimKind.CORRECTNESS,
            reading="for labels of shape (B,), torch.eye(num_class)[label] is their (B, num_class) one-hot",
        ),
        Claim(
            "scatter_one_hot",
            "Eg.将label转化为one-hot编码 … x_oneHot = temp.scatter_(dim=1,index=label,src=src)",
            "004",
            ClaimKind.CORRECTNESS,
            reading="the snippet's scatter_ of ones at the labels gives the labels' one-hot (F.one_hot's "
            "result), its slips of the pen repaired",
        ),
        Claim(
            "scatter_formula",
            "self[index[i][j][k]][j][k] = src[i][j][k] # if dim == 0 "
            "self[i][index[i][j][k]][k] = src[i][j][k] # if dim == 1 "
            "self[i][j][index[i][j][k]] = src[i][j][k] # if dim == 2",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="scatter_(dim, index, src) on 3-D tensors equals the notes' index formula written as a "
            "loop, for each dim, where index has no two targets in one place (torch documents the "
            "write order of duplicates as unspecified, so the formula does not define those)",
        ),
        Claim(
            "one_hot_api",
            "torch.one_hot(tensor, num_classes=- 1) … If set to -1, the number of classes will be "
            "inferred as one greater than the largest class value in the input tensor … input (*) … "
            "output(*,num_classes)",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="one_hot (torch.nn.functional's: the name is an erratum) infers max + 1 classes with "
            "num_classes=-1 and maps an input of shape (*) to (*, num_classes)",
        ),
    ),
    checks={
        "notes_names": Check(check_notes_names, claim="one_hot_api"),
        "scatter_formula": Check(check_scatter_formula, claim="scatter_formula"),
        "notes_snippet": Check(check_notes_snippet, claim="scatter_one_hot"),
    },
    input_families=INPUT_FAMILIES,
    verdict=FromFindings(),
    bytes_moved=lambda s, b: _bytes(s, 4) + s["b"] * 8,
    metrics=lambda name, inputs, device: {
        "output_bytes": inputs[0].numel() * inputs[1] * (8 if name == "one_hot" else 4)
    },
)
