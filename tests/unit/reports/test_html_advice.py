"""The advice of the HTML page (reports.html.recommendation): the fastest way of the claim, never a
context pair; the sizes and where the winner flips; a memory trade in memory saved and time paid;
never two sides that ran one computation."""

from __future__ import annotations


def _advice_row(fast, slow, speedup, lo, hi, gain, against="rule", memory=1.0, x=512, identical=False):
    return dict(
        fast=fast,
        slow=slow,
        speedup=speedup,
        ci_low=lo,
        ci_high=hi,
        gain=gain,
        against=against,
        part="",
        x=x,
        x_name="s",
        device="cpu",
        dtype="float32",
        size_label=f"s{x}",
        memory_ratio=memory,
        quality="",
        identical=identical,
    )


def test_what_to_use_names_the_fastest_way_of_the_claim_and_never_a_context_pair():
    import pandas as pd

    from reports.html import recommendation

    row = _advice_row
    rows = pd.DataFrame(
        [
            row("sdpa_math", "masked_fill", 0.946, 0.934, 0.957, "too noisy to tell"),
            row("sdpa", "masked_fill", 2.08, 2.05, 2.11, "faster", memory=5.9),
        ]
    )
    use, gain, memory, _, where = recommendation(rows)
    assert use.startswith("sdpa (2.08× faster") and gain.startswith("2.08×") and memory == "5.9× less"
    assert "measured over s512" in where
    # A pair the catalogue adds for context is never advice.
    assert recommendation(rows.assign(against="context")) is None
    slower = pd.DataFrame([row("loader", "data_iter", 0.625, 0.6, 0.65, "slower", memory=0.5)])
    use, gain, memory, _, _ = recommendation(slower)
    assert use.startswith("data_iter (1.6× faster") and gain.startswith("1.6× [1.54, 1.67]")
    assert memory == "2× less"
    busy = pd.DataFrame(
        [{**row("sdpa", "masked_fill", 1.04, 0.9, 1.2, "too noisy to tell"), "quality": "machine busy (x)"}]
    )
    use, _, _, sure, _ = recommendation(busy)
    assert use.startswith("no advice") and "busy" in use and sure == "machine busy (x)"


def test_advice_names_the_sizes_and_where_the_winner_flips():
    import pandas as pd

    from reports.html import recommendation

    rows = pd.DataFrame(
        [
            _advice_row("zero_insertion", "conv_t", 1.3, 1.2, 1.4, "faster", x=16),
            _advice_row("zero_insertion", "conv_t", 0.7, 0.65, 0.75, "slower", x=64),
        ]
    )
    use, _, _, _, where = recommendation(rows)
    assert use.startswith("conv_t") and "s16 … s64 (2 sizes)" in where and "slower from s=64" in where


def test_a_memory_trade_is_advised_in_memory_saved_and_time_paid():
    import pandas as pd

    from harness.contract import record, rules
    from reports.html import recommendation

    claims = (record.Claim("saves", "q", "004", record.ClaimKind.MEMORY),)
    rule = rules.Lighter(light="checkpointed", heavy="plain", claim="saves")
    rows = pd.DataFrame([_advice_row("checkpointed", "plain", 0.55, 0.5, 0.6, "slower", memory=1 / 1.9)])
    use, *_ = recommendation(rows, rule, claims)
    assert use.startswith("checkpointed where memory is short: 1.9× less peak memory than plain")
    assert "at 1.82× the time" in use and "faster" not in use
    # The same rows under a speed claim name the faster side.
    speed = (record.Claim("saves", "q", "004", record.ClaimKind.SPEED),)
    fast_rule = rules.Faster(fast="checkpointed", slow="plain", claim="saves")
    assert recommendation(rows, fast_rule, speed)[0].startswith("plain (1.82× faster")


def test_two_sides_that_ran_one_computation_are_never_advice():
    import pandas as pd

    from harness.contract import rules
    from reports.html import recommendation

    rule = rules.Faster(
        fast="matmul.medium", slow="matmul.highest", premise="a reduced-precision fp32 kernel"
    )
    rows = pd.DataFrame(
        [_advice_row("matmul.medium", "matmul.highest", 1.11, 1.09, 1.12, "faster", identical=True)]
    )
    use, *_ = recommendation(rows, rule)
    assert use.startswith("no advice") and "ran one computation" in use
    assert recommendation(rows.assign(identical=False), rule)[0].startswith("matmul.medium (1.11× faster")
