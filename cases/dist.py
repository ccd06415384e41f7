"""Process-group set-up and DistributedSampler (notes 000/001 "Multi-GPU", 003 "多GPU并行训练",
004 "DDP").

The set-up facts that need several processes (env:// under torchrun, tcp:// under mp.spawn,
new_group, DDP's initial broadcast, rank-0 save and reload, destroy_process_group, the notes'
`args=(world_size)` and `--local_rank`) are observed by `cases.dist_worker`, launched by
`suite/test_distributed.py`, and judged here (`judge_*`, from the ranks' JSON); what one process
can show is checked here too.
"""

from __future__ import annotations

import contextlib
import io
import warnings

import torch
from torch.utils.data import DistributedSampler

from cases.spec import Case, Check, Erratum, ErratumKind, Finding, Verdict
from harness.rules import FromFindings


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


def check_partition(device):
    """Coverage, overlap and padding for divisible and non-divisible sizes, with and without
    drop_last. Documented: without drop_last the shuffled order is padded by repeating its
    first samples up to a multiple of the replicas; with drop_last its tail is cut off."""
    lines = []
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
                lines.append(f"n={n}, p={p}, drop_last={drop_last}: {repeated} repeated, {missing} dropped")
    return judge_partition(lines)


def judge_partition(uneven: list[str]) -> Finding:
    """The notes: DistributedSampler splits the data into disjoint subsets. Where some (n, p,
    drop_last) repeated or dropped samples, that depends on p dividing n, the condition named."""
    if not uneven:
        return Finding(Verdict.HOLDS, "disjoint and complete for every n, p and drop_last tried")
    return Finding(
        Verdict.DEPENDS,
        "depends on p dividing n: disjoint and complete when it does (n=12, p=4); otherwise "
        + "; ".join(uneven),
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
    return Finding(
        Verdict.HOLDS,
        f"set_epoch(1) moves {moved}/50 of rank 0's positions and keeps the "
        "partition disjoint; without it every epoch yields the identical order",
    )


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
        return judge_launch_deprecated("")
    return judge_launch_deprecated(
        f"{deprecations[0].category.__name__}: '{str(deprecations[0].message).splitlines()[0]}'"
    )


def judge_launch_deprecated(warning: str) -> Finding:
    """The launcher the notes use is their API choice: deprecated, it is an erratum; the technique
    (a launched process group) is judged by the launches themselves."""
    if not warning:
        return Finding(
            None, f"torch {torch.__version__}: torch.distributed.launch runs without a deprecation warning"
        )
    return Finding(
        None,
        f"torch {torch.__version__}: launch.main warns {warning}",
        (
            Erratum(
                ErratumKind.DEPRECATED_API,
                "python -m torch.distributed.launch --nproc_per_node=N train.py",
                f"warns {warning}; torchrun sets LOCAL_RANK in the environment instead of --local_rank",
            ),
        ),
    )


# ---- judging the launched runs (the ranks' JSON, one dict per rank) ---------------------------------


def check_setup_facts(facts: dict, world: int) -> None:
    """One rank's observations of the notes' set-up recipe (`cases.dist_worker.setup_facts`)."""
    assert facts["initialized"] and not facts["initialized_after_destroy"], (
        "destroy_process_group left it initialized"
    )
    assert facts["seeded_init_identical"], "the same seed on every rank should give identical weights"
    assert facts["after_ddp_identical"] and facts["after_ddp_equals_rank0"], (
        "DDP did not broadcast rank 0's weights"
    )
    assert facts["subgroup_sum"] == facts["subgroup_expected"], (
        f"new_group all_reduce: {facts['subgroup_sum']}"
    )
    assert facts["reload_equal"], "rank 0's module.state_dict() did not reload into a plain model"
    keys = facts["ddp_state_dict_keys"]
    assert all(k.startswith("module.") for k in keys), f"the DDP wrapper's state_dict keys: {keys}"
    assert not facts["wrapped_state_dict_loads"], "the DDP wrapper's state_dict loaded into a plain model"
    if world > 1:
        assert not facts["unseeded_init_identical"], "different seeds gave identical weights"


def judge_torchrun_env(rows: list[dict], world: int) -> Finding:
    """torchrun + env:// : the facts on every rank, and the rank's place in the environment."""
    ranks = [r["rank"] for r in rows]
    assert ranks == list(range(world)), f"rank files for ranks {ranks}, launched {world}"
    for r in rows:
        check_setup_facts(r, world)
        assert r["env"]["LOCAL_RANK"] == str(r["rank"]) and r["env"]["WORLD_SIZE"] == str(world), r["env"]
    return Finding(
        Verdict.HOLDS,
        "torchrun + init_process_group(env://): RANK/LOCAL_RANK/WORLD_SIZE from the environment; "
        "common seed → identical weights (and DDP broadcasts rank 0's anyway); new_group sums "
        f"{rows[1]['subgroup_sum']:g} in the odd group; rank 0 saves module.state_dict() and it "
        "reloads into a plain model (the wrapper's keys are 'module.*' and fail: "
        f"{rows[0]['wrapped_state_dict_error'][:80]}); "
        "destroy_process_group → is_initialized() False",
    )


def judge_spawn(rows: list[dict], slip: dict, world: int) -> Finding:
    """mp.spawn + tcp:// : the facts on every rank, and what the notes' `args=(world_size)` does."""
    assert len(rows) == world, f"{len(rows)} rank files, spawned {world}"
    for r in rows:
        check_setup_facts(r, world)
    errata = ()
    if slip["args_type"] != "tuple" and slip["raised"]:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                "mp.spawn(main, args=(world_size), nprocs=world_size)",
                f"passes args={slip['args']} ({slip['args_type']}, not a tuple); the spawned process dies "
                f"with {slip['error']!r}",
            ),
        )
    return Finding(
        Verdict.HOLDS,
        f"mp.spawn with args=(world_size,) and tcp:// init: all {world} ranks set up as the notes describe "
        "(sub-groups, rank-0 save, identical start)",
        errata,
    )


