"""The GPU headline: one full-profile size per timed comparison, large enough to fill an H100/H200,
where the GPU verdicts are read.

The quick profile's sizes are a 2-core CPU's: on an H200 an fp32 GEMM at 512 is ~5 µs of GPU work
against ~10 µs of host time a call, so both sides of `precision.tf32` run at the host's pace and
"TF32 is faster" reads ≈ 1× (fails) where do_bench gives 7.2× at 4096. So a GPU run's verdicts
come from these points: the size of each comparison whose fast side is ~0.2 ms or more on the
first H100 run (reports/reference/h100-2026-11-23/points.csv) and whose slow side keeps 20 paired
rounds within seconds. A comparison whose fast side is host-bound even here says so in the report
(reports.summary: `host_bound`, from each side's CUDA-graph replay).

``python -m plan.headline`` prints the pytest ``-k`` expression that selects them (with
``--profile full``: `.ci/gpu-reference`'s headline step); ``--check`` also says which entry
selects no pair of the full profile. Plain Python.
"""

from __future__ import annotations

import argparse
import sys

# case ID → the words of its pair IDs that pick the size (and, where a case's pairs differ by
# minutes, the pairs), all of them: a pair's ID is `<case>-<fast>-vs-<slow>-<size label>-<dtype>-<device>`.
HEADLINE: dict[str, str | tuple[str, ...]] = {
    "distance.pairwise": "n4096-m4096-d256",  # matmul 0.34 ms on the H100 (fp32), broadcast ~27 ms
    "precision.tf32": "n4096",  # the matmuls (IEEE 2.8 ms, TF32 0.48 ms) and the conv
    "precision.amp": "width4096-batch64",
    "attention.masked": "s4096-b2-h16-d64",  # SDPA 0.65-5.2 ms, the math path 11-13 ms
    # Activations dominate (2 GiB a layer's input at depth 16): the MLP's pairs, 0.14 s a call of
    # the plain one; the transformer's two pairs would add ~2 min.
    "memory.checkpoint": ("mlp", "depth16-width2048-batch8192"),
    "layernorm.manual": "rows65536-d4096",
    "layout.contiguous": "n16384",  # its own pair (0.75 ms) and each part's at n = 16384
    "loss.cross_entropy": "n4096-c32768",
    "conv.im2col": "h256-b32-c64-o128-k3",
    "conv.transposed": "h128-b32-c64-o64-k4",
    "conv.dilated": "d8-h128-b32-c64-o64-k3",
    "rnn.timestep_loop": "t1024-b64-h1024-o1024",
    "rnn.hidden_detach": "steps16-b64-h512-i64",  # retain_graph 0.1 s a call here, 4.9 s at 128 steps
    "onehot.encode": "b65536-c10000",
    "sparse.storage": "density_permille10",
    "clip.grad_norm": "p4096-total67108864",
    "broadcast.outer": "einsum-vs-broadcast-s64-r256-c32",  # the loop takes 3.5 s a call here
    "jit.script_trace": "t256-b256-h1024",
}


def _words(words: str | tuple[str, ...]) -> tuple[str, ...]:
    return (words,) if isinstance(words, str) else tuple(words)


def keyword(headline=HEADLINE) -> str:
    """The ``-k`` expression: each case with its words (pytest's -k matches words inside node IDs)."""
    return " or ".join(f"({' and '.join((case, *_words(words)))})" for case, words in headline.items())


def selects(pair_id: str, headline=HEADLINE) -> bool:
    """Whether the expression selects the pair `pair_id` (as -k does its test_pair)."""
    return any(
        pair_id.startswith(case + "-") and all(w in pair_id for w in _words(words))
        for case, words in headline.items()
    )


def unmatched(pair_ids, headline=HEADLINE) -> list[str]:
    """The entries of `headline` that select none of `pair_ids` (a size the profile lost, a renamed
    variant): each would drop a comparison from the GPU verdicts without a word."""
    return [
        case for case, words in headline.items() if not any(selects(pid, {case: words}) for pid in pair_ids)
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="print the -k expression of the GPU headline points")
    parser.add_argument("--check", action="store_true", help="fail naming entries that select no pair")
    args = parser.parse_args(argv)
    if args.check:
        from plan.expand import pair_points  # imports the cases (and torch): only when asked

        missing = unmatched([p.id for p in pair_points("full", ["cuda"])])
        if missing:
            print(f"plan.headline: no full-profile CUDA pair for {', '.join(missing)}", file=sys.stderr)
            return 1
    print(keyword())
    return 0


if __name__ == "__main__":
    sys.exit(main())
