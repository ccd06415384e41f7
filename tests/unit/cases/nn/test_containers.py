"""The judges of `cases/nn/containers.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict


def test_vgg_containers_and_dropout2d_slips_are_errata():
    from cases.conv import shapes
    from cases.nn import containers
    from cases.train import modes

    v = shapes.judge_vgg16(138_357_544, [(1, (112, 112, 128), (112, 112, 64))], 17, 138_505_128)
    assert v.verdict is Verdict.HOLDS and len(v.errata) == 2
    assert shapes.judge_vgg16(138_357_544, [], 16, 138_357_544).errata == ()
    assert shapes.judge_vgg16(1, [], 16, 1).verdict is Verdict.FAILS
    n = containers.N
    rows = {"Net1": (2, 2, 30, 2 * n), "Net1Fixed": (2 * n, 2 * n, 30 * n, 2 * n)}
    c = containers.judge_shared_layer(rows, "SyntaxError")
    assert c.verdict is Verdict.HOLDS
    assert [e.kind for e in c.errata] == [ErratumKind.WRONG_STATEMENT, ErratumKind.TYPO]
    assert containers.judge_shared_layer({**rows, "Net1": rows["Net1Fixed"]}, "").errata == ()
    assert containers.judge_shared_layer({**rows, "Net1Fixed": rows["Net1"]}, "").verdict is Verdict.FAILS
    d = modes.judge_dropout2d(True, 120, 0, "e", 120)
    assert d.verdict is Verdict.HOLDS and d.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert modes.judge_dropout2d(True, 0, 120, "e", 120).errata == ()
    assert modes.judge_dropout2d(False, 0, 0, "e", 120).verdict is Verdict.FAILS


def _kinds(finding):
    return [e.kind for e in finding.errata]


# ---- nn.containers -------------------------------------------------------------------------------


def test_containers_repeated_module_is_an_erratum_with_the_counts():
    from cases.nn import containers

    n = containers.N
    rows = {"Net1": (2, 2, 30, 2 * n), "Net2": (2, 2, 30, 2 * n), "Net1Fixed": (2 * n, 2 * n, 30 * n, 2 * n)}
    c = containers.judge_shared_layer(rows, "SyntaxError (invalid syntax)", True)
    assert c.verdict is Verdict.HOLDS
    assert _kinds(c) == [ErratumKind.WRONG_STATEMENT, ErratumKind.TYPO]
    assert "2 parameter tensors" in c.errata[0].evidence and "changed layer 3" in c.errata[0].evidence
    independent = {**rows, "Net1": rows["Net1Fixed"]}
    assert containers.judge_shared_layer(independent, "", False).errata == ()
    assert containers.judge_shared_layer({**rows, "Net1Fixed": rows["Net1"]}, "").verdict is Verdict.FAILS


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
