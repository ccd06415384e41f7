"""The judges of `cases/nn/kd_vs_brute.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import Verdict

# ---- nn.kd_vs_brute ------------------------------------------------------------------------------


def test_kd_distance_concentration_judge():
    from cases.nn import kd_vs_brute as kd

    assert kd.judge_distance_concentration({2: 100.0, 256: 0.27}).verdict is Verdict.HOLDS
    assert kd.judge_distance_concentration({2: 100.0, 256: 50.0}).verdict is Verdict.FAILS
    assert kd.judge_distance_concentration({2: 0.5, 256: 0.27}).verdict is Verdict.FAILS


def test_kd_crossover_follows_the_gains_at_both_ends():
    from cases.nn import kd_vs_brute
    from harness.contract import gain

    G = gain.Gain

    def obs(*gains):
        return [(d, gain.Ratio(1.0, 0.9, 1.1), g) for d, g in zip((2, 8, 256), gains)]

    assert kd_vs_brute.judge_crossover(obs(G.FASTER, G.SAME, G.SLOWER), 1, 1, "cpu").verdict is Verdict.HOLDS
    assert (
        kd_vs_brute.judge_crossover(obs(G.SLOWER, G.SLOWER, G.SLOWER), 1, 1, "cpu").verdict is Verdict.FAILS
    )
    assert (
        kd_vs_brute.judge_crossover(obs(G.FASTER, G.FASTER, G.FASTER), 1, 1, "cpu").verdict is Verdict.FAILS
    )
    assert (
        kd_vs_brute.judge_crossover(obs(G.UNCLEAR, G.SAME, G.SLOWER), 1, 1, "cpu").verdict
        is Verdict.COULD_NOT_JUDGE
    )
    assert "from D=8" in kd_vs_brute.judge_crossover(obs(G.FASTER, G.SAME, G.SLOWER), 1, 1, "cpu").evidence
    busy = kd_vs_brute.judge_crossover(obs(G.FASTER, G.SAME, G.SLOWER), 1, 1, "cpu", busy="machine busy (x)")
    # Noise is never a condition: busy, a crossover that rests on the tree not being faster cannot
    # be judged; a tree still clearly faster at the top fails all the same.
    assert busy.verdict is Verdict.COULD_NOT_JUDGE and "machine busy (x)" in busy.evidence
    still = kd_vs_brute.judge_crossover(obs(G.FASTER, G.FASTER, G.FASTER), 1, 1, "cpu", busy="machine busy")
    assert still.verdict is Verdict.FAILS


def test_kd_crossover_holds_where_the_tree_ties_brute_force_at_high_d():
    """The notes: at high D the tree is "as slow as brute force, or even slower": a tie holds."""
    from cases.nn import kd_vs_brute
    from harness.contract import gain

    G = gain.Gain
    obs = [(d, gain.Ratio(1.0, 0.9, 1.1), g) for d, g in zip((2, 64, 256), (G.FASTER, G.FASTER, G.SAME))]
    f = kd_vs_brute.judge_crossover(obs, 1, 1, "cpu")
    assert f.verdict is Verdict.HOLDS and "from D=256" in f.evidence
    high_unclear = [*obs[:2], (256, gain.Ratio(1.0, 0.5, 2.0), G.UNCLEAR)]
    assert kd_vs_brute.judge_crossover(high_unclear, 1, 1, "cpu").verdict is Verdict.COULD_NOT_JUDGE
