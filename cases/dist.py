"""Process-group set-up and DistributedSampler (notes 000/001 "Multi-GPU", 003 "多GPU并行训练",
004 "DDP").

The set-up facts that need several processes (env:// under torchrun, tcp:// under mp.spawn,
new_group, DDP's initial broadcast, rank-0 save and reload, destroy_process_group, the notes'
`args=(world_size)`) are observed by `cases.dist_worker`, and the notes' `--local_rank` by
`cases.dist_launch_worker`, both launched through `cases._lib.dist_launches` (`launched_*`, for
`suite/test_distributed.py`) and judged here (`judge_*`, from the ranks' JSON); what one process
can show is checked here too.
"""

from __future__ import annotations

import contextlib
import io
import json
import warnings

import torch
from torch.utils.data import DistributedSampler

from cases._lib.dist_launches import LaunchRecord, Runs
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
    """The notes: DistributedSampler splits the data into disjoint subsets. Each row is
    `split_row`'s (n, p, drop_last, repeated, dropped, documented). Disjoint and complete
    everywhere: holds; a split other than the documented one: fails; repeats or drops where p does
    not divide n: depends, on p | n (or drop_last, which drops n mod p instead), and the notes'
    unconditional "互不相交的子集" is then a wrong statement, an erratum."""
    off = [r for r in rows if not r[5]]
    uneven = [r for r in rows if r[3] or r[4]]
    if notes_use is not None and (notes_use[3] or notes_use[4]):
        uneven.append(notes_use)

    def say(r):
        return f"n={r[0]:,}, p={r[1]}, drop_last={r[2]}: {r[3]} repeated, {r[4]} dropped"

    if off:
        return Finding(Verdict.FAILS, "not the documented pad-and-stride split: " + "; ".join(map(say, off)))
    if not uneven:
        return Finding(Verdict.HOLDS, f"disjoint and complete for all {len(rows)} (n, p, drop_last) tried")
    even = [f"n={r[0]}, p={r[1]}" for r in rows if not (r[3] or r[4])]
    where = (
        f"; the notes' own use: CIFAR-10 ({notes_use[0]:,}) over {notes_use[1]} processes repeats "
        f"{notes_use[3]} samples"
        if notes_use is not None and notes_use[3]
        else ""
    )
    return Finding(
        Verdict.DEPENDS,
        "depends on p dividing n: disjoint and complete when it does ("
        + ", ".join(dict.fromkeys(even))
        + "); otherwise drop_last=False pads by repeating samples and drop_last=True drops n mod p: "
        + "; ".join(say(r) for r in uneven if r is not notes_use)
        + where,
        (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "DS 将数据集划分为几个互不相交的子集",
                "disjoint and complete only where p divides n: "
                + "; ".join(say(r) for r in uneven)
                + " (drop_last=False pads by repeating samples, drop_last=True drops n mod p)",
            ),
        ),
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


def setup_problems(facts: dict, world: int) -> list[str]:
    """What one rank saw (`cases.dist_worker.setup_facts`) that the notes' set-up recipe says should
    not happen; empty when every step did what they say."""
    problems = []
    if not facts["initialized"] or facts["initialized_after_destroy"]:
        problems.append("destroy_process_group left it initialized (or init never happened)")
    if not facts["seeded_init_identical"]:
        problems.append("the same seed on every rank gave different initial weights")
    if not (facts["after_ddp_identical"] and facts["after_ddp_equals_rank0"]):
        problems.append("DDP did not broadcast rank 0's weights")
    if facts["subgroup_sum"] != facts["subgroup_expected"]:
        problems.append(
            f"new_group all_reduce summed {facts['subgroup_sum']}, expected {facts['subgroup_expected']}"
        )
    if not facts["reload_equal"]:
        problems.append("rank 0's module.state_dict() did not reload into a plain model")
    keys = facts["ddp_state_dict_keys"]
    if not all(k.startswith("module.") for k in keys) or facts["wrapped_state_dict_loads"]:
        problems.append(f"the DDP wrapper's state_dict keys {keys} loaded into a plain model")
    if world > 1 and facts["unseeded_init_identical"]:
        problems.append("different seeds gave identical weights (the broadcast check sees nothing)")
    return [f"rank {facts['rank']}: {p}" for p in problems]


