"""The ETA weighs what is left by kind: a run of cheap checks first and expensive pairs after
must not be told it is nearly done."""

from __future__ import annotations

from harness.run.progress import Progress, Tally, cost_kind


def _progress(planned: dict, done: dict) -> Progress:
    p = Progress()
    p.planned_by_kind.update(planned)
    for kind, (n, seconds) in done.items():
        p.done_by_kind[kind] = Tally(n, seconds)
    return p


def test_eta_weighs_the_kinds_left():
    # 100 checks at 0.05 s done; 10 pairs at 6 s each left, one done.
    p = _progress({"check": 100, "pair": 10}, {"check": (100, 5.0), "pair": (1, 6.0)})
    assert abs(p.eta_s(elapsed=11.0) - 9 * 6.0) < 1e-9
    # The per-test mean would have said 9 × 11/101 ≈ 1 s.


def test_an_unstarted_kind_costs_its_pace_at_this_runs_speed_and_the_time_between_tests_counts():
    # Checks ran first at twice the CI machine's pace (elapsed twice what they took): the pairs
    # left are priced at twice a pair's pace, not at a check's mean, and stretched by the gaps.
    p = Progress(max_time_s=1.0)
    check = 2 * p.pace_s("check")
    p = _progress({"check": 10, "pair": 2}, {"check": (10, 10 * check)})
    assert abs(p.eta_s(elapsed=20 * check) - 2 * 2 * p.pace_s("pair") * 2.0) < 1e-9
    # Never above the kind's ceiling, the pairs' rounds to their cap: a first check that took 5 s
    # (the run's first probes) does not price the pairs at 40 times their pace.
    slow = _progress({"check": 10, "pair": 2}, {"check": (1, 5.0)})
    assert abs(slow.eta_s(elapsed=5.0) - (9 * 5.0 + 2 * slow.guess_s("pair"))) < 1e-9
    assert p.guess_s("pair") > p.guess_s("variant-timed") > p.guess_s("check")
    q = _progress({"check": 20}, {"check": (10, 1.0)})
    assert abs(q.eta_s(elapsed=2.0) - 10 * 0.2) < 1e-9  # pytest's own time stretches the mean


def test_kinds():
    assert cost_kind({"kind": "variant"}, True) == "variant-timed"
    assert cost_kind({"kind": "variant"}, False) == "variant"
    assert cost_kind({"kind": "variant"}, True, rounds="reads") == "variant-replayed"
    assert cost_kind({"kind": "variant"}, True, rounds="times") == "pair"
    assert cost_kind({"kind": "pair"}, False, rounds="times") == "pair"
    assert cost_kind({"kind": "pair"}, False, rounds="reads") == "pair-replayed"
    assert cost_kind({"kind": "variant", "role": "compiled"}, True, rounds="times") == "variant-compiled"
    assert cost_kind({"kind": "check"}, False, launch=True) == "launch"


def test_the_first_test_of_a_pair_to_run_is_priced_as_the_pair_the_others_as_reading_it():
    """Its rounds run in whichever of the pair's three tests comes first (suite/pair_rounds.py):
    priced as the pair's own test, 85 pairs read in 0.1 s were 77 s of a run's ETA."""
    p = Progress(enabled=True)
    side = {"case": "c", "kind": "variant"}
    p.plan(
        [
            ("a", side, True, False, "P"),
            ("b", side, True, False, "P"),
            ("q", {"case": "c", "kind": "pair"}, False, False, "Q"),
            ("P", {"case": "c", "kind": "pair"}, False, False, "P"),
            ("c", side, True, False, "Q"),
        ]
    )
    assert p.kind_of == {
        "a": "pair",
        "b": "variant-replayed",
        "q": "pair",
        "P": "pair-replayed",
        "c": "variant-replayed",
    }


def _with_history(history: dict, took: dict, kinds: dict) -> Progress:
    p = Progress()
    p.history, p.took, p.kind_of = history, took, kinds
    for n, kind in kinds.items():
        p.planned_by_kind[kind] += 1
    for n, s in took.items():
        p.done_by_kind.setdefault(kinds[n], Tally())
        p.done_by_kind[kinds[n]].done += 1
        p.done_by_kind[kinds[n]].seconds += s
    return p


