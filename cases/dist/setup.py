"""`dist.setup` (notes 000/001 "Multi-GPU", 003 "多GPU并行训练", 004 "DDP"): process-group set-up.

The set-up facts that need several processes (a call before init, env:// under torchrun, tcp://
under mp.spawn, new_group, DDP's initial broadcast, rank-0 save and reload, destroy_process_group)
are observed by `cases._launch.dist_worker`, and the notes' `--local_rank` parser under their launcher by
`cases._launch.dist_launch_worker`, both launched through `cases._launch.dist_launches` (`launched_*`, for
`suite/test_distributed.py`) and judged here (`judge_*`, from the ranks' JSON). What one process
can show is checked here: 004's `mp.spawn(main, args=(world_size), ...)` (it spawns its own),
000's TCP parser into init_process_group, the notes' lines as written.
"""

from __future__ import annotations

import contextlib
import io
import json
import warnings

import torch

from notes.deprecation import is_deprecation
from cases._launch.dist_launches import LaunchRecord, Runs
from cases.spec import Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict
from harness.contract.rules import FromFindings


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
    deprecations = [w for w in caught if is_deprecation(w.category, str(w.message))]
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
                "python -m torch.distributed.launch --nproc_per_node=2 --nnodes=3 --node_rank=0 "
                '--master_addr="192.168.1.201" --master_port=23456 env_init.py',
                f"warns {warning}; torchrun takes the same options and sets LOCAL_RANK in the "
                "environment instead of passing --local_rank",
                file="000",
            ),
        ),
    )


# ---- judging the launched runs (the ranks' JSON, one dict per rank) ---------------------------------


def setup_problems(facts: dict, world: int) -> list[str]:
    """What one rank saw (`cases._launch.dist_worker.setup_facts`) that the notes' set-up recipe says should
    not happen; empty when every step did what they say."""
    problems = []
    if facts.get("before_init_error") == "":
        problems.append("a distributed call before init_process_group ran without an error")
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
    before = rows[0].get("before_init_error")
    return Finding(
        Verdict.HOLDS,
        (f"before init_process_group, dist.get_world_size() raises {before[:90]!r}; " if before else "")
        + "torchrun + init_process_group(env://): RANK/LOCAL_RANK/WORLD_SIZE from the environment; "
        "common seed → identical weights (and DDP broadcasts rank 0's anyway); new_group sums "
        f"{rows[1 % world]['subgroup_sum']:g} in the odd group; rank 0 saves module.state_dict() "
        "and it reloads into a plain model (the wrapper's keys are 'module.*' and fail: "
        f"{rows[0].get('wrapped_state_dict_error', '')[:80]}); destroy_process_group → "
        "is_initialized() False",
    )


def judge_spawn(rows: list[dict], world: int) -> Finding:
    """000's `mp.spawn(fn, args=(world_size,), nprocs=world_size, join=True)`: each spawned process
    runs fn(rank, world_size) and sets up one group (tcp:// init here); the set-up facts on every
    rank decide."""
    assert len(rows) == world, f"{len(rows)} rank files, spawned {world}"  # the launch
    problems = [p for r in rows for p in setup_problems(r, world)]
    if problems:
        return Finding(Verdict.FAILS, "mp.spawn + tcp://: " + "; ".join(problems))
    return Finding(
        Verdict.HOLDS,
        f"mp.spawn(fn, args=(world_size,), nprocs={world}, join=True) with tcp:// init: every rank got "
        "its rank first and world_size after it and set up as the notes describe (sub-groups, "
        "rank-0 save, identical start, destroy)",
    )