def judge_notes_launch(rows: list[dict], output: str, world: int) -> Finding:
    """The notes' `python -m torch.distributed.launch` + `add_argument("--local_rank")`: what the
    ranks' parsers saw (`cases.dist_launch_worker`) and whether launch (its `output`) warned."""
    assert len(rows) == world, f"{len(rows)} rank files, launched {world}"
    for r in rows:
        assert r["fixed_local_rank"] == r["env_local_rank"] == r["rank"], r
    deprecated = "deprecated" in output
    broken = [r for r in rows if not r["notes_parser"]["ok"]]
    if broken:
        evidence = (
            f"torch {torch.__version__}: launch passes {rows[0]['argv'][0]!r}; the notes' "
            f"add_argument('--local_rank') exits with {broken[0]['notes_parser']['error']!r}"
        )
    else:
        evidence = f"the notes' --local_rank parser still parses launch's arguments ({rows[0]['argv']})"
    evidence += "; launch " + (
        "prints a FutureWarning: deprecated, use torchrun (LOCAL_RANK env)"
        if deprecated
        else "gave no deprecation warning"
    )
    errata = ()
    if broken:
        errata += (
            Erratum(
                ErratumKind.DEPRECATED_API,
                "parser.add_argument('--local_rank', type=int)",
                f"launch passes {rows[0]['argv'][0]!r}; the parser exits with "
                f"{broken[0]['notes_parser']['error']!r}; LOCAL_RANK from the environment replaces it",
            ),
        )
    # Every rank found its local rank (asserted above), from the environment as torchrun sets it.
    return Finding(Verdict.HOLDS, "LOCAL_RANK from the environment names each rank; " + evidence, errata)


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
