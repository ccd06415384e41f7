"""Saving and loading state (notes 003 "load and save", 004 "Assignment & Deep copy", DDP section).

``state_dict()`` returns the live parameter tensors (detached, same storage), so keeping the "best"
state without ``copy.deepcopy`` keeps a view of the *current* weights. Files go to a temp dir.
"""

from __future__ import annotations

import copy
import io
import os
import tempfile

import numpy as np
import torch
from torch import nn

from cases.spec import Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict


class MyModule(nn.Module):  # the notes' module
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x):
        return self.linear(x)


def _train_step(model, seed):
    g = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    x, y = torch.randn(8, 3, generator=g).to(device), torch.randn(8, 3, generator=g).to(device)
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()


def check_round_trip(device):
    model = MyModule().to(device)
    _train_step(model, 0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "xxx.pth")
        torch.save(model.state_dict(), path)  # the notes' two lines
        fresh = MyModule().to(device)
        try:
            fresh.load_state_dict(torch.load(path))
            error = None
        except Exception as e:  # whatever the default load refuses, reported
            error = f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
    differ = [
        k
        for (k, a), (_, b) in zip(model.state_dict().items(), fresh.state_dict().items())
        if not torch.equal(a, b)
    ]
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(1)).to(device)
    return judge_round_trip(error, differ, torch.equal(model(x), fresh(x)))


def judge_round_trip(error: str | None, differ: list[str], outputs_equal: bool) -> Finding:
    """003's two lines, torch.save(model.state_dict()) and load_state_dict(torch.load()), with the
    default torch.load arguments: every tensor and the outputs must come back bit-identical."""
    ok = error is None and not differ and outputs_equal
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        "torch.save(state_dict) → torch.load (default arguments) → load_state_dict: "
        + (
            f"raises {error}"
            if error
            else (f"tensors {differ} differ" if differ else "every tensor bit-identical")
            + (", outputs bit-identical" if outputs_equal else ", outputs DIFFER")
        ),
    )


def check_state_dict_aliasing(device):
    model = MyModule().to(device)
    best_ref = model.state_dict()  # the bug: references
    best_copy = copy.deepcopy(model.state_dict())  # the fix
    original = {k: v.clone() for k, v in best_ref.items()}
    shares = best_ref["linear.weight"].data_ptr() == model.linear.weight.data_ptr()
    _train_step(model, 2)
    change = (best_ref["linear.weight"] - original["linear.weight"]).abs().max().item()
    ref_tracks = torch.equal(best_ref["linear.weight"], model.linear.weight.detach())
    copy_kept = torch.equal(best_copy["linear.weight"], original["linear.weight"])
    model.load_state_dict(best_ref)  # "restoring the best" restores nothing
    restored_nothing = not torch.equal(model.linear.weight.detach(), original["linear.weight"])
    model.load_state_dict(best_copy)
    copy_restores = torch.equal(model.linear.weight.detach(), original["linear.weight"])
    return judge_aliasing(
        shares and ref_tracks and change > 0, restored_nothing, copy_kept and copy_restores, change
    )


def judge_aliasing(
    reference_tracks: bool, restores_nothing: bool, deepcopy_keeps: bool, change: float
) -> Finding:
    """004's rule applied to the "keep the best model" idiom: `best = model.state_dict()` binds
    the live tensors (no copy), so it follows training and restoring it restores nothing;
    copy.deepcopy keeps the best exactly. Both halves must show."""
    ok = reference_tracks and restores_nothing and deepcopy_keeps
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        "best = model.state_dict() "
        + (
            f"shares storage with the weights: after one step it changed by up to {change:.3g}"
            if reference_tracks
            else "does NOT follow the weights"
        )
        + (" and 'restoring' it restores the current weights" if restores_nothing else "; restoring it works")
        + "; copy.deepcopy "
        + ("keeps and restores the best exactly" if deepcopy_keeps else "does NOT keep the best"),
    )


def check_immutable_copy(device):
    # 004's premise, tried on its own examples of immutable objects (a string, a number, a tuple):
    # is the assigned / copied / deep-copied object a new one (`is not` the original)?
    objects = {"a string": "notes", "an int": 10**6, "a tuple": (1, 2, (3, 4))}
    same = []
    for kind, a in objects.items():
        b = a  # the notes' assignment
        for how, got in (("b = a", b), ("copy.copy", copy.copy(a)), ("copy.deepcopy", copy.deepcopy(a))):
            if got is a:
                same.append(f"{how} of {kind}")
    # The sentence's other half, for a mutable compound object: a deep copy is independent.
    nested = [1, [2, 3]]
    deep = copy.deepcopy(nested)
    deep[1].append(4)
    return judge_immutable_copy(same, 3 * len(objects), nested == [1, [2, 3]])