def judge_notes_launch(rows: list[dict], output: str, world: int) -> Finding:
    """The notes (000 "ENV 初始化"): `parser.add_argument("--local_rank", type=int)` must be there
    because `torch.distributed.launch` passes that argument. Holds where the notes' parser, as
    written, parses what the launcher hands every rank and reads that rank's local rank; fails
    where it exits (the launcher passes another spelling) or reads none."""
    assert len(rows) == world, f"{len(rows)} rank files, launched {world}"  # the launch
    broken = [r for r in rows if not r["notes_parser"]["ok"]]
    wrong = [
        r
        for r in rows
        if r["notes_parser"]["ok"] and r["notes_parser"].get("local_rank") != r["env_local_rank"]
    ]
    env_names = all(r["env_local_rank"] == r["rank"] for r in rows)
    fixed_reads = all(r["fixed_local_rank"] == r["env_local_rank"] for r in rows)
    deprecated = "deprecated" in output
    advice = (
        "; LOCAL_RANK from the environment names every rank"
        if env_names
        else "; LOCAL_RANK from the environment does NOT name every rank"
    ) + (
        ", and a parser taking both spellings (--local-rank, --local_rank) reads it too"
        if fixed_reads
        else ""
    )
    advice += "; launch " + (
        "prints a FutureWarning: deprecated, use torchrun, which passes no argument at all: read "
        "int(os.environ['LOCAL_RANK'])"
        if deprecated
        else "gave no deprecation warning"
    )
    if broken:
        return Finding(
            Verdict.FAILS,
            f"torch {torch.__version__}: torch.distributed.launch passes {rows[0]['argv'][0]!r}; the "
            f'notes\' add_argument("--local_rank", type=int) exits with '
            f"{broken[0]['notes_parser']['error']!r} on {len(broken)} of {world} ranks" + advice,
        )
    if wrong:
        where = ", ".join(
            f"rank {r['rank']}: parsed {r['notes_parser'].get('local_rank')}, "
            f"LOCAL_RANK {r['env_local_rank']}"
            for r in wrong
        )
        return Finding(
            Verdict.FAILS,
            f"the notes' --local_rank parser runs but does not read each rank's local rank ({where}); "
            f"launch passes {rows[0]['argv']}" + advice,
        )
    return Finding(
        Verdict.HOLDS,
        f"the notes' --local_rank parser parses launch's arguments ({rows[0]['argv']}) and reads each "
        "rank's local rank" + advice,
    )


def launched_torchrun_env(runs: Runs, device: str, world: int, out_dir) -> LaunchRecord:
    run = runs.setup(device, world, out_dir).require_ok("setup")
    return LaunchRecord("torchrun_env", judge_torchrun_env(run.results("setup"), world))