def judge_torchrun_env(rows: list[dict], world: int) -> Finding:
    """torchrun + env:// : the set-up facts on every rank, and the rank's place in the environment."""
    ranks = [r["rank"] for r in rows]
    assert ranks == list(range(world)), f"rank files for ranks {ranks}, launched {world}"  # the launch
    problems = [p for r in rows for p in setup_problems(r, world)]
    problems += [
        f"rank {r['rank']}: environment {r['env']}"
        for r in rows
        if r["env"]["LOCAL_RANK"] != str(r["rank"]) or r["env"]["WORLD_SIZE"] != str(world)
    ]
    if problems:
        return Finding(Verdict.FAILS, "torchrun + init_process_group(env://): " + "; ".join(problems))
    return Finding(
        Verdict.HOLDS,
        "torchrun + init_process_group(env://): RANK/LOCAL_RANK/WORLD_SIZE from the environment; "
        "common seed → identical weights (and DDP broadcasts rank 0's anyway); new_group sums "
        f"{rows[1 % world]['subgroup_sum']:g} in the odd group; rank 0 saves module.state_dict() "
        "and it reloads into a plain model (the wrapper's keys are 'module.*' and fail: "
        f"{rows[0].get('wrapped_state_dict_error', '')[:80]}); destroy_process_group → "
        "is_initialized() False",
    )


def judge_spawn(rows: list[dict], slip: dict, world: int) -> Finding:
    """mp.spawn + tcp:// : the set-up facts on every rank, and what the notes' line
    `mp.spawn(main, args=(world_size),nprocs=wold_size)` (004) does: `slip` holds the type of
    `(world_size)`, whether spawning with it raised, and what the verbatim line raised."""
    assert len(rows) == world, f"{len(rows)} rank files, spawned {world}"  # the launch
    problems = [p for r in rows for p in setup_problems(r, world)]
    errata = ()
    if slip.get("nprocs_error"):
        errata += (
            Erratum(
                ErratumKind.TYPO,
                "mp.spawn(main, args=(world_size),nprocs=wold_size)",
                f"as written the line raises {slip['nprocs_error']!r} before anything is spawned",
            ),
        )
    if slip["args_type"] != "tuple" and slip["raised"]:
        errata += (
            Erratum(
                ErratumKind.TYPO,
                "args=(world_size)",
                f"passes args={slip['args']} ({slip['args_type']}, not a tuple); the spawned process dies "
                f"with {slip['error']!r}; args=(world_size,) is the tuple",
            ),
        )
    if problems:
        return Finding(Verdict.FAILS, "mp.spawn + tcp://: " + "; ".join(problems), errata)
    return Finding(
        Verdict.HOLDS,
        f"mp.spawn with args=(world_size,) and tcp:// init: all {world} ranks set up as the notes describe "
        "(sub-groups, rank-0 save, identical start)",
        errata,
    )


def judge_notes_launch(rows: list[dict], output: str, world: int) -> Finding:
    """The notes' `python -m torch.distributed.launch` + `add_argument("--local_rank")`: what the
    ranks' parsers saw (`cases.dist_launch_worker`) and whether launch (its `output`) warned."""
    assert len(rows) == world, f"{len(rows)} rank files, launched {world}"  # the launch
    lost = [r for r in rows if not (r["fixed_local_rank"] == r["env_local_rank"] == r["rank"])]
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
    if lost:
        where = ", ".join(
            f"rank {r['rank']}: argument {r['fixed_local_rank']}, LOCAL_RANK {r['env_local_rank']}"
            for r in lost
        )
        return Finding(
            Verdict.FAILS, f"the local rank does not name each rank ({where}); " + evidence, errata
        )
    return Finding(Verdict.HOLDS, "LOCAL_RANK from the environment names each rank; " + evidence, errata)


