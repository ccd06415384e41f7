"""The judges of `cases/memory.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import memory
from harness.contract.record import ErratumKind, Verdict

# ---- memory.checkpoint -----------------------------------------------------------------------------


def test_checkpoint_toy_missing_super_init_is_a_snippet_that_raises():
    f = memory.judge_notes_toy("cannot assign module before Module.__init__() call", True, "", True, True)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.RAISES]
    assert f.errata[0].quote == "self.net = nn.Linear(10,10)"


def test_checkpoint_rng_preserved():
    assert memory.judge_rng_preserved(0.0, 1.0, 4e-6).verdict is Verdict.HOLDS
    assert memory.judge_rng_preserved(1e-3, 1.0, 4e-6).verdict is Verdict.FAILS  # masks not replayed
    assert memory.judge_rng_preserved(0.0, 0.0, 4e-6).verdict is Verdict.FAILS  # flag did nothing


def test_checkpoint_segments_sweep_and_no_saving_block():
    sweep = {1: 63, 2: 32, 4: 18, 8: 14, 16: 18}
    f = memory.judge_segments_sweep(sweep, 63, 1, 16, 7.9, 3.9, 0.3, "cpu")
    assert f.verdict is Verdict.HOLDS
    flat = {k: 63 for k in sweep}
    assert memory.judge_segments_sweep(flat, 63, 1, 16, 7.9, 3.9, 0.3, "cpu").verdict is Verdict.FAILS
    assert memory.judge_no_saving_block(100, 100, 0.2, "cpu").verdict is Verdict.HOLDS
    assert memory.judge_no_saving_block(100, 50, 0.2, "cpu").verdict is Verdict.FAILS


def test_checkpoint_saves_inputs_only_judged_on_the_notes_default_mode():
    grad = {True: False, False: True}
    assert (
        memory.judge_saves_inputs_only(32768, {True: 8192, False: 8192}, grad, 8192).verdict is Verdict.HOLDS
    )
    # The default (reentrant) mode keeping the activations: fails.
    assert memory.judge_saves_inputs_only(32768, {True: 32768, False: 8192}, grad, 8192).verdict is (
        Verdict.FAILS
    )
    # Saving only the input, but with grad mode on inside: not "in torch.no_grad() manner".
    on = {True: True, False: True}
    assert memory.judge_saves_inputs_only(32768, {True: 8192, False: 8192}, on, 8192).verdict is Verdict.FAILS
    # Plain saving no more than the input: nothing shows the activations were dropped.
    assert (
        memory.judge_saves_inputs_only(8192, {True: 8192, False: 8192}, grad, 8192).verdict is Verdict.FAILS
    )


def test_checkpoint_outputs_depend_on_the_mode():
    assert memory.judge_outputs({True: (True, False), False: (True, False)}).verdict is Verdict.HOLDS
    f = memory.judge_outputs({True: (True, False), False: (True, True)})
    assert f.verdict is Verdict.DEPENDS and "use_reentrant=True" in f.evidence
    assert memory.judge_outputs({True: (True, True), False: (True, True)}).verdict is Verdict.FAILS
    assert memory.judge_outputs({True: (False, False), False: (True, False)}).verdict is Verdict.FAILS


def test_checkpoint_toy_fails_where_the_default_gives_no_gradient():
    # Observed with torch 2.13: reentrant default, a batch without requires_grad: no gradient.
    f = memory.judge_notes_toy("cannot assign module", False, "pass use_reentrant explicitly", True, True)
    assert f.verdict is Verdict.FAILS and "NO gradient" in f.evidence
    assert "use_reentrant=False" in f.evidence
    assert [e.kind for e in f.errata] == [ErratumKind.RAISES, ErratumKind.DEPRECATED_API]
    # A torch whose default tracks the toy's parameters: the toy holds, with no errata if it is clean.
    clean = memory.judge_notes_toy("", True, "", True, True)
    assert clean.verdict is Verdict.HOLDS and clean.errata == ()


def test_checkpoint_claims_are_the_notes_words_and_per_block_decides_the_memory_claim():
    from harness.contract import rules

    (node,) = [n for n in rules.claimed(memory.CASE.verdict) if n.claim == "trades_memory"]
    assert {r.light for r in rules.memory_rules(node)} == {"mlp.per_block", "transformer.per_block"}
    assert memory.CASE.checks["notes_toy"].claim == "toy"
