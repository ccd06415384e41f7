"""`dist.sampler` (notes 000/001 "Multi-GPU", 003 "多GPU并行训练", 004 "DDP"): DistributedSampler's
shards, checked in one process (no process group needed): disjoint subsets covering the data, a new
order each epoch only with `set_epoch`, and the notes' loader with its sampler."""

from __future__ import annotations

import torch
from torch.utils.data import DistributedSampler

from cases.spec import Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict
from harness.contract.rules import FromFindings


def shards(n: int, replicas: int, *, drop_last: bool, shuffle: bool = True, epoch: int = 0, seed: int = 0):
    """The index list every rank's DistributedSampler yields (no process group needed)."""
    out = []
    for rank in range(replicas):
        sampler = DistributedSampler(
            range(n), num_replicas=replicas, rank=rank, shuffle=shuffle, seed=seed, drop_last=drop_last
        )
        sampler.set_epoch(epoch)
        out.append(list(sampler))
    return out


def split_row(n: int, p: int, drop_last: bool) -> tuple:
    """One (n, p, drop_last) observed: (n, p, drop_last, repeated, dropped, documented), where
    documented says the shards are the documented split: the seeded permutation, padded by
    repeating its first samples up to a multiple of p (drop_last False) or cut to one (True), then
    rank r takes every p-th index from r."""
    parts = shards(n, p, drop_last=drop_last)
    flat = [i for s in parts for i in s]
    unique = set(flat)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(0)).tolist()
    total = p * (n // p) if drop_last else p * -(-n // p)
    padded = (order + order * (total // max(n, 1)))[:total]
    documented = parts == [padded[r::p] for r in range(p)] and unique <= set(range(n))
    return n, p, drop_last, len(flat) - len(unique), n - len(unique), documented


def check_partition(device):
    """Coverage, overlap and padding for divisible and non-divisible sizes, with and without
    drop_last; and the notes' own use: CIFAR-10's 50,000 images over the 2 × 3 processes of
    their launch example (--nproc_per_node=2 --nnodes=3)."""
    rows = [split_row(n, p, d) for n, p in ((12, 4), (10, 4), (10, 3), (7, 4)) for d in (False, True)]
    return judge_partition(rows, notes_use=split_row(50_000, 6, False))


def judge_partition(rows: list[tuple], notes_use: tuple | None = None) -> Finding:
    """The notes: DistributedSampler splits the dataset into mutually disjoint subsets, one per
    process, with no condition (and their code takes the default, drop_last=False). Each row is
    `split_row`'s (n, p, drop_last, repeated, dropped, documented); `notes_use` is the notes' own
    (CIFAR-10's 50,000 over their 2 × 3 processes). A split other than the documented one: fails;
    a sample on two ranks (drop_last=False where p does not divide n, or the notes' own use):
    fails, the statement observed false; disjoint everywhere: holds, naming what drop_last=True
    dropped."""
    off = [r for r in rows if not r[5]]
    shared = [r for r in rows if r[3]]
    if notes_use is not None and notes_use[3]:
        shared.append(notes_use)
    dropped = [r for r in rows if r[4]]

    def say(r):
        return f"n={r[0]:,}, p={r[1]}, drop_last={r[2]}: {r[3]} repeated, {r[4]} dropped"

    if off:
        return Finding(Verdict.FAILS, "not the documented pad-and-stride split: " + "; ".join(map(say, off)))
    even = ", ".join(dict.fromkeys(f"n={r[0]}, p={r[1]}" for r in rows if not (r[3] or r[4])))
    if shared:
        own = (
            f"; the notes' own use, CIFAR-10's {notes_use[0]:,} images over {notes_use[1]} processes "
            f"with the default drop_last=False, puts {notes_use[3]} samples on two ranks"
            if notes_use is not None and notes_use[3]
            else ""
        )
        return Finding(
            Verdict.FAILS,
            "the shards are not disjoint: where p does not divide n the default drop_last=False pads "
            "every rank to ceil(n/p) by repeating samples ("
            + "; ".join(say(r) for r in shared if r is not notes_use)
            + own
            + f"); they are disjoint only where p divides n ({even}) or with drop_last=True, which "
            "drops n mod p samples instead"
            + (" (" + "; ".join(map(say, dropped)) + ")" if dropped else "")
            + ": use drop_last=True, or count the repeats where exact coverage matters",
        )
    return Finding(
        Verdict.HOLDS,
        f"disjoint for all {len(rows)} (n, p, drop_last) tried"
        + ("; drop_last=True drops n mod p: " + "; ".join(map(say, dropped)) if dropped else ""),
    )


def check_set_epoch(device):
    """Shuffling is seeded by seed + epoch: without set_epoch every epoch repeats one order."""
    e0, e0_again, e1 = (shards(100, 2, drop_last=False, epoch=e) for e in (0, 0, 1))
    sampler = DistributedSampler(range(100), num_replicas=2, rank=0)
    first, second = list(sampler), list(sampler)  # two "epochs" with no set_epoch between them
    return judge_set_epoch(
        same_epoch_same_order=e0 == e0_again,
        moved=sum(a != b for a, b in zip(e0[0], e1[0])),
        covers=sorted(e1[0] + e1[1]) == list(range(100)),
        no_set_epoch_repeats=first == second,
    )


def judge_set_epoch(
    same_epoch_same_order: bool, moved: int, covers: bool, no_set_epoch_repeats: bool
) -> Finding:
    """set_epoch(e) reseeds the shuffle (seed + e) alike on every rank: the same epoch gives the
    same order, another epoch another order that still covers the data once. The notes' loops
    never call it (context: their every epoch repeats one order)."""
    holds = same_epoch_same_order and moved > 0 and covers
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"set_epoch(1) moves {moved}/50 of rank 0's positions; same epoch, same order: "
        f"{same_epoch_same_order}; epoch 1 covers the data once: {covers}; without set_epoch two "
        f"epochs {'repeat one order' if no_set_epoch_repeats else 'differ'} (the notes never call it)",
    )


def check_notes_loader(device):
    """000/001 and 004 hand the sampler to a DataLoader; 004 as `sampleer=` with shuffle=False."""
    from torch.utils.data import DataLoader

    dataset, batch_size = list(range(10)), 2
    sampler = DistributedSampler(dataset, num_replicas=2, rank=1, shuffle=True, seed=0)
    try:
        DataLoader(dataset, batch_size=batch_size, shuffle=False, sampleer=sampler)  # 004 verbatim
        notes_error = ""
    except TypeError as exc:
        notes_error = f"TypeError: {exc}"
    seen = [int(i) for batch in DataLoader(dataset, batch_size=batch_size, sampler=sampler) for i in batch]
    try:
        DataLoader(dataset, batch_size=batch_size, shuffle=True, sampler=sampler)
        shuffle_error = ""
    except ValueError as exc:
        shuffle_error = f"ValueError: {exc}"
    return judge_notes_loader(seen, list(sampler), notes_error, shuffle_error)


def judge_notes_loader(seen: list[int], shard: list[int], notes_error: str, shuffle_error: str) -> Finding:
    """The technique: DataLoader(sampler=DistributedSampler) yields exactly this rank's shard, in
    order, with shuffle left False (the sampler shuffles). 004's `sampleer=` keyword is a slip."""
    errata = ()
    if notes_error:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                "DataLoader(dataset,batch_size=batch_size,shuffle=False,sampleer=DistributedSampler(dataset))",
                f"{notes_error}; the keyword is sampler=",
            ),
        )
    return Finding(
        Verdict.HOLDS if seen == shard else Verdict.FAILS,
        f"DataLoader(sampler=DistributedSampler(rank 1 of 2)) yields {seen}, the sampler's shard {shard}; "
        + (f"shuffle=True beside a sampler raises {shuffle_error[:90]}" if shuffle_error else "")
        + " (hence the notes' shuffle=False)",
        errata,
    )