def launched_torchrun_env(runs: Runs, device: str, world: int, out_dir) -> LaunchRecord:
    run = runs.setup(device, world, out_dir).require_ok("setup")
    return LaunchRecord("torchrun_env", judge_torchrun_env(run.results("setup"), world))


def launched_spawn(runs: Runs, device: str, world: int, out_dir) -> LaunchRecord:
    run = runs.spawn(device, world, out_dir).require_ok("mp.spawn")
    return LaunchRecord(
        "spawn_args_int", judge_spawn(run.results("spawn-"), run.results("spawn_slip")[0], world)
    )


def launched_notes_launch(runs: Runs, world: int, out_dir) -> LaunchRecord:
    """The notes' `python -m torch.distributed.launch` + `parser.add_argument("--local_rank")`."""
    run = runs.notes_launch(world, out_dir).require_ok("torch.distributed.launch")
    finding = judge_notes_launch(run.results("notes_launch"), run.output, world)
    return LaunchRecord("notes_local_rank", finding)


def check_torchrun_omp_threads(device):
    """Notes 003 quote torch 1.6's launch.py: it sets OMP_NUM_THREADS=1 for every process when
    nproc_per_node > 1 and the variable is not set. Asked of torchrun here: two launches at once
    (2 processes and 1), from a parent environment without OMP_NUM_THREADS (the suite's own
    launches set it to 1, so `env -u` takes it out), each rank reporting its environment."""
    import shutil
    import tempfile
    from pathlib import Path

    from harness.run import launch

    root = Path(tempfile.mkdtemp(prefix="omp-threads-"))
    try:
        commands, outs = [], {}
        for nproc in (2, 1):
            outs[nproc] = root / f"nproc{nproc}"
            outs[nproc].mkdir()
            port = launch.free_port()
            cmd = launch.torchrun_command(
                "cases.dist_launch_worker",
                ["--out", str(outs[nproc])],
                nproc=nproc,
                port=port,
                log_dir=root / "torchelastic",
                rdzv_id=f"omp-{port}",
            )
            commands.append(["env", "-u", "OMP_NUM_THREADS", *cmd])
        run = launch.run(commands, out_dir=root, timeout_s=120.0)
        assert run.ok, f"torchrun launches: {run.describe()}"
        seen = {
            nproc: [json.loads(f.read_text())["omp_num_threads"] for f in sorted(out.glob("*.json"))]
            for nproc, out in outs.items()
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert [len(seen[2]), len(seen[1])] == [2, 1], f"rank files: {seen}"
    return judge_torchrun_omp(seen[2], seen[1], torch.__version__)


def judge_torchrun_omp(two: list[str | None], one: list[str | None], version: str) -> Finding:
    """What each rank of a 2-process and a 1-process torchrun saw in OMP_NUM_THREADS (None: unset),
    the parent having none. The variable is the launcher's doing, not the set-up technique's: no
    verdict; the notes' statement is an erratum only where torchrun no longer does it."""
    evidence = (
        f"torch {version}: with OMP_NUM_THREADS unset in the parent, torchrun --nproc-per-node=2 gives "
        f"its ranks OMP_NUM_THREADS={two}, --nproc-per-node=1 gives {one}"
    )
    if all(v == "1" for v in two):
        return Finding(None, evidence + ": torchrun keeps launch.py's rule (1 thread per process when > 1)")
    return Finding(
        None,
        evidence,
        (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "if 'OMP_NUM_THREADS' not in os.environ and args.nproc_per_node > 1: "
                'current_env["OMP_NUM_THREADS"] = str(1)',
                f"the installed launcher does not: {evidence}",
            ),
        ),
    )


NOTES_LINES = {
    # 000/001 流程 step 6
    "使用 destory_process_group() 销毁进程组": "import torch.distributed as dist\ndist.destory_process_group",
    # 004, the torchrun version of ddp_setup
    'gpu_id = init(os.environ["LOCAL_RANK"])': 'import os\ngpu_id = init(os.environ.get("LOCAL_RANK", "0"))',
}


