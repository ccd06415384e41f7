"""plan.headline: the -k expression of the GPU headline points selects one full-profile size of each
comparison it names, and an entry that selects nothing is named (it would drop a comparison from
the GPU verdicts without a word)."""

from __future__ import annotations

import plan
from plan import headline


def test_every_entry_selects_a_full_profile_cuda_pair_and_a_size_that_fills_a_gpu():
    ids = [p.id for p in plan.pair_points("full", ["cuda"])]
    assert headline.unmatched(ids) == []
    selected = [pid for pid in ids if headline.selects(pid)]
    # The quick sizes are launch-bound on an H100 (precision.tf32 at n = 256/512): none is selected.
    quick = {p.id for p in plan.pair_points("quick", ["cuda"])}
    assert selected and not quick & set(selected), sorted(quick & set(selected))
    assert {
        "distance.pairwise-matmul-vs-broadcast-n4096-m4096-d256-float32-cuda",
        "precision.tf32-matmul.high-vs-matmul.highest-n4096-float32-cuda",
        "precision.tf32-conv.reduced-vs-conv.ieee-n4096-float32-cuda",
    } <= set(selected)


def test_an_entry_that_selects_nothing_is_named():
    ids = ["distance.pairwise-matmul-vs-broadcast-n4096-m4096-d256-float32-cuda"]
    assert headline.unmatched(ids, {"distance.pairwise": "n4096-m4096-d256", "precision.tf32": "n4096"}) == [
        "precision.tf32"
    ]
    assert headline.unmatched(ids, {"distance.pairwise": "n8192"}) == ["distance.pairwise"]


def test_the_expression_is_one_parenthesised_clause_per_case():
    k = headline.keyword({"distance.pairwise": "n4096-m4096-d256", "memory.checkpoint": ("mlp", "depth16")})
    assert k == "(distance.pairwise and n4096-m4096-d256) or (memory.checkpoint and mlp and depth16)"


def test_the_module_prints_the_expression(capsys):
    assert headline.main(["--check"]) == 0
    assert capsys.readouterr().out.strip() == headline.keyword()
