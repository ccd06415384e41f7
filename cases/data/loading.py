"""Feeding batches: the notes' `data_iter` vs DataLoader forms
(notes 002 data iterator, 001 Data preparation, 004 Dataset与Dataloader).

One epoch of shuffled mini-batches, five ways:

* `data_iter` — the notes' generator: Python `random.shuffle` of a list, a new index tensor per
  batch, one gather per batch from in-memory tensors.
* `loader_batched` — DataLoader over a TensorDataset with a `BatchSampler` as the sampler and
  `batch_size=None`: the dataset is indexed once per batch (one gather), no collate.
* `loader_per_sample` — the common form, `DataLoader(TensorDataset, batch_size, shuffle=True)`:
  `__getitem__` per sample, then `default_collate` stacks bs tensors per batch (bs Python calls
  and a copy of every byte once more).
* `files_w0` / `files_w2` — a map-style Dataset reading one raw float32 file per sample from a
  temporary directory, in the main process or in 2 worker processes (pin_memory where CUDA exists).

Every variant returns the epoch's samples re-sorted by id: equal to the oracle only when every
sample came exactly once. The benchmark rows carry `samples` per epoch, for samples/s.
"""

from __future__ import annotations

import math
import random
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, IterableDataset, RandomSampler, TensorDataset

from cases.spec import (
    Case,
    Check,
    Claim,
    ClaimKind,
    Finding,
    Tol,
    Verdict,
    library,
    naive,
    optimized,
)
from harness import measure
from harness.contract.rules import FromFindings
from harness.measure import device as harness_device

FP32 = torch.float32


def notes_data_iter(batch_size, features, labels):
    """Verbatim from the notes (002, data iterator)."""
    num_examples = len(features)
    indices = list(range(num_examples))
    random.shuffle(indices)
    for i in range(0, num_examples, batch_size):
        batch_indices = torch.tensor(indices[i : min(i + batch_size, num_examples)])
        yield features[batch_indices], labels[batch_indices]


class FileDataset(Dataset):
    """One raw float32 file per sample: `__getitem__` is an open + read + close."""

    def __init__(self, root: Path, n: int):
        self.root, self.n = root, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.from_numpy(np.fromfile(self.root / f"{i}.f32", dtype=np.float32)), i


@dataclass(eq=False)
class Epoch:
    """What every variant needs: batch size, the seed of its shuffle, and the samples on disk."""

    batch_size: int
    seed: int
    files: FileDataset


def make_samples(size, dtype, device, seed):
    """n samples of f features (ids 0..n-1 as labels), in memory and one file each on disk."""
    g = torch.Generator().manual_seed(seed)
    features = torch.randn(size["n"], size["f"], generator=g, dtype=torch.float32)
    ids = torch.arange(size["n"])
    epoch = Epoch(size["bs"], seed, FileDataset(Path(), size["n"]))
    root = Path(tempfile.mkdtemp(prefix="data-loading-"))
    weakref.finalize(epoch, shutil.rmtree, root, ignore_errors=True)
    epoch.files.root = root
    for i, row in enumerate(features.numpy()):
        row.tofile(root / f"{i}.f32")
    return features.to(dtype), ids, epoch


def _epoch_result(batches):
    feats, ids = zip(*batches)
    feats, ids = torch.cat(feats), torch.cat([torch.as_tensor(i) for i in ids])
    order = ids.argsort()
    return feats[order], ids[order].double()


def _generator(epoch):
    return torch.Generator().manual_seed(epoch.seed)


def data_iter(features, ids, epoch):
    random.seed(epoch.seed)
    return _epoch_result(notes_data_iter(epoch.batch_size, features, ids))


def loader_batched(features, ids, epoch):
    sampler = BatchSampler(
        RandomSampler(range(len(ids)), generator=_generator(epoch)), epoch.batch_size, drop_last=False
    )
    return _epoch_result(DataLoader(TensorDataset(features, ids), sampler=sampler, batch_size=None))


