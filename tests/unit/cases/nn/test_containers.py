"""The judges of `cases/nn/containers.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import torch

from harness.contract.record import Verdict

# ---- nn.containers -------------------------------------------------------------------------------


def test_containers_notes_repeated_module_fails_the_n_layers_claim():
    from cases.nn import containers

    n = containers.N
    shared, own = (2, 2, 30, 2 * n), (2 * n, 2 * n, 30 * n, 2 * n)
    c = containers.judge_shared_layer({"Net1": shared, "Net2": shared, "Net1Fixed": own}, True)
    assert c.verdict is Verdict.FAILS and not c.errata
    assert "2 and 2 distinct parameter tensors" in c.evidence and "changed layer 3" in c.evidence
    assert "use that" in c.evidence
    # Had the notes' comprehension made a module per entry, the claim would hold.
    assert (
        containers.judge_shared_layer({"Net1": own, "Net2": own, "Net1Fixed": own}).verdict is Verdict.HOLDS
    )
    # One of the two classes sharing is enough to fail.
    assert (
        containers.judge_shared_layer({"Net1": own, "Net2": shared, "Net1Fixed": own}).verdict
        is Verdict.FAILS
    )
    # A deepcopy that did not give n layers: nothing holds.
    assert containers.judge_shared_layer({"Net1": shared, "Net1Fixed": shared}).verdict is Verdict.FAILS


def test_containers_check_runs_the_notes_classes():
    from cases.nn import containers

    classes = containers.notes_classes()
    assert set(classes) == {"Net1", "Net2"}
    layer = torch.nn.Linear(5, 5)
    assert all(m is layer for m in classes["Net2"](layer, 3).net)
    assert containers.check_shared_layer(torch.device("cpu")).verdict is Verdict.FAILS


def test_modulelist_vs_sequential_follows_order_calling_and_registration():
    from cases.nn import containers

    n = containers.N
    ok = containers.judge_modulelist_vs_sequential(True, "NotImplementedError", (2 * n, 2 * n), 0, True)
    assert ok.verdict is Verdict.HOLDS and ok.errata == ()
    assert containers.judge_modulelist_vs_sequential(
        False, "NotImplementedError", (8, 8), 0, True
    ).verdict is (Verdict.FAILS)
    assert containers.judge_modulelist_vs_sequential(True, "", (8, 8), 0, True).verdict is Verdict.FAILS
    assert containers.judge_modulelist_vs_sequential(
        True, "NotImplementedError", (8, 8), 8, True
    ).verdict is (Verdict.FAILS)
