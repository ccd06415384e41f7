"""Run a function of a case module in a fresh Python process and bring back, as plain data, what
it returned or raised.

For the probes that must not run in the test process. Invalid input to a CUDA kernel ends in a
device-side assert, after which the process's CUDA context is unusable and every later CUDA test
fails with it. And a question about a machine without GPUs cannot be asked in a process that sees
one. Each child is a new interpreter (subprocess + exec, never fork: a CUDA context does not survive
fork), started through `harness.run.launch` (timeout, every process reaped, output kept). It writes its
answer before it exits and leaves with `os._exit`, so a CUDA context torn down after an assert
cannot turn an answer already recorded into a crash.

    python -m cases._launch.isolated MODULE:FUNCTION ARGS_JSON --out DIR --slot I

Not a case module (underscore: the `cases` scan skips it).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.run import launch

TIMEOUT_S = 180.0  # importing torch and creating a CUDA context take seconds; a hang is not an answer


@dataclass(frozen=True)
class Outcome:
    value: Any  # what the function returned (JSON data); None when it raised
    error: dict | None  # {"type", "bases", "message"} of what it raised, else None
    output: str  # the child's stdout and stderr: a CUDA kernel prints its failed assertion there


def run_each(
    calls: list[tuple[str, tuple]], env: dict[str, str] | None = None, timeout_s: float = TIMEOUT_S
) -> list[Outcome]:
    """One fresh process per (``"module:function"``, args) call, all started together; their
    outcomes in the same order. A child that exits without an answer is an error here."""
    with tempfile.TemporaryDirectory(prefix="isolated-") as d:
        out = Path(d)
        commands = [
            [
                sys.executable,
                "-u",
                "-m",
                __name__,
                target,
                json.dumps(list(args)),
                "--out",
                str(out),
                "--slot",
                str(i),
            ]
            for i, (target, args) in enumerate(calls)
        ]
        launched = launch.run(commands, out_dir=out, timeout_s=timeout_s, env=env)
        outcomes = []
        for i, (target, _) in enumerate(calls):
            answer = out / f"isolated{i}-rank0.json"
            if launched.timed_out or not answer.exists():
                raise RuntimeError(f"the isolated call {target} gave no answer: {launched.describe()}")
            row = json.loads(answer.read_text())
            outcomes.append(Outcome(row["value"], row["error"], launched.logs[i]))
    return outcomes


def run(target: str, *args, env: dict[str, str] | None = None, timeout_s: float = TIMEOUT_S) -> Outcome:
    return run_each([(target, args)], env=env, timeout_s=timeout_s)[0]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target", help="module:function")
    parser.add_argument("args", help="a JSON list of positional arguments")
    parser.add_argument("--out", required=True)
    parser.add_argument("--slot", type=int, default=0)
    a = parser.parse_args(argv)
    module, _, name = a.target.partition(":")
    fn = getattr(importlib.import_module(module), name)
    try:
        row = {"value": fn(*json.loads(a.args)), "error": None}
    except Exception as exc:  # what the call raised is the answer asked for, returned as data
        bases = [c.__name__ for c in type(exc).__mro__]
        row = {"value": None, "error": {"type": type(exc).__name__, "bases": bases, "message": str(exc)}}
    path = Path(a.out) / f"isolated{a.slot}-rank0.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"rank": 0, **row}))
    tmp.replace(path)  # the parent never reads half an answer
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