def loader_per_sample(features, ids, epoch):
    loader = DataLoader(
        TensorDataset(features, ids), batch_size=epoch.batch_size, shuffle=True, generator=_generator(epoch)
    )
    return _epoch_result(loader)


def _files_loader(epoch, workers):
    return DataLoader(
        epoch.files,
        batch_size=epoch.batch_size,
        shuffle=True,
        generator=_generator(epoch),
        num_workers=workers,
        pin_memory=harness_device.cuda_available(),
    )


def files_w0(features, ids, epoch):
    return _epoch_result(_files_loader(epoch, 0))


def files_w2(features, ids, epoch):
    # Two worker processes started per epoch (no persistent_workers): their start-up is part of
    # the epoch's cost, as in a training loop that builds its loader's iterator each epoch.
    return _epoch_result(_files_loader(epoch, 2))


def every_sample_once(features, ids, epoch):
    """The truth: each sample exactly once, in id order, in float64."""
    return features.double(), ids.double()


# ---- checks --------------------------------------------------------------------------------------


class NotesPairs(Dataset):
    """The Dataset 004 describes (回顾Dataset与Dataloader): indexed, each item a 2-tuple of a tensor
    shaped like an image (3 × 64 × 64, their example) and a label that may be an int."""

    def __init__(self, n: int, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.randn(n, 3, 64, 64, generator=g)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i], int(i) % 10


class NotesSamples(Dataset):
    """A Dataset shaped like 001's MyDataSet: its __getitem__ returns sample = {'image': …, 'labels':
    …} (MyDataSet reads a csv and image files; here the same dict from memory)."""

    def __init__(self, n: int):
        self.images = torch.randn(n, 3, 4, 4, generator=torch.Generator().manual_seed(1))
        self.labels = np.arange(n, dtype=np.float32)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return {"image": self.images[i], "labels": self.labels[i]}


def check_length_and_drop_last(device):
    """len(loader) = ceil(n/bs) (the notes' 数据的长度/batch_size取上界), floor with drop_last; each
    epoch has every sample once, two shuffled epochs differ in order; and the loader is iterable but
    not indexable (the notes' 不可索引，但是有iter方法的可迭代对象)."""
    rows = []
    for n, bs in ((100, 32), (96, 32), (7, 10), (1, 1)):
        ds = _Ids(NotesPairs(n))  # the notes' dataset, each item also naming its index
        loader = DataLoader(ds, batch_size=bs, shuffle=True, generator=torch.Generator().manual_seed(0))
        dropped = DataLoader(ds, batch_size=bs, drop_last=True)
        epochs = [torch.cat([b[2] for b in loader]) for _ in range(2)]
        sizes = [len(b[2]) for b in loader]
        rows.append(
            (
                n,
                bs,
                len(loader),
                len(dropped),
                all(sorted(e.tolist()) == list(range(n)) for e in epochs),
                sizes[-1] == (n % bs or bs) and sum(sizes) == n,
                sum(len(b[2]) for b in dropped),
                (not torch.equal(*epochs)) if n > 10 else None,
            )
        )
    loader = DataLoader(NotesPairs(10), batch_size=3)
    try:
        loader[0]
        indexing = ""
    except (TypeError, IndexError, KeyError) as exc:
        indexing = f"{type(exc).__name__}: {exc}"
    return judge_loader_length(rows, indexing, hasattr(loader, "__iter__"))


class _Ids(Dataset):
    """A dataset's items with their index appended: which samples an epoch delivered."""

    def __init__(self, inner):
        self.inner = inner

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        return (*self.inner[i], i)


