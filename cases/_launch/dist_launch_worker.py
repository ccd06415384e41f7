"""One rank of `dist.setup`'s launcher checks: what the rank was handed on its command line and in
its environment, written to ``OUT/notes_launch-rank<R>.json``.

Launched two ways. Under the notes' `python -m torch.distributed.launch`
(`cases._launch.dist_launches.Runs.notes_launch`, judged by `cases.dist.setup.launched_notes_launch`),
which adds ``--local-rank=R`` to argv. Under torchrun from a parent without OMP_NUM_THREADS
(`cases.dist.setup.check_torchrun_omp_threads`), which adds no argument. Each rank tries the notes'
parser (``add_argument("--local_rank")``) as written and records whether it parsed or how it
exited, then parses with the form torch documents since 2.0 (both spellings), and records
LOCAL_RANK, LOCAL_WORLD_SIZE and OMP_NUM_THREADS as the launcher set them.

Not a case module (a `*_worker`: the `cases` scan skips it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path


def main() -> None:
    argv = sys.argv[1:]
    notes = argparse.ArgumentParser()
    notes.add_argument("--local_rank", type=int)  # verbatim from notes 000/001 "ENV 初始化"
    notes.add_argument("--out")
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            parsed = notes.parse_args(argv)
        notes_result = {"ok": True, "local_rank": parsed.local_rank}
    except SystemExit as exc:
        notes_result = {
            "ok": False,
            "exit_code": exc.code,
            "error": stderr.getvalue().strip().splitlines()[-1],
        }
    fixed = argparse.ArgumentParser()
    fixed.add_argument("--local-rank", "--local_rank", type=int)
    fixed.add_argument("--out", required=True)
    args = fixed.parse_args(argv)
    env_rank = int(os.environ["LOCAL_RANK"]) if "LOCAL_RANK" in os.environ else None
    rank = int(os.environ.get("RANK", "0"))
    result = {
        "rank": rank,
        "argv": argv,
        "notes_parser": notes_result,
        "fixed_local_rank": args.local_rank,
        "env_local_rank": env_rank,
        "local_world_size": os.environ.get("LOCAL_WORLD_SIZE"),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }
    (Path(args.out) / f"notes_launch-rank{rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    from harness.run.launch import die_with_parent

    die_with_parent()  # a rank dies with its launcher, even when the launcher is killed outright
    main()
