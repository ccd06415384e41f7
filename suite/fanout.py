"""Fan a run out over N shards with submitit, wait, merge:

    python -m suite.fanout --executor slurm --shards 8 --partition gpu -- --profile full -m gpu
    python -m suite.fanout --executor local --shards 2 -- -k "shape.ops or onehot.encode"

One job per shard (``pytest suite --shard K/N``, a submitit job array on Slurm), the manifest
written first (python -m suite.manifest), each shard's results in ``--out`` as
``shard-K-of-N-attemptA.json``; a shard that died or was cut short (no results, or ``partial``) is
submitted again as the next attempt, up to ``--retries`` times; then
``python -m reports merge --manifest`` puts them together into ``--out``/merged.json, refusing
(exit 3) what does not make one run. ``local`` is submitit's LocalExecutor: the same path, on this
machine, ``--parallel`` shards at a time (default 1: shards beside each other on one machine time
each other's contention).

Nothing here schedules or transports: submitit submits and waits, Slurm (or the local executor)
runs, the shared file system carries the files. Needs the ``fanout`` extra (pip install
'torch-technique-suite[fanout]').

Exit status: 0 merged and every shard's tests passed; 1 merged, some test failed (as pytest's 1);
3 the merge refused (each problem named); 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_shard(k: int, n: int, attempt: int, pytest_args: list[str], out_dir: str, group: str) -> dict:
    """The job: one shard's pytest run in the repository (on the node: the shared file system)."""
    path = Path(out_dir) / f"shard-{k}-of-{n}-attempt{attempt}.json"
    env = {**os.environ, "SUITE_ATTEMPT": str(attempt), "SUITE_SHARD_GROUP": group}
    log = Path(out_dir) / f"shard-{k}-of-{n}-attempt{attempt}.log"
    start = time.perf_counter()
    with open(log, "w") as out:
        code = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "suite",
                "-p",
                "no:cacheprovider",
                "--shard",
                f"{k}/{n}",
                "--results",
                str(path),
                "--no-history",
                *pytest_args,
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        ).returncode
    return {
        "k": k,
        "attempt": attempt,
        "code": code,
        "path": str(path),
        "seconds": time.perf_counter() - start,
    }


def _complete(path: Path) -> bool:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return not (doc.get("suite") or {}).get("partial")


def executor_for(args, folder: Path):
    import submitit

    executor = submitit.AutoExecutor(folder=folder, cluster=args.executor)
    params = {"timeout_min": args.timeout_min, "name": "suite-shard"}
    if args.executor == "slurm":
        params["slurm_array_parallelism"] = args.parallel or args.shards
        if args.partition:
            params["slurm_partition"] = args.partition
        if args.gpus_per_node is not None:
            params["gpus_per_node"] = args.gpus_per_node
        if args.cpus_per_task is not None:
            params["cpus_per_task"] = args.cpus_per_task
        for extra in args.slurm_extra:
            key, _, value = extra.partition("=")
            params.setdefault("slurm_additional_parameters", {})[key] = value
    executor.update_parameters(**params)
    return executor