def judge_loader_length(rows: list[tuple], indexing_error: str, iterable: bool) -> Finding:
    """rows: (n, bs, len(loader), len with drop_last, every sample once in each of two epochs, the
    last batch short by n mod bs, samples kept with drop_last, two shuffled epochs in different
    orders (None: n ≤ 10, not asked)). Holds when len = ceil(n/bs), floor(n/bs) with drop_last
    (keeping floor(n/bs)·bs samples), every epoch has every sample once, orders differ, and the
    loader is iterable but refuses an index (`indexing_error`: what loader[0] raised; empty: it
    answered)."""
    off = [
        r[:2]
        for r in rows
        if r[2] != math.ceil(r[0] / r[1])
        or r[3] != r[0] // r[1]
        or not r[4]
        or not r[5]
        or r[6] != (r[0] // r[1]) * r[1]
        or r[7] is False
    ]
    held = bool(rows) and not off and bool(indexing_error) and iterable
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        "len(DataLoader) against ceil(n/bs), floor(n/bs) with drop_last, every sample once per epoch, "
        "a new order each epoch: "
        + "; ".join(f"n={r[0]} bs={r[1]}: {r[2]} batches ({r[3]} with drop_last)" for r in rows)
        + (f"; off for (n, bs) {off}" if off else "; all as stated")
        + f"; loader[0]: {indexing_error or 'ANSWERED (indexable)'}; iterable: {iterable}",
    )


def check_shuffle_with_sampler_rejected(device):
    """shuffle=True beside a sampler is refused, shuffle=False accepted (the notes switch shuffle off
    when they pass a DistributedSampler: dist.sampler judges that line)."""
    ds = TensorDataset(torch.arange(10))
    try:
        DataLoader(ds, batch_size=2, shuffle=True, sampler=RandomSampler(ds))
        message = ""
    except ValueError as e:
        message = str(e)
    loader = DataLoader(ds, batch_size=2, shuffle=False, sampler=RandomSampler(ds))
    accepted = sorted(torch.cat([b[0] for b in loader]).tolist()) == list(range(10))
    return judge_shuffle_with_sampler(message, accepted)


def judge_shuffle_with_sampler(message: str, false_accepted: bool) -> Finding:
    """Holds when shuffle=True with a sampler raises a ValueError naming both (`message`; empty: it
    was accepted) and shuffle=False with the sampler gives every sample once."""
    named = "shuffle" in message and "sampler" in message
    return Finding(
        Verdict.HOLDS if named and false_accepted else Verdict.FAILS,
        "DataLoader(shuffle=True, sampler=...) "
        + (f"raises ValueError: {message!r}" if message else "was ACCEPTED")
        + "; shuffle=False with the sampler: "
        + ("every sample once" if false_accepted else "NOT every sample once"),
    )


def check_collate_semantics(device):
    """Each batch is a *list* [features (bs, 3, 64, 64), labels (bs,)] (the notes: 二元tensor的list),
    from the Dataset the notes describe, each item the (tensor, int) 2-tuple (二元tuple)."""
    ds = NotesPairs(10)
    item = ds[0]
    batch = next(iter(DataLoader(ds, batch_size=4)))
    shapes = [tuple(b.shape) for b in batch] if isinstance(batch, (list, tuple)) else []
    exact = (
        isinstance(batch, (list, tuple))
        and torch.equal(batch[0], ds.images[:4])
        and batch[1].tolist() == [ds[i][1] for i in range(4)]
    )
    return judge_collate_batch(
        type(item).__name__, type(batch).__name__, shapes, str(batch[1].dtype) if shapes else "", exact
    )


def judge_collate_batch(
    item_type: str, batch_type: str, shapes: list, label_dtype: str, exact: bool
) -> Finding:
    """The notes (004): an item is a 2-tuple (features, label); a batch a list of two tensors, the
    features (bs, a, b, c) and the labels (bs,). Holds when the default collate gives exactly that
    for bs = 4 of (3, 64, 64) images, the stacked values equal to the samples (a copy: exact)."""
    held = (
        item_type == "tuple"
        and batch_type == "list"
        and shapes == [(4, 3, 64, 64), (4,)]
        and label_dtype == "torch.int64"
        and exact
    )
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"a dataset item is a {item_type}; the default collate gives a {batch_type} of shapes {shapes} "
        f"(labels {label_dtype}), {'equal to' if exact else 'NOT equal to'} the samples stacked",
    )


