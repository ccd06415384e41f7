"""Saving and loading state (notes 003 "load and save", 004 "Assignment & Deep copy", DDP section).

``state_dict()`` returns the live parameter tensors (detached, same storage), so keeping the "best"
state without ``copy.deepcopy`` keeps a view of the *current* weights. Files go to a temp dir.
"""

from __future__ import annotations

import copy
import os
import tempfile

import torch
from torch import nn

from cases.spec import Case, Check, Finding, Verdict


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
        fresh.load_state_dict(torch.load(path))
    for (k, a), (_, b) in zip(model.state_dict().items(), fresh.state_dict().items()):
        assert torch.equal(a, b), f"{k} differs after reload"
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(1)).to(device)
    assert torch.equal(model(x), fresh(x))
    return Finding(
        Verdict.HOLDS,
        "torch.save(state_dict) → torch.load → load_state_dict: every tensor and "
        "the outputs bit-identical (default torch.load arguments)",
    )


def check_state_dict_aliasing(device):
    model = MyModule().to(device)
    best_ref = model.state_dict()  # the bug: references
    best_copy = copy.deepcopy(model.state_dict())  # the fix
    original = {k: v.clone() for k, v in best_ref.items()}
    assert best_ref["linear.weight"].data_ptr() == model.linear.weight.data_ptr()
    _train_step(model, 2)
    change = (best_ref["linear.weight"] - original["linear.weight"]).abs().max().item()
    ref_moved = not torch.equal(best_ref["linear.weight"], original["linear.weight"])
    ref_tracks = torch.equal(best_ref["linear.weight"], model.linear.weight.detach())
    assert torch.equal(best_copy["linear.weight"], original["linear.weight"]), "deepcopy should be frozen"
    model.load_state_dict(best_ref)  # "restoring the best" restores nothing
    restored_nothing = not torch.equal(model.linear.weight.detach(), original["linear.weight"])
    model.load_state_dict(best_copy)
    assert torch.equal(model.linear.weight.detach(), original["linear.weight"])
    assert ref_moved and ref_tracks and restored_nothing
    return Finding(
        Verdict.HOLDS,
        f"best = model.state_dict() shares storage with the weights: after one step it changed by up to "
        f"{change:.3g} and 'restoring' it restores the current weights; copy.deepcopy keeps the best exactly "
        f"(the notes' deep-copy advice holds)",
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
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "ckpt.pt")
        torch.save(
            {
                "epoch": 3,
                "best_fitness": 0.5,
                "training_results": "ok",
                "model": model.state_dict(),
                "optimizer": torch.optim.SGD(model.parameters(), lr=0.1).state_dict(),
            },
            ckpt,
        )
        loaded = torch.load(ckpt)  # the notes' yolov5-style checkpoint loads under the default
        notes_loads = loaded["epoch"] == 3 and set(loaded["model"]) == {"linear.weight", "linear.bias"}
        whole = os.path.join(tmp, "whole.pt")
        torch.save({"obj": _Custom(1)}, whole)
        try:
            torch.load(whole)
            default_refuses = False
        except Exception as e:  # pickle.UnpicklingError; its type moved between versions
            default_refuses = "weights_only" in str(e)
        assert torch.load(whole, weights_only=False)["obj"].v == 1
    if default is not None:
        assert default_refuses == default, "refusal should follow the default weights_only"
    # The notes load state_dicts and checkpoint dicts only: whether a pickled object needs
    # weights_only=False is beyond them, reported.
    return Finding(
        Verdict.HOLDS if notes_loads else Verdict.FAILS,
        f"torch {torch.__version__}: torch.load defaults to weights_only={default_refuses}; the notes' "
        f"state_dict and checkpoint-dict loads {'work' if notes_loads else 'FAIL'} under it; beyond the "
        "notes, a pickled Python object "
        + ("needs weights_only=False (changed in 2.6)" if default_refuses else "loads by default"),
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
            result = plain.load_state_dict(wrapped, strict=False)
            plain.load_state_dict(inner)  # strict: the notes' model.module.state_dict() loads directly
            if dist.get_rank() == 0:
                torch.save(inner, os.path.join(tmp, "ckp.pt"))
            saved = [f for f in os.listdir(tmp) if f.endswith(".pt")]
        finally:
            dist.destroy_process_group()
    assert list(wrapped) == ["module.linear.weight", "module.linear.bias"] and list(inner) == [
        "linear.weight",
        "linear.bias",
    ]
    assert sorted(result.missing_keys) == ["linear.bias", "linear.weight"], result
    assert saved == ["ckp.pt"]
    return Finding(
        Verdict.HOLDS,
        "DDP's state_dict keys carry 'module.' (a plain model misses both keys loading it); "
        "model.module.state_dict() loads strictly into an unwrapped model; rank 0 writes the one file",
    )


CASE = Case(
    id="state.save_load",
    tier=3,
    claim="torch.save(model.state_dict()) / load_state_dict(torch.load()) round-trips a model; keep copies "
    "with copy.deepcopy; with DDP save model.module.state_dict() on rank 0 only.",
    source="003 load and save, 004 Assignment & Deep copy / DDP",
    checks={
        "round_trip": Check(check_round_trip),
        "state_dict_aliasing": Check(check_state_dict_aliasing),
        "torch_load_defaults": Check(check_torch_load_defaults, devices=("cpu",)),
        "ddp_module_state_dict": Check(
            check_ddp_module_state_dict, requires=("distributed",), devices=("cpu",)
        ),
    },
)