SAMPLER = Case(
    id="dist.sampler",
    tier=3,
    claim="DistributedSampler splits the dataset into disjoint subsets, one per process; "
    "set_epoch changes the shuffle.",
    source="000/001 Multi-GPU, 004 DDP",
    claims=(
        Claim(
            "disjoint_subsets",
            "the sampler process, DS 将数据集划分为几个互不相交的子集",
            "000",
            ClaimKind.BEHAVIOUR,
            reading="DistributedSampler(trainset), as the notes build it (drop_last=False), gives the "
            "processes mutually disjoint shards, whatever the dataset's length and the world size",
        ),
        Claim(
            "non_overlapping",
            "Distributed Sampler给每一个device一个non-overlapping input batch",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="DistributedSampler(dataset) (drop_last=False) gives no two devices the same sample",
        ),
        Claim(
            "loader_with_sampler",
            "change the dataloader with distributed sampler and shuffle to false",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="DataLoader(sampler=DistributedSampler(...), shuffle=False) yields exactly this "
            "rank's shard (the keyword spelled sampler=, the notes' sampleer= being a typo)",
        ),
    ),
    checks={
        "partition": Check(check_partition, devices=("cpu",), claim="disjoint_subsets"),
        # 004 states 000's fact again in its own words: the same observation decides it.
        "partition_004": Check(check_partition, devices=("cpu",), claim="non_overlapping"),
        # The notes never call set_epoch: what it does is context.
        "set_epoch": Check(check_set_epoch, devices=("cpu",)),
        "notes_loader": Check(check_notes_loader, devices=("cpu",), claim="loader_with_sampler"),
    },
    requires=("distributed",),
    verdict=FromFindings(),
)