def check_collate_fn_input(device):
    """001: collate_fn is called once the batch is gathered (the values `__getitem__` returned), "so
    the input is a tuple". What a custom collate_fn receives, for bs = 4, from a Dataset returning
    001's MyDataSet sample dicts."""
    ds = NotesSamples(10)
    seen = []
    next(iter(DataLoader(ds, batch_size=4, collate_fn=lambda items: seen.append(items) or items)))
    items = seen[0]
    as_returned = all(
        isinstance(s, dict)
        and torch.equal(s["image"], ds.images[i])
        and s["labels"] == ds.labels[i]  # the same float32: exact
        for i, s in enumerate(items)
    )
    return judge_collate_fn_input(type(items).__name__, len(items), as_returned)


def judge_collate_fn_input(container: str, count: int, as_returned: bool) -> Finding:
    """The notes: collate_fn gets the gathered batch, the values __getitem__ returned, so a tuple.
    Holds where it receives a tuple of the bs = 4 samples as returned; fails where the container is
    something else (`container`: its type) or the samples are not the ones returned."""
    held = container == "tuple" and count == 4 and as_returned
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"a custom collate_fn received a {container} of {count} samples, "
        + ("each the dict __getitem__ returned" if as_returned else "NOT the samples __getitem__ returned")
        + ("" if container == "tuple" else f": a {container}, not a tuple"),
    )


def check_collate_fn_owner(device):
    """001 calls collate_fn a parameter of the Dataset: which classes take one."""
    import inspect

    owners = [
        owner.__name__
        for owner in (Dataset, DataLoader)
        if "collate_fn" in inspect.signature(owner.__init__).parameters or hasattr(owner, "collate_fn")
    ]
    return judge_collate_fn_owner(owners)


def judge_collate_fn_owner(owners: list[str]) -> Finding:
    """Holds where Dataset takes a collate_fn (`owners`: the classes that do); fails otherwise."""
    held = "Dataset" in owners
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"collate_fn is a parameter of {', '.join(owners) or 'neither class'}"
        + ("" if held else "; Dataset takes none: pass it to DataLoader(..., collate_fn=...)"),
    )


# The signature 004 copies (Torch.utils.Data): name → the notes' default.
NOTES_LOADER_DEFAULTS = {
    "batch_size": 1,
    "shuffle": False,
    "sampler": None,
    "batch_sampler": None,
    "num_workers": 0,
    "collate_fn": None,
    "pin_memory": False,
    "drop_last": False,
    "timeout": 0,
    "worker_init_fn": None,
    "prefetch_factor": 2,
    "persistent_workers": False,
}


def check_notes_signature(device):
    """004's DataLoader signature against this torch's: each default, and the call with every
    default the notes write passed explicitly."""
    import inspect

    params = inspect.signature(DataLoader.__init__).parameters
    actual = {name: params[name].default if name in params else "<absent>" for name in NOTES_LOADER_DEFAULTS}
    try:
        DataLoader(TensorDataset(torch.arange(4)), **NOTES_LOADER_DEFAULTS)
        raised = ""
    except (ValueError, TypeError) as exc:
        raised = f"{type(exc).__name__}: {exc}"
    return judge_notes_signature(NOTES_LOADER_DEFAULTS, actual, raised, torch.__version__)


