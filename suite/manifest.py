"""Write the manifest of a sharded run before fanning it out:

    python -m suite.manifest --shards 4 --out results/manifest.json -- -k "shape.ops or onehot.encode"

The run's own collection (suite.collection: the pytest arguments, as `pytest suite` would take
them), dealt into N shards by the plan's cost model (plan/shards.py): each planned node ID with its
shard, the priced seconds per shard and the manifest's hash, which every shard's results record and
`python -m reports merge --manifest` checks both ways (every planned point in exactly one shard).
Collect on the kind of machine the shards run on, or name ``--device``: a run's devices default to
those present.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from plan import shards
from suite import collection


def without_shard(pytest_args) -> list[str]:
    out, skip = [], False
    for arg in pytest_args:
        if skip:
            skip = False
        elif arg == "--shard":
            skip = True
        elif not arg.startswith("--shard="):
            out.append(arg)
    return out


def build(pytest_args, n: int) -> dict:
    pytest_args = without_shard(pytest_args)
    planned = collection.collect(pytest_args)
    cap_s = 1.0
    for i, arg in enumerate(pytest_args):
        if arg == "--benchmark-max-time" and i + 1 < len(pytest_args):
            cap_s = float(pytest_args[i + 1])
        elif arg.startswith("--benchmark-max-time="):
            cap_s = float(arg.split("=", 1)[1])
    assignment = shards.assign(planned, n, cap_s=cap_s)
    return {
        "manifest": assignment.manifest,
        "n": n,
        "pytest_args": list(pytest_args),
        "planned_s": [round(s, 3) for s in assignment.seconds],
        "points": assignment.shard_of,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m suite.manifest",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--shards", type=int, default=1, metavar="N", help="how many shards (default 1)")
    parser.add_argument("--out", default="-", help="where to write the manifest JSON (default: stdout)")
    args, pytest_args = parser.parse_known_args(argv)
    if args.shards < 1:
        parser.error(f"--shards takes a whole number ≥ 1; got {args.shards}")
    pytest_args = [a for a in pytest_args if a != "--"]
    doc = build(pytest_args, args.shards)
    text = json.dumps(doc, indent=1)
    if args.out == "-":
        print(text)
    else:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n", encoding="utf-8")
        load = ", ".join(f"{s:.0f}" for s in doc["planned_s"])
        print(
            f"manifest {doc['manifest']}: {len(doc['points'])} tests in {args.shards} shards "
            f"(priced s: {load}) → {args.out}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