def launched_spawn(runs: Runs, device: str, world: int, out_dir) -> LaunchRecord:
    run = runs.spawn(device, world, out_dir).require_ok("mp.spawn")
    return LaunchRecord("spawn_tcp", judge_spawn(run.results("spawn-"), world))


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
                "cases._launch.dist_launch_worker",
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
    the parent having none. Context, deciding nothing and listing no erratum: 003 shows torch 1.6's
    own launch.py (an excerpt of torch's source, labelled as such), not a statement of theirs about
    today's launcher; this says whether torchrun still follows that rule."""
    evidence = (
        f"torch {version}: with OMP_NUM_THREADS unset in the parent, torchrun --nproc-per-node=2 gives "
        f"its ranks OMP_NUM_THREADS={two}, --nproc-per-node=1 gives {one}"
    )
    if all(v == "1" for v in two):
        return Finding(
            None, evidence + ": torchrun keeps torch 1.6 launch.py's rule (1 thread per process when > 1)"
        )
    return Finding(None, evidence + ": torchrun no longer follows torch 1.6 launch.py's rule")


NOTES_LINES = {
    # 000/001 流程 step 6 (prose, so no snippet reading sees it; 004's `init(` is the snippets' erratum)
    "使用 destory_process_group() 销毁进程组": "import torch.distributed as dist\ndist.destory_process_group",
    # 000/001 "Multi-GPU": the heading names the package its set-up code then uses as `dist`
    "1. pytorch.nn.distributed": "import torch.nn.distributed",
}


def check_notes_lines(device):
    """Two set-up lines of the notes run as written (no process group needed: both fail, or not,
    before one would be used)."""
    errors = {}
    for quote, source in NOTES_LINES.items():
        try:
            exec(compile(source, "<notes>", "exec"), {})
            errors[quote] = ""
        except (AttributeError, NameError, ImportError) as exc:
            errors[quote] = f"{type(exc).__name__}: {exc}"
    return judge_notes_lines(errors)


def judge_notes_lines(errors: dict[str, str]) -> Finding:
    """A line that does not run as written (a misspelt name) is a typo of the notes; no verdict:
    the set-up itself is judged by the launches."""
    fixes = {"destory": "destroy_process_group", "nn.distributed": "torch.distributed"}
    errata = tuple(
        Erratum(
            ErratumKind.TYPO,
            quote,
            error + "".join(f"; meant {fix}" for key, fix in fixes.items() if key in quote),
            file="000",  # 001 repeats 000's Multi-GPU section word for word
        )
        for quote, error in errors.items()
        if error
    )
    return Finding(None, "; ".join(f"{q} → {e or 'runs'}" for q, e in errors.items()), errata)


# ---- the notes' TCP recipe (000 "TCP 初始化") and 004's mp.spawn line --------------------------------


def notes_tcp_args(argv: list[str], typed: bool = False):
    """000's parser, as written (`typed`: with type=int added to --rank and --word_size)."""
    import argparse

    kw = {"type": int} if typed else {}
    parser = argparse.ArgumentParser(description="PyTorch distributed training on cifar-10")
    parser.add_argument("--rank", default=0, help="rank of current process", **kw)
    parser.add_argument("--word_size", default=2, help="word size", **kw)
    parser.add_argument("--init_method", default="tcp://127.0.0.1:23456", help="init-method")
    return parser.parse_args(argv)


def _try_init(backend: str, args) -> str:
    """init_process_group as the notes call it; the error's last line, or "" (then destroyed).
    The timeout only bounds the wait of a rank whose master never comes (10 s: the rendezvous
    of one process on loopback takes milliseconds)."""
    import datetime

    import torch.distributed as dist

    assert not dist.is_initialized(), "a process group is already initialized in this process"
    try:
        dist.init_process_group(
            backend=backend,
            init_method=args.init_method,
            rank=args.rank,
            world_size=args.word_size,
            timeout=datetime.timedelta(seconds=10),
        )
    except (RuntimeError, ValueError, TypeError) as exc:
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
    dist.destroy_process_group()
    return ""


def check_tcp_init(device):
    """000's TCP recipe: every host runs the script with its own --rank. The second host's command
    line through the notes' parser into their init_process_group call (backend='nccl' as written:
    the arguments are checked before any backend is made); then the same with type=int, at world
    size 1 (one process can show the call going through; the second host would wait for the first)."""
    from harness.run import launch

    init = f"tcp://127.0.0.1:{launch.free_port()}"
    notes = notes_tcp_args(["--rank", "1", "--init_method", init])
    notes_error = _try_init("nccl", notes)
    fixed = notes_tcp_args(
        ["--rank", "0", "--word_size", "1", "--init_method", f"tcp://127.0.0.1:{launch.free_port()}"],
        typed=True,
    )
    return judge_tcp_init(repr(notes.rank), repr(notes.word_size), notes_error, _try_init("gloo", fixed))


def judge_tcp_init(rank: str, world: str, notes_error: str, typed_error: str) -> Finding:
    """The notes: run the script on every host with its rank, and init_process_group joins the
    process to the group at init_method. Fails where their call rejects what their parser made of
    `--rank 1` (a string: no type=int); holds where it takes it (an error that is only the
    10-second wait for a master that never comes means the arguments were accepted)."""
    rejected = bool(notes_error) and "Timed out" not in notes_error and "timeout" not in notes_error.lower()
    fix = (
        "with type=int the same call joins a group (shown at world size 1)"
        if not typed_error
        else f"with type=int it still raises {typed_error[:120]}"
    )
    if rejected:
        return Finding(
            Verdict.FAILS,
            f"the notes' parser has no type: `--rank 1` gives rank={rank} (world_size={world} only while "
            f"--word_size is left at its default); init_process_group raises {notes_error[:120]}, so "
            f"every host but the master (rank 0, the default) fails; {fix}: add type=int",
        )
    return Finding(
        Verdict.HOLDS,
        f"`--rank 1` gives rank={rank}, and init_process_group takes it"
        + (f" (then {notes_error[:80]}: no master in this check)" if notes_error else "")
        + f"; {fix}",
    )


def check_spawn_args(device):
    """004: `mp.spawn(main, args=(world_size),nprocs=wold_size)` with its misspelt `wold_size`
    read as world_size (that NameError is the snippets' erratum), against 000's args=(world_size,).
    `main(rank, world_size)` is 004's signature; it checks what it was handed."""
    import tempfile
    from pathlib import Path

    import torch.multiprocessing as mp

    from cases._launch import dist_worker

    world_size = 2
    errors = {}
    with tempfile.TemporaryDirectory() as tmp, dist_worker.temp_files_in(Path(tmp)):
        for name, args in (("notes", (world_size)), ("tuple", (world_size,))):
            try:
                mp.spawn(dist_worker.notes_main, args=args, nprocs=world_size, join=True)
                errors[name] = ""
            except (mp.ProcessRaisedException, mp.ProcessExitedException) as exc:
                errors[name] = str(exc).strip().splitlines()[-1]
    # 000's form failing too would be this check's harness, not the notes' line.
    assert not errors["tuple"], f"mp.spawn with args=(world_size,) failed here: {errors['tuple']}"
    return judge_spawn_args(type((world_size)).__name__, errors["notes"], world_size)


def judge_spawn_args(args_type: str, notes_error: str, world: int) -> Finding:
    """The notes' line starts world_size processes running main(rank, world_size): holds where
    every spawned main got them, fails where they died (000's args=(world_size,), run beside it,
    gets them: the check asserts so)."""
    fix = f"with args=(world_size,) (000's form) all {world} run main(rank, {world}): write the comma"
    if notes_error:
        return Finding(
            Verdict.FAILS,
            f"args=(world_size) is an {args_type}, not a tuple: the spawned processes die before main "
            f"runs ({notes_error[:120]!r}; each rank's error: mp.spawn calls fn(i, *args), and * of an "
            f"int raises TypeError); {fix}",
        )
    return Finding(Verdict.HOLDS, f"args=(world_size) ({args_type}): all {world} processes ran main; {fix}")


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
            reading="a distributed call before init_process_group raises; after it (env:// under "
            "torchrun), new_group sub-groups reduce within themselves, the module's state_dict saved by "
            "rank 0 alone reloads on every rank, and destroy_process_group leaves no group",
        ),
        Claim(
            "mp_spawn",
            "mp.spawn(fn, args=(world_size,), nprocs=world_size, join=True)",
            "000",
            ClaimKind.BEHAVIOUR,
            reading="mp.spawn starts world_size processes, each running fn(rank, world_size), which "
            "set up one process group (tcp:// init in the launched check)",
        ),
        Claim(
            "spawn_args",
            "mp.spawn(main, args=(world_size),nprocs=wold_size) … # given a function and spawn to all "
            "the process,注意不需要提供rank",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="this line (wold_size read as world_size, its typo) starts world_size processes "
            "running main(rank, world_size)",
        ),
        Claim(
            "tcp_init",
            "parser.add_argument('--rank', default=0, help='rank of current process') … "
            "# 初始化组中第rank个进程, icp 方法下所有 ip:port 必须与主进程保持一致 … "
            "dist.init_process_group(backend='nccl', init_method=args.init_method, rank=args.rank, "
            "world_size=args.word_size)",
            "000",
            ClaimKind.BEHAVIOUR,
            reading="each host runs the script with its own --rank, and the notes' init_process_group "
            "call joins it to the group at init_method",
        ),
        Claim(
            "local_rank",
            "local_rank : 每个进程内 GPU 编号, 由 torch.distributed.launch 决定 … "
            "# 注意这个参数，必须要以这种形式指定，即使代码中不使用。因为 launch 工具默认传递该参数 … "
            'parser.add_argument("--local_rank", type=int)',
            "000",
            ClaimKind.BEHAVIOUR,
            reading="under python -m torch.distributed.launch, the notes' parser as written parses the "
            "argument the launcher passes and reads each rank's local rank from it",
        ),
    ),
    # The launched points (suite/test_distributed.py): the name their finding records under, and the
    # point's own name (recorded where the launch failed or was skipped).
    launched={
        "torchrun_env": "process_group_steps",
        "test_setup_torchrun-torchrun_env-w2-cpu": "process_group_steps",
        "spawn_tcp": "mp_spawn",
        "test_setup_spawn-mp_spawn_tcp-w2-cpu": "mp_spawn",
        "notes_local_rank": "local_rank",
        "test_notes_launch_local_rank-notes_local_rank-w2-cpu": "local_rank",
    },
    checks={
        "launch_deprecated": Check(check_launch_deprecated),
        "torchrun_omp_threads": Check(check_torchrun_omp_threads, devices=("cpu",)),
        "notes_lines": Check(check_notes_lines, devices=("cpu",)),
        "tcp_init": Check(check_tcp_init, devices=("cpu",), claim="tcp_init"),
        "spawn_args": Check(check_spawn_args, devices=("cpu",), claim="spawn_args"),
    },
    requires=("distributed",),
    verdict=FromFindings(),
)