def judge_notes_signature(notes: dict, actual: dict, raised: str, version: str) -> Finding:
    """The notes' DataLoader signature as a statement of its defaults: holds where every default is
    this torch's; fails where one is not, naming it (`raised`: what the call with the listed
    defaults passed explicitly raised; empty: it ran). `shuffle=None` is documented as False
    (None means "not given"): the same default."""

    def same(name):
        got = actual[name]
        return got == notes[name] or (name == "shuffle" and got is None and notes[name] is False)

    wrong = [name for name in notes if not same(name)]
    return Finding(
        Verdict.FAILS if wrong else Verdict.HOLDS,
        f"torch {version}: DataLoader's defaults differ from the notes' for "
        + (", ".join(f"{n} (the notes {notes[n]!r}, here {actual[n]!r})" for n in wrong) if wrong else "none")
        + f"; the call with the notes' defaults {'raises ' + raised[:140] if raised else 'runs'}"
        + (
            "; prefetch_factor's default became None in torch 2.0 (2 batches per worker still apply "
            "where num_workers > 0): leave it unset without workers"
            if "prefetch_factor" in wrong
            else ""
        ),
    )


class _Stream(IterableDataset):
    def __init__(self, n, shard):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        if self.shard and info is not None:
            return iter(range(info.id, self.n, info.num_workers))
        return iter(range(self.n))


def check_workers_exactly_once(device):
    """Map-style datasets are split across workers by the sampler; an iterable dataset is copied
    into each worker, so without sharding by worker id every sample comes num_workers times."""
    n = 40
    maplike = torch.cat(
        [
            b
            for b in DataLoader(
                TensorDataset(torch.arange(n)),
                batch_size=8,
                num_workers=2,
                shuffle=True,
                collate_fn=lambda t: torch.stack([i[0] for i in t]),
            )
        ]
    )
    copied = torch.cat(list(DataLoader(_Stream(n, shard=False), batch_size=8, num_workers=2)))
    sharded = torch.cat(list(DataLoader(_Stream(n, shard=True), batch_size=8, num_workers=2)))
    return judge_workers(
        n, sorted(maplike.tolist()), sorted(sharded.tolist()), torch.bincount(copied, minlength=n).tolist()
    )


def judge_workers(n: int, maplike: list[int], sharded: list[int], copies: list[int]) -> Finding:
    """Context (the catalogue's): with 2 workers a map-style dataset and a stream sharded by
    get_worker_info() give every sample once; an unsharded stream gives each twice (`copies`: how
    many times each id came)."""
    everything = list(range(n))
    held = maplike == everything and sharded == everything and copies == [2] * n
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        "num_workers=2: map-style "
        + ("every sample once" if maplike == everything else "NOT every sample once")
        + "; "
        f"an unsharded IterableDataset yields {sum(copies)} samples (each {sorted(set(copies))} times), "
        f"sharded by get_worker_info() {len(sharded)}",
    )


def check_pin_memory(device):
    """pin_memory=True gives page-locked batches, and non_blocking copies of them arrive intact."""
    x = torch.randn(64, 32)
    loader = DataLoader(TensorDataset(x), batch_size=16, pin_memory=True)
    got, pinned = [], []
    for (b,) in loader:
        pinned.append(b.is_pinned())
        got.append(b.to(device, non_blocking=True))
    measure.synchronize(device)
    return judge_pin_memory(pinned, torch.equal(torch.cat(got).cpu(), x))  # copies: exact


def judge_pin_memory(pinned: list[bool], exact: bool) -> Finding:
    """Context: every batch of a pin_memory=True loader page-locked, and its non_blocking copies
    to the GPU equal to the data."""
    held = bool(pinned) and all(pinned) and exact
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"pin_memory=True: {sum(pinned)} of {len(pinned)} batches pinned; non_blocking copies to the GPU "
        + ("exact" if exact else "DIFFER"),
    )