def judge_immutable_copy(same_object: list[str], tried: int, mutable_deepcopy_independent: bool) -> Finding:
    """004: "for immutable objects, assignment and copy all point to a new memory address".
    Fails where any assignment or copy of an immutable object gives the very same object (`is`);
    holds only where every one is new. The mutable half (a deep copy is independent) is reported."""
    return Finding(
        Verdict.FAILS if same_object else Verdict.HOLDS,
        (
            f"{len(same_object)} of {tried} assignments/copies of immutable objects are the very same object "
            f"(`is` True, same id): {', '.join(same_object)}; assignment binds a name to the object and "
            "copy.copy/copy.deepcopy return an immutable object itself, so nothing points to a new address"
            if same_object
            else f"all {tried} assignments/copies of immutable objects are new objects"
        )
        + "; a deep copy of a nested list "
        + ("is independent of it" if mutable_deepcopy_independent else "is NOT independent of it"),
    )


class _Custom:
    def __init__(self, v):
        self.v = v


def check_torch_load_defaults(device):
    from torch import serialization

    default = (
        serialization._default_to_weights_only(None)
        if hasattr(serialization, "_default_to_weights_only")
        else None
    )
    model = MyModule()

    def round_trip(obj, **kwargs):
        """None when obj loads back under these arguments, else the refusal's first line."""
        buf = io.BytesIO()
        torch.save(obj, buf)
        buf.seek(0)
        try:
            torch.load(buf, **kwargs)
            return None
        except Exception as e:  # pickle.UnpicklingError; its type moved between versions
            # The line that names what was refused, where the message has one.
            lines = [line.strip() for line in str(e).splitlines() if line.strip()]
            why = next((line for line in lines if "Unsupported global" in line), lines[0] if lines else "")
            return f"{type(e).__name__}: {why.split(' was not')[0][:100]}"

    # The notes' checkpoints: 003's state_dict, 001's YOLOv5 chkpt dict, 004's DDP module state_dict.
    notes = {
        "state_dict (003)": model.state_dict(),
        "chkpt dict (001)": {
            "epoch": 3,
            "best_fitness": 0.5,
            "training_results": "ok",
            "model": model.state_dict(),
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1).state_dict(),
        },
    }
    refused = {name: err for name, obj in notes.items() if (err := round_trip(obj)) is not None}
    explicit = all(round_trip(obj, weights_only=False) is None for obj in notes.values())
    # Beyond the notes: a pickled Python object, and a NumPy best_fitness (as YOLOv5 computes it).
    beyond = {
        "a pickled Python object": round_trip({"obj": _Custom(1)}),
        "a NumPy best_fitness": round_trip({"best_fitness": np.float64(0.5)}),
    }
    if default is None:  # a torch without the helper: the default as the refusal shows it
        default = beyond["a pickled Python object"] is not None
    return judge_load_defaults(torch.__version__, default, refused, explicit, beyond)


def judge_load_defaults(
    version: str,
    default: bool | None,
    refused: dict[str, str],
    explicit_loads: bool,
    beyond: dict[str, str | None],
) -> Finding:
    """The notes save state_dicts and checkpoint dicts of tensors, numbers and strings and load them
    with torch.load's default arguments. Holds when every one of them loads under this torch's
    default; fails where the default refuses one (the notes' load as written), the evidence saying
    whether weights_only=False loads it. The default's other refusals are context."""
    context = "; ".join(
        f"{what} {'is refused (' + err + ')' if err else 'loads'}" for what, err in beyond.items()
    )
    return Finding(
        Verdict.FAILS if refused else Verdict.HOLDS,
        f"torch {version}: torch.load defaults to weights_only={default}; the notes' "
        + (
            f"{', '.join(f'{name} is refused by it ({err})' for name, err in refused.items())}: "
            + (
                "with weights_only=False (a file you trust) they load"
                if explicit_loads
                else "they do NOT load with weights_only=False either"
            )
            if refused
            else "state_dict and checkpoint-dict loads work under it"
        )
        + f"; beyond the notes, under the default: {context}",
    )


