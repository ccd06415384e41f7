"""The ETA weighs what is left by kind: a run of cheap checks first and expensive pairs after
must not be told it is nearly done."""

from __future__ import annotations

from suite.progress import Progress, _kind, _Tally


def _progress(planned: dict, done: dict) -> Progress:
    p = Progress(config=None)
    p.planned_by_kind.update(planned)
    for kind, (n, seconds) in done.items():
        p.done_by_kind[kind] = _Tally(n, seconds)
    return p


def test_eta_weighs_the_kinds_left():
    # 100 checks at 0.05 s done; 10 pairs at 6 s each left, one done.
    p = _progress({"check": 100, "pair": 10}, {"check": (100, 5.0), "pair": (1, 6.0)})
    assert abs(p.eta_s(elapsed=11.0) - 9 * 6.0) < 1e-9
    # The per-test mean would have said 9 × 11/101 ≈ 1 s.


def test_an_unstarted_kind_costs_the_mean_so_far_and_the_time_between_tests_counts():
    p = _progress({"check": 10, "launch": 2}, {"check": (10, 1.0)})
    assert abs(p.eta_s(elapsed=2.0) - 2 * 0.2) < 1e-9
    q = _progress({"check": 20}, {"check": (10, 1.0)})
    assert abs(q.eta_s(elapsed=2.0) - 10 * 0.2) < 1e-9  # pytest's own time stretches the mean


def test_kinds():
    assert _kind({"kind": "variant"}, True) == "variant-timed"
    assert _kind({"kind": "variant"}, False) == "variant"
    assert _kind({"kind": "check"}, False, "suite/test_distributed.py::test_ddp[x]") == "launch"