def check_notes_lines(device):
    """Two set-up lines of the notes run as written (no process group needed: both fail, or not,
    before one would be used)."""
    errors = {}
    for quote, source in NOTES_LINES.items():
        try:
            exec(compile(source, "<notes>", "exec"), {})
            errors[quote] = ""
        except (AttributeError, NameError) as exc:
            errors[quote] = f"{type(exc).__name__}: {exc}"
    return judge_notes_lines(errors)


def judge_notes_lines(errors: dict[str, str]) -> Finding:
    """A line that does not run as written (a misspelt name) is a typo of the notes; no verdict:
    the set-up itself is judged by the launches."""
    fixes = {"destory": "destroy_process_group", "init(": "int(os.environ['LOCAL_RANK'])"}
    errata = tuple(
        Erratum(
            ErratumKind.TYPO,
            quote,
            error + "".join(f"; meant {fix}" for key, fix in fixes.items() if key in quote),
        )
        for quote, error in errors.items()
        if error
    )
    return Finding(None, "; ".join(f"{q} → {e or 'runs'}" for q, e in errors.items()), errata)


SETUP = Case(
    id="dist.setup",
    tier=3,
    claim="init_process_group (env:// or tcp://) first; mp.spawn(main, args=(world_size), ...) or "
    "torch.distributed.launch with a --local_rank argument; new_group for sub-groups; seed every rank "
    "alike; save model.module.state_dict() on rank 0 only; destroy_process_group at the end.",
    source="000/001 Multi-GPU, 003 多GPU并行训练, 004 DDP",
    claims=(
        Claim(
            "process_group_steps",
            "在使用 distributed 包的任何其他函数之前，需要使用 ini"
            "t_process_group 初始化进程组 … 如果需要进行小组内集体"
            "通信，用 new_group 创建子分组 … 保存时，只需要保"
            "存一个线程中的模型 (一般为 rank 0) … 销毁进程组",
            "000",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "mp_spawn",
            "mp.spawn(fn, args=(world_size,), nprocs=world_size, "
            "join=True); dist.init_process_group(backend='nccl', "
            "init_method=args.init_method, rank=args.rank, world_size=args.word_size)",
            "000",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "local_rank",
            "local_rank : 每个进程内 GPU 编号, 由 torch.distributed.launch 决定; "
            'parser.add_argument("--local_rank", type=int)',
            "000",
            ClaimKind.BEHAVIOUR,
        ),
    ),
    # The launched points (suite/test_distributed.py): the name their finding records under, and the
    # point's own name (recorded where the launch failed or was skipped).
    launched={
        "torchrun_env": "process_group_steps",
        "test_setup_torchrun-torchrun_env-w2-cpu": "process_group_steps",
        "spawn_args_int": "mp_spawn",
        "test_setup_spawn-mp_spawn_tcp-w2-cpu": "mp_spawn",
        "notes_local_rank": "local_rank",
        "test_notes_launch_local_rank-notes_local_rank-w2-cpu": "local_rank",
    },
    checks={
        "launch_deprecated": Check(check_launch_deprecated),
        "torchrun_omp_threads": Check(check_torchrun_omp_threads, devices=("cpu",)),
        "notes_lines": Check(check_notes_lines, devices=("cpu",)),
    },
    requires=("distributed",),
    verdict=FromFindings(),
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
            "the sampler process, DS 将数据集划分为几个互不相交的子集 [where the world size divides the "
            "dataset's length]",
            "000",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "loader_with_sampler",
            "change the dataloader with distributed sampler and shuffle to false",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
    ),
    checks={
        "partition": Check(check_partition, devices=("cpu",), claim="disjoint_subsets"),
        # The notes never call set_epoch: what it does is context.
        "set_epoch": Check(check_set_epoch, devices=("cpu",)),
        "notes_loader": Check(check_notes_loader, devices=("cpu",), claim="loader_with_sampler"),
    },
    requires=("distributed",),
    verdict=FromFindings(),
)
