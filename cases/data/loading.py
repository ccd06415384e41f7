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

from cases.spec import Case, Check, Finding, Tol, Verdict, library, naive, optimized
from harness.rules import FromFindings

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
        pin_memory=torch.cuda.is_available(),
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


def check_length_and_drop_last(device):
    """len(loader) = ceil(n/bs) (the notes' 数据的长度/batch_size取上界), floor with drop_last; each
    epoch has every sample once, and two shuffled epochs differ in order."""
    rows = []
    for n, bs in ((100, 32), (96, 32), (7, 10), (1, 1)):
        ds = TensorDataset(torch.arange(n))
        loader = DataLoader(ds, batch_size=bs, shuffle=True, generator=torch.Generator().manual_seed(0))
        assert len(loader) == math.ceil(n / bs), f"n={n} bs={bs}: len {len(loader)}"
        dropped = DataLoader(ds, batch_size=bs, drop_last=True)
        assert len(dropped) == n // bs, f"n={n} bs={bs} drop_last: len {len(dropped)}"
        epochs = [torch.cat([b[0] for b in loader]) for _ in range(2)]
        for e in epochs:
            assert sorted(e.tolist()) == list(range(n)), (
                f"n={n} bs={bs}: an epoch missed or repeated a sample"
            )
        sizes = [len(b[0]) for b in loader]
        assert sizes[-1] == (n % bs or bs) and sum(sizes) == n
        assert sum(len(b[0]) for b in dropped) == (n // bs) * bs
        if n > 10:
            assert not torch.equal(*epochs), "two shuffled epochs came in the same order"
        rows.append(f"n={n} bs={bs}: {len(loader)} batches ({len(dropped)} with drop_last)")
    return Finding(
        Verdict.HOLDS,
        "len(DataLoader) = ceil(n/bs) as the notes say, floor(n/bs) with drop_last; "
        "every sample once per epoch, new order each epoch: " + "; ".join(rows),
    )


def check_shuffle_with_sampler_rejected(device):
    ds = TensorDataset(torch.arange(10))
    try:
        DataLoader(ds, batch_size=2, shuffle=True, sampler=RandomSampler(ds))
    except ValueError as e:
        message = str(e)
    else:
        raise AssertionError("shuffle=True together with a sampler was accepted")
    assert "shuffle" in message and "sampler" in message, message
    return Finding(None, f"DataLoader(shuffle=True, sampler=...) raises ValueError: {message!r}")


def check_collate_semantics(device):
    """Each batch is a *list* [features (bs, ...), labels (bs,)] (the notes: 二元tensor的list); a
    custom collate_fn receives the bs (x, y) tuples themselves."""
    x = torch.randn(10, 3, 4, 4)
    y = torch.arange(10)
    batch = next(iter(DataLoader(TensorDataset(x, y), batch_size=4)))
    assert isinstance(batch, list) and len(batch) == 2, type(batch)
    assert batch[0].shape == (4, 3, 4, 4) and batch[1].shape == (4,) and batch[1].dtype == torch.int64
    torch.testing.assert_close(batch[0], x[:4], rtol=0, atol=0)  # collation stacks copies: exact
    seen = []
    next(
        iter(
            DataLoader(
                TensorDataset(x, y), batch_size=4, collate_fn=lambda items: seen.extend(items) or items
            )
        )
    )
    assert len(seen) == 4 and all(isinstance(s, tuple) and s[0].shape == (3, 4, 4) for s in seen)
    return Finding(
        Verdict.HOLDS,
        "default collate turns bs (x, y) tuples into a list [x stacked (4,3,4,4), "
        "y stacked (4,) int64], as the notes describe; a collate_fn gets the 4 tuples unstacked",
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
    assert sorted(maplike.tolist()) == list(range(n)), "map-style with 2 workers missed or repeated samples"
    copied = torch.cat(list(DataLoader(_Stream(n, shard=False), batch_size=8, num_workers=2)))
    sharded = torch.cat(list(DataLoader(_Stream(n, shard=True), batch_size=8, num_workers=2)))
    assert sorted(sharded.tolist()) == list(range(n)), "sharded iterable dataset missed or repeated samples"
    assert len(copied) == 2 * n and torch.bincount(copied).eq(2).all(), (
        "unsharded stream should repeat each sample twice"
    )
    return Finding(
        None,
        f"num_workers=2: map-style {n}/{n} samples once; an unsharded IterableDataset yields "
        f"{len(copied)} samples (each twice), sharded by get_worker_info() {len(sharded)}",
    )


def check_pin_memory(device):
    """pin_memory=True gives page-locked batches, and non_blocking copies of them arrive intact."""
    x = torch.randn(64, 32)
    loader = DataLoader(TensorDataset(x), batch_size=16, pin_memory=True)
    got = []
    for (b,) in loader:
        assert b.is_pinned(), "pin_memory=True produced a pageable batch"
        got.append(b.to(device, non_blocking=True))
    torch.cuda.synchronize(device)
    torch.testing.assert_close(torch.cat(got).cpu(), x, rtol=0, atol=0)  # copies: exact
    return Finding(None, "pin_memory=True: every batch pinned; non_blocking copies to the GPU exact")


CASE = Case(
    id="data.loading",
    tier=2,
    claim="A DataLoader over a map-style Dataset gives what the notes' data_iter gives (every sample once "
    "per epoch, len = ceil(n/bs), batches as [features, labels]); samples/s of each form.",
    source="002 data iterator, 001 Data preparation, 004 Dataset与Dataloader",
    make_inputs=make_samples,
    variants={
        "data_iter": naive(data_iter),
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
    checks={
        "length_and_drop_last": Check(check_length_and_drop_last, devices=("cpu",)),
        "shuffle_with_sampler_rejected": Check(check_shuffle_with_sampler_rejected, devices=("cpu",)),
        "collate_semantics": Check(check_collate_semantics, devices=("cpu",)),
        "workers_exactly_once": Check(check_workers_exactly_once, devices=("cpu",)),
        "pin_memory": Check(check_pin_memory, requires=("cuda",), devices=("cuda",)),
    },
    verdict=FromFindings(),
    uncompilable={
        "data_iter": "a DataLoader's Python iteration (workers, collation): no tensor program "
        "for torch.compile to fuse"
    },
    metrics=lambda name, inputs, device: {"samples": len(inputs[1])},
    bytes_moved=lambda s, b: s["n"] * s["f"] * b,
)