CASE = Case(
    id="data.loading",
    # Timed side by side, deciding no claim (the verdict comes from the findings): the
    # library's or the catalogue's better way against the notes'.
    context_pairs=(("loader_batched", "data_iter"),),
    tier=2,
    claim="The notes' data_iter and a DataLoader over the Dataset the notes describe give every sample once "
    "per epoch, len = ceil(n/bs), batches as [features, labels]; collate_fn (a Dataset parameter, the notes "
    "say) gets a tuple; the listed DataLoader defaults; samples/s of each form.",
    source="002 data iterator, 001 Data preparation, 004 Dataset与Dataloader",
    make_inputs=make_samples,
    variants={
        "data_iter": naive(data_iter, claim="data_iter_epoch"),
        "loader_batched": optimized(loader_batched),
        "loader_per_sample": library(loader_per_sample),
        "files_w0": library(files_w0),
        "files_w2": library(files_w2),
    },
    oracle=every_sample_once,
    tolerance={FP32: Tol(rtol=0.0, atol=0.0)},  # a copy: exact
    dtypes={"cpu": (FP32,)},
    sizes={
        "quick": [{"n": 2000, "f": 256, "bs": 64}],
        "full": [{"n": n, "f": 3 * 32 * 32, "bs": 256} for n in (10_000, 50_000)],
    },
    claims=(
        Claim(
            "data_iter_epoch",
            "一个epoch将数据集的数据都用一遍 … def data_iter(batch_size, features, labels): … "
            "random.shuffle(indices)",
            "002",
            ClaimKind.CORRECTNESS,
            reading="the notes' data_iter gives every sample exactly once per epoch, shuffled",
        ),
        Claim(
            "loader_length",
            "Dataloader class的长度为 数据的长度/batch_size取上界，"
            "是一个不可索引，但是有iter方法的可迭代对象",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "batch_is_list",
            "每次迭代出来的结果为一个二元tensor的list， "
            "第一个tensor代表来minibatch的数据特征 (minibatch, a, b, c)，是一个四维的tensor;"
            "第二个tensor是minibatch的数据标签,是一个一维的tensor （minibatch）",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="over the Dataset 004 describes (items (image tensor, int label)), each batch is a list "
            "[features (bs, 3, 64, 64), labels (bs,)]",
        ),
        Claim(
            "collate_fn_input",
            "this function is called when the batch is gathered (value has been returned by the "
            "`__getitem__` method and combined), so the input is a tuple.",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="collate_fn receives the batch's samples as __getitem__ returned them, in a tuple",
        ),
        Claim(
            "collate_fn_owner",
            "`collate_fn` parameter in DataSet",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="collate_fn is a parameter of the Dataset",
        ),
        Claim(
            "loader_defaults",
            "DataLoader(dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None, "
            "num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0, "
            "worker_init_fn=None, *, prefetch_factor=2, persistent_workers=False)",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="these are DataLoader's defaults",
        ),
    ),
    checks={
        "length_and_drop_last": Check(check_length_and_drop_last, devices=("cpu",), claim="loader_length"),
        # The catalogue's check (the notes' `shuffle=False` beside a sampler, 004's DDP section, is
        # dist.sampler's claim): context.
        "shuffle_with_sampler_rejected": Check(check_shuffle_with_sampler_rejected, devices=("cpu",)),
        "collate_semantics": Check(check_collate_semantics, devices=("cpu",), claim="batch_is_list"),
        "collate_fn_input": Check(check_collate_fn_input, devices=("cpu",), claim="collate_fn_input"),
        "collate_fn_owner": Check(check_collate_fn_owner, devices=("cpu",), claim="collate_fn_owner"),
        "notes_signature": Check(check_notes_signature, devices=("cpu",), claim="loader_defaults"),
        # Workers and pinned memory: what the catalogue adds (the notes list the features only).
        "workers_exactly_once": Check(check_workers_exactly_once, devices=("cpu",)),
        "pin_memory": Check(check_pin_memory, requires=("cuda",), devices=("cuda",)),
    },
    # The notes claim no speed of any form: samples/s of each is context.
    verdict=FromFindings(),
    uncompilable={
        "data_iter": "a DataLoader's Python iteration (workers, collation): no tensor program "
        "for torch.compile to fuse"
    },
    metrics=lambda name, inputs, device: {"samples": len(inputs[1])},
    bytes_moved=lambda s, b: s["n"] * s["f"] * b,
)
