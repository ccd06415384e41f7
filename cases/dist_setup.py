"""Process-group set-up and DistributedSampler (notes 000/001 "Multi-GPU", 003 "多GPU并行训练",
004 "DDP").

The set-up facts that need several processes (env:// under torchrun, tcp:// under mp.spawn,
new_group, DDP's initial broadcast, rank-0 save and reload, destroy_process_group, the notes'
`args=(world_size)` and `--local_rank`) are observed by `cases.dist_worker` and judged in
`suite/test_distributed.py`; what one process can show is checked here.
"""

from __future__ import annotations

import contextlib
import io
import warnings

import torch
from torch.utils.data import DistributedSampler

from harness.rules import FromFindings
from cases.spec import Case, Check, Finding, Verdict


def shards(n: int, replicas: int, *, drop_last: bool, shuffle: bool = True, epoch: int = 0, seed: int = 0):
    """The index list every rank's DistributedSampler yields (no process group needed)."""
    out = []
    for rank in range(replicas):
        sampler = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=shuffle,
                                     seed=seed, drop_last=drop_last)
        sampler.set_epoch(epoch)
        out.append(list(sampler))
    return out


def check_partition(device):
    """Coverage, overlap and padding for divisible and non-divisible sizes, with and without
    drop_last. Documented: without drop_last the shuffled order is padded by repeating its
    first samples up to a multiple of the replicas; with drop_last its tail is cut off."""
    lines, disjoint_always = [], True
    for n, p in ((12, 4), (10, 4), (10, 3), (7, 4)):
        for drop_last in (False, True):
            parts = shards(n, p, drop_last=drop_last)
            sizes = {len(s) for s in parts}
            flat = [i for s in parts for i in s]
            unique = set(flat)
            repeated = len(flat) - len(unique)
            missing = n - len(unique)
            per_rank = n // p if drop_last and n % p else -(-n // p)
            assert sizes == {per_rank}, f"n={n} p={p} drop_last={drop_last}: shard sizes {sizes}"
            assert all(0 <= i < n for i in flat)
            if drop_last:
                assert repeated == 0 and missing == n - p * (n // p), (n, p, repeated, missing)
            else:
                assert missing == 0, f"n={n} p={p}: {missing} samples never seen"
                assert repeated == p * per_rank - n, (n, p, repeated)
                order = torch.randperm(n, generator=torch.Generator().manual_seed(0)).tolist()
                padded = order + order[: p * per_rank - n]
                assert parts == [padded[r::p] for r in range(p)], "not the documented pad-and-stride split"
            if repeated or missing:
                disjoint_always = False
                lines.append(f"n={n}, p={p}, drop_last={drop_last}: {repeated} repeated, {missing} dropped")
    assert not disjoint_always
    return Finding(
        Verdict.DEPENDS,
        "the notes say DistributedSampler splits the data into disjoint subsets: true only when "
        "p divides n (n=12, p=4: disjoint and complete); otherwise " + "; ".join(lines),
    )


def check_set_epoch(device):
    """Shuffling is seeded by seed + epoch: without set_epoch every epoch repeats one order."""
    e0, e0_again, e1 = (shards(100, 2, drop_last=False, epoch=e) for e in (0, 0, 1))
    assert e0 == e0_again, "the same epoch must give the same order on every call (ranks rely on it)"
    assert e0 != e1, "set_epoch(1) did not change the order"
    assert sorted(e1[0] + e1[1]) == list(range(100)), "a reshuffled epoch must still cover the data once"
    moved = sum(a != b for a, b in zip(e0[0], e1[0]))
    sampler = DistributedSampler(range(100), num_replicas=2, rank=0)
    first, second = list(sampler), list(sampler)  # two "epochs" with no set_epoch between them
    assert first == second
    return Finding(Verdict.HOLDS, f"set_epoch(1) moves {moved}/50 of rank 0's positions and keeps the "
                   "partition disjoint; without it every epoch yields the identical order")


def check_launch_deprecated(device):
    """The notes launch with `python -m torch.distributed.launch` and read `--local_rank`."""
    import torch.distributed.launch as launch

    help_text = io.StringIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with contextlib.redirect_stdout(help_text):
                launch.main(["--help"])
        except SystemExit:
            pass
    deprecations = [w for w in caught if issubclass(w.category, (FutureWarning, DeprecationWarning))]
    if not deprecations:
        return Finding(Verdict.HOLDS, f"torch {torch.__version__}: torch.distributed.launch runs without a deprecation warning")
    message = str(deprecations[0].message).splitlines()[0]
    return Finding(Verdict.FAILS, f"torch {torch.__version__}: launch.main warns {deprecations[0].category.__name__}: "
                   f"'{message}'; torchrun sets LOCAL_RANK in the environment instead of passing --local_rank")


SETUP = Case(
    id="dist.setup",
    tier=3,
    claim="init_process_group (env:// or tcp://) first; mp.spawn(main, args=(world_size), ...) or "
    "torch.distributed.launch with a --local_rank argument; new_group for sub-groups; seed every rank "
    "alike; save model.module.state_dict() on rank 0 only; destroy_process_group at the end.",
    source="000/001 Multi-GPU, 003 多GPU并行训练, 004 DDP",
    checks={"launch_deprecated": Check(check_launch_deprecated)},
    requires=("distributed",),
    verdict=FromFindings(),
)

SAMPLER = Case(
    id="dist.sampler",
    tier=3,
    claim="DistributedSampler splits the dataset into disjoint subsets, one per process; "
    "set_epoch changes the shuffle.",
    source="000/001 Multi-GPU, 004 DDP",
    checks={"partition": Check(check_partition), "set_epoch": Check(check_set_epoch)},
    requires=("distributed",),
    verdict=FromFindings(),
)