def submit(
    executor, shards: list[tuple[int, int]], args, pytest_args, out_dir: Path, group: str
) -> list[dict]:
    """Each (K, attempt) as one job: a job array of all of them on Slurm (its parallelism capped by
    --parallel), batches of --parallel on the local executor; waits for every one."""
    step = len(shards) if args.executor == "slurm" else (args.parallel or 1)
    done = []
    for i in range(0, len(shards), step):
        batch = shards[i : i + step]
        jobs = executor.map_array(
            run_shard,
            [k for k, _ in batch],
            [args.shards] * len(batch),
            [a for _, a in batch],
            [pytest_args] * len(batch),
            [str(out_dir)] * len(batch),
            [group] * len(batch),
        )
        for (k, attempt), job in zip(batch, jobs):
            try:
                done.append(job.result())
            except Exception as exc:  # the job died (killed, timed out, node lost): retried below
                first = str(exc).strip().splitlines()[-1:] or [type(exc).__name__]
                print(f"fanout: shard {k}/{args.shards} attempt {attempt}: job failed ({first[0][:200]})")
                done.append({"k": k, "attempt": attempt, "code": None, "path": "", "seconds": float("nan")})
    return done


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m suite.fanout",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--executor", choices=("slurm", "local"), required=True)
    parser.add_argument("--shards", type=int, required=True, metavar="N")
    parser.add_argument("--out", type=Path, default=Path("results") / "fanout", help="default results/fanout")
    parser.add_argument("--parallel", type=int, default=None, help="shards at a time (local default 1)")
    parser.add_argument(
        "--retries", type=int, default=1, help="new attempts of a shard that died (default 1)"
    )
    parser.add_argument("--timeout-min", type=int, default=240, help="a shard job's time limit (default 240)")
    parser.add_argument("--partition", help="Slurm partition")
    parser.add_argument("--gpus-per-node", type=int, default=None)
    parser.add_argument("--cpus-per-task", type=int, default=None)
    parser.add_argument("--slurm-extra", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--group", default="", help="the shards' group (SUITE_SHARD_GROUP), e.g. h100-torch2.13"
    )
    args, pytest_args = parser.parse_known_args(argv)
    pytest_args = [a for a in pytest_args if a != "--"]
    if args.shards < 1 or (args.parallel is not None and args.parallel < 1) or args.retries < 0:
        parser.error("--shards and --parallel take whole numbers ≥ 1, --retries ≥ 0")
    try:
        import submitit  # noqa: F401
    except ImportError:
        parser.error("submitit is not installed: pip install 'torch-technique-suite[fanout]'")
    from reports import merge
    from suite import manifest as suite_manifest

    out_dir = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    manifest = suite_manifest.build(pytest_args, args.shards)
    manifest_path = out_dir / "manifest.json"
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    empty = [k for k in range(1, args.shards + 1) if k not in set(manifest["points"].values())]
    print(
        f"fanout: manifest {manifest['manifest']}: {len(manifest['points'])} tests in {args.shards} shards "
        f"(priced s: {', '.join(f'{s:.0f}' for s in manifest['planned_s'])}) → {manifest_path}"
        + (f"; shards {empty} get no test" if empty else "")
    )
    executor = executor_for(args, out_dir / "submitit")
    todo = [(k, 1) for k in range(1, args.shards + 1) if k not in empty]
    finished: list[dict] = []
    for round_ in range(args.retries + 1):
        done = submit(executor, todo, args, pytest_args, out_dir, args.group)
        finished += done
        todo = [
            (d["k"], d["attempt"] + 1)
            for d in done
            if not (d["path"] and Path(d["path"]).is_file() and _complete(Path(d["path"])))
        ]
        for d in done:
            print(
                f"fanout: shard {d['k']}/{args.shards} attempt {d['attempt']}: pytest exit {d['code']}, "
                f"{d['seconds']:.1f} s"
            )
        if not todo or round_ == args.retries:
            break
        print(f"fanout: submitting again: {', '.join(f'shard {k} attempt {a}' for k, a in todo)}")
    paths = [Path(d["path"]) for d in finished if d["path"] and Path(d["path"]).is_file()]
    try:
        merged, notes = merge.merge(paths, manifest)
    except merge.MergeError as exc:
        for problem in exc.problems:
            print(f"fanout: merge: {problem}", file=sys.stderr)
        return 3
    except Exception as exc:  # a shard file that is not one (ResultsError)
        print(f"fanout: merge: {exc}", file=sys.stderr)
        return 3
    for note in notes:
        print(f"fanout: merge: {note}")
    out = out_dir / "merged.json"
    doc = next(iter(merged.values()))
    out.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    print(
        f"fanout: merged {len(merged[next(iter(merged))]['suite']['merged']['shards'])} shards → {out} "
        f"in {time.perf_counter() - start:.1f} s"
    )
    last = {}
    for d in finished:
        last[d["k"]] = d
    return 1 if any(d["code"] not in (0, None) for d in last.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