def check_ddp_module_state_dict(device):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    if dist.is_initialized():
        raise AssertionError("a process group is already initialised; this check owns its own")
    with tempfile.TemporaryDirectory() as tmp:
        dist.init_process_group("gloo", init_method=f"file://{os.path.join(tmp, 'pg')}", rank=0, world_size=1)
        try:
            model = DDP(MyModule())
            wrapped, inner = model.state_dict(), model.module.state_dict()
            plain = MyModule()
            missing = plain.load_state_dict(wrapped, strict=False).missing_keys
            try:
                plain.load_state_dict(inner)  # strict: the notes' model.module.state_dict()
                strict_error = None
            except RuntimeError as e:
                strict_error = str(e).splitlines()[0]
            has_gpu_id = hasattr(model, "gpu_id")  # the notes' `if model.gpu_id == 0`
            if dist.get_rank() == 0:
                torch.save(inner, os.path.join(tmp, "ckp.pt"))
            saved = sorted(f for f in os.listdir(tmp) if f.endswith(".pt"))
        finally:
            dist.destroy_process_group()
    return judge_ddp_state_dict(
        list(wrapped), list(inner), sorted(missing), strict_error, saved, gpu_id_attr=has_gpu_id
    )


def judge_ddp_state_dict(
    wrapped: list[str],
    inner: list[str],
    missing: list[str],
    strict_error: str | None,
    saved: list[str],
    gpu_id_attr: bool = True,
) -> Finding:
    """004's DDP saving: DDP's own state_dict keys carry 'module.', so a plain model cannot load
    them; model.module.state_dict() has the plain keys and loads strictly; rank 0 writes one file.
    The notes' guard `if model.gpu_id == 0` reads an attribute a DDP model does not have: a snippet
    that stops as written (AttributeError), a typo for the rank (dist.get_rank())."""
    errata = ()
    if not gpu_id_attr:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                'if model.gpu_id == 0 :\n  torch.save(ckp,"./ckp.pt")',
                "DistributedDataParallel has no attribute `gpu_id` (AttributeError); the rank is "
                "dist.get_rank()",
            ),
        )
    prefixed = bool(wrapped) and all(k.startswith("module.") for k in wrapped)
    plain = bool(inner) and [f"module.{k}" for k in inner] == wrapped
    ok = prefixed and plain and missing == sorted(inner) and strict_error is None and saved == ["ckp.pt"]
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"DDP's state_dict keys {wrapped} (a plain model misses {missing} loading them); "
        f"model.module.state_dict() keys {inner} "
        + (
            f"fail to load strictly: {strict_error}"
            if strict_error
            else "load strictly into an unwrapped model"
        )
        + f"; rank 0 wrote {saved}",
        errata,
    )


CASE = Case(
    id="state.save_load",
    tier=3,
    claim="torch.save(model.state_dict()) / load_state_dict(torch.load()) round-trips a model; keep copies "
    "with copy.deepcopy; with DDP save model.module.state_dict() on rank 0 only.",
    source="003 load and save, 004 Assignment & Deep copy / DDP",
    claims=(
        Claim(
            "round_trip",
            'torch.save(my_model.state_dict(), "xxx.pth")  # save\n'
            'my_model.load_state_dict(torch.load("xxx.pth"))  # load',
            "003",
            ClaimKind.CORRECTNESS,
            reading="saving a model's state_dict and loading it back with torch.load's default "
            "arguments restores every tensor bit for bit",
        ),
        Claim(
            "deepcopy",
            "直接赋值: 对象的引用,也就是给对象起别名"
            " … **要产生拷贝关系需要`copy` module**------一种真正的拷贝关系"
            " … deep copy : copy.deepcopy (obj)",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="applied to keeping the best model: best = model.state_dict() is a reference that "
            "follows training; copy.deepcopy(model.state_dict()) is a real copy that restores it",
        ),
        Claim(
            "immutable_copy",
            "前提：对于不可变对象而言，assignment和copy全部都是指向一个新的内存地址",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="assigning, copy.copy-ing or copy.deepcopy-ing an immutable object (a string, a "
            "number, a tuple) gives a new object at a new address",
        ),
        Claim(
            "ddp_module_state_dict",
            "ckp = self.model.module.state_dict()\n# save the "
            "model, only save 1 copy\nif model.gpu_id == 0 :\n"
            '  torch.save(ckp,"./ckp.pt")',
            "004",
            ClaimKind.BEHAVIOUR,
            reading="under DDP, model.module.state_dict() has the plain keys an unwrapped model loads, "
            "and saving it on one rank writes one file",
        ),
    ),
    checks={
        "round_trip": Check(check_round_trip, claim="round_trip"),
        "state_dict_aliasing": Check(check_state_dict_aliasing, claim="deepcopy"),
        "immutable_copy": Check(check_immutable_copy, devices=("cpu",), claim="immutable_copy"),
        # The notes' loads (003's state_dict, 001's checkpoint dict) under this torch's default.
        "torch_load_defaults": Check(check_torch_load_defaults, devices=("cpu",), claim="round_trip"),
        "ddp_module_state_dict": Check(
            check_ddp_module_state_dict,
            requires=("distributed",),
            devices=("cpu",),
            claim="ddp_module_state_dict",
        ),
    },
)