def test_eta_prices_each_test_left_at_its_previous_cost_times_this_runs_pace():
    # Last run: a and b 1 s each, c 9 s. This run a and b took 3 s in all (the machine is 1.5×
    # slower): c is priced 9 × 1.5, where the mean of the same kind said 1.5.
    kinds = {"a": "pair", "b": "pair", "c": "pair"}
    p = _with_history({"a": 1.0, "b": 1.0, "c": 9.0}, {"a": 1.5, "b": 1.5}, kinds)
    assert abs(p.eta_s(elapsed=3.0) - 13.5) < 1e-9


def test_eta_falls_back_to_the_kinds_where_the_history_prices_too_little_or_is_corrupt():
    kinds = {"a": "pair", "b": "pair", "c": "pair"}
    p = _with_history({"a": 1.0, "c": "x"}, {"a": 2.0}, kinds)  # b unpriced, c corrupt
    assert abs(p.eta_s(elapsed=2.0) - 2 * 2.0) < 1e-9
    assert _with_history({}, {"a": 2.0}, kinds).eta_s(elapsed=2.0) == 4.0


def _planned(history=None) -> tuple[Progress, list[str]]:
    p = Progress(max_time_s=1.0, enabled=True)
    tests = [(f"t{i}", {"case": "c", "kind": "variant"}, True, False, None) for i in range(10)]
    # 5 pairs, their 10 sides first: the first side of each times the pair's rounds
    tests += [(f"s{i}", {"case": "c", "kind": "variant"}, True, False, f"p{i // 2}") for i in range(10)]
    tests += [(f"p{i}", {"case": "c", "kind": "pair"}, False, False, f"p{i}") for i in range(5)]
    tests += [("l0", {"case": "c", "kind": "check"}, False, True, None)]
    return p, p.plan(tests, history)


def test_the_plan_prices_every_kind_not_only_the_timed_points():
    """10 timed points, 5 pairs (their 10 sides and 5 tests) and a launch, before anything ran: each
    at its price (the line once counted the timed points alone and said 'at most' 6.1 min of runs
    that took 10-13); a pair's rounds are timed once, so the other two tests cost their reading."""
    p, lines = _planned()
    want = (
        10 * p.guess_s("variant-timed")
        + 5 * p.guess_s("pair")
        + 5 * p.guess_s("variant-replayed")
        + 5 * p.guess_s("pair-replayed")
        + p.guess_s("launch")
    )
    assert p.guess_s("variant-replayed") < p.guess_s("variant-timed") / 3
    assert f"at most {want / 60:.1f} min with each kind at its price" in lines[0]
    paced = 10 * p.pace_s("variant-timed") + 5 * p.pace_s("variant-replayed") + 5 * p.pace_s("pair")
    paced += 5 * p.pace_s("pair-replayed") + p.pace_s("launch")
    assert f"about {paced / 60:.1f} min (each kind at the CI machine's pace" in lines[0]


def test_a_kind_is_paced_at_the_ci_machines_cost_never_above_its_ceiling():
    p = Progress(max_time_s=1.0, enabled=True)
    kinds = ("pair", "pair-replayed", "variant-timed", "variant-compiled", "variant-replayed", "variant")
    for kind in (*kinds, "check", "launch", "other"):
        assert 0 < p.pace_s(kind) <= p.guess_s(kind), kind
    assert p.pace_s("pair") < p.guess_s("pair") / 2  # rounds stop at ±2% well before the cap there
    short = Progress(max_time_s=0.1, enabled=True)  # --benchmark-max-time 0.1: the cap is the bound
    assert short.pace_s("pair") == short.guess_s("pair") < p.pace_s("pair")


def test_the_plan_reads_the_previous_runs_times_where_they_cover_the_run():
    history = {f"t{i}": 2.0 for i in range(10)} | {f"s{i}": 0.5 for i in range(10)}
    history |= {f"p{i}": 4.0 for i in range(5)} | {"l0": 40.0}
    _, lines = _planned(history)
    assert f"about {(20 + 5 + 20 + 40) / 60:.1f} min (at the previous run's times)" in lines[0]
    _, lines = _planned({"t0": 2.0})  # one test of 26 priced: not a plan
    assert "each kind at the CI machine's pace" in lines[0]
