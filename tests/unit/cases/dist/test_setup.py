"""The judges of `cases/dist/setup.py`: each verdict follows from what its check observed (a
different observation gives a different verdict)."""

from __future__ import annotations

import copy

from cases import get_case
from cases.dist import setup
from harness.contract.record import ErratumKind, Verdict


def test_notes_lines_are_typos():
    f = setup.judge_notes_lines(
        {"使用 destory_process_group() 销毁进程组": "AttributeError: no destory_process_group"}
    )
    assert f.verdict is None and f.errata[0].kind is ErratumKind.TYPO and "destroy" in f.errata[0].evidence
    assert setup.judge_notes_lines({"x": ""}).errata == ()
    heading = setup.judge_notes_lines(
        {"1. pytorch.nn.distributed": "ModuleNotFoundError: no torch.nn.distributed"}
    )
    assert heading.errata[0].file == "000" and "torch.distributed" in heading.errata[0].evidence


def test_process_group_steps_quotes_one_note():
    (claim,) = [c for c in get_case("dist.setup").claims if c.id == "process_group_steps"]
    assert claim.file == "000" and "torchrun" not in claim.quote


def _facts(rank: int) -> dict:
    return {
        "rank": rank,
        "initialized": True,
        "initialized_after_destroy": False,
        "seeded_init_identical": True,
        "unseeded_init_identical": False,
        "after_ddp_identical": True,
        "after_ddp_equals_rank0": True,
        "subgroup_sum": 1.0 + rank,
        "subgroup_expected": 1.0 + rank,
        "reload_equal": True,
        "ddp_state_dict_keys": ["module.weight", "module.bias"],
        "wrapped_state_dict_loads": False,
        "wrapped_state_dict_error": "Error(s) in loading state_dict for Linear:",
        "env": {"LOCAL_RANK": str(rank), "WORLD_SIZE": "2"},
    }


def test_torchrun_setup_holds_on_good_facts_and_fails_on_each_wrong_one():
    assert setup.judge_torchrun_env([_facts(0), _facts(1)], 2).verdict is Verdict.HOLDS
    for key, value, words in (
        ("initialized_after_destroy", True, "left it initialized"),
        ("after_ddp_equals_rank0", False, "broadcast rank 0"),
        ("ddp_state_dict_keys", ["weight"], "state_dict keys"),
        ("unseeded_init_identical", True, "different seeds"),
        ("reload_equal", False, "reload"),
        ("subgroup_sum", 7.0, "new_group"),
        ("env", {"LOCAL_RANK": "0", "WORLD_SIZE": "2"}, "environment"),
    ):
        facts = copy.deepcopy(_facts(1))
        facts[key] = value
        f = setup.judge_torchrun_env([_facts(0), facts], 2)
        assert f.verdict is Verdict.FAILS and words in f.evidence, (key, f.evidence)


def test_spawn_of_000_is_decided_by_the_spawned_ranks():
    f = setup.judge_spawn([_facts(0), _facts(1)], 2)
    assert f.verdict is Verdict.HOLDS and f.errata == ()
    broken = {**_facts(1), "reload_equal": False}
    assert setup.judge_spawn([_facts(0), broken], 2).verdict is Verdict.FAILS


def test_a_call_before_init_that_runs_fails_the_steps():
    ok = [
        {**_facts(r), "before_init_error": "ValueError: Default process group has not been initialized"}
        for r in (0, 1)
    ]
    f = setup.judge_torchrun_env(ok, 2)
    assert f.verdict is Verdict.HOLDS and "before init_process_group" in f.evidence
    ran = [{**ok[0], "before_init_error": ""}, ok[1]]
    assert setup.judge_torchrun_env(ran, 2).verdict is Verdict.FAILS


def test_spawn_args_int_fails_and_a_spawn_that_runs_main_holds():
    f = setup.judge_spawn_args("int", "TypeError: Value after * must be an iterable, not int", 2)
    assert f.verdict is Verdict.FAILS and f.errata == () and "args=(world_size,)" in f.evidence
    assert setup.judge_spawn_args("tuple", "", 2).verdict is Verdict.HOLDS


def test_tcp_init_fails_where_the_string_rank_is_rejected():
    f = setup.judge_tcp_init("'1'", "2", "RuntimeError: `rank` must be an integer. 1", "")
    assert f.verdict is Verdict.FAILS and "type=int" in f.evidence and f.errata == ()
    # a torch that took the string would reach the rendezvous and wait for the master
    waited = setup.judge_tcp_init("'1'", "2", "DistStoreError: Timed out after 10 seconds", "")
    assert waited.verdict is Verdict.HOLDS
    assert setup.judge_tcp_init("1", "2", "", "").verdict is Verdict.HOLDS


def _launch_ranks(ok: bool, argv="--local-rank=0"):
    parser = (
        {"ok": True, "local_rank": None} if ok else {"ok": False, "error": f"unrecognized arguments: {argv}"}
    )
    return [
        {"rank": r, "fixed_local_rank": r, "env_local_rank": r, "argv": [argv], "notes_parser": parser}
        for r in (0, 1)
    ]


def test_notes_local_rank_parser_fails_where_it_exits_on_the_launchers_argument():
    g = setup.judge_notes_launch(_launch_ranks(False), "FutureWarning: ... is deprecated", 2)
    assert g.verdict is Verdict.FAILS and g.errata == ()
    assert "LOCAL_RANK" in g.evidence and "--local-rank=0" in g.evidence
    # an old launch passing --local_rank=R: the notes' parser reads each rank
    read = [
        {**r, "argv": [f"--local_rank={r['rank']}"], "notes_parser": {"ok": True, "local_rank": r["rank"]}}
        for r in _launch_ranks(True)
    ]
    assert setup.judge_notes_launch(read, "", 2).verdict is Verdict.HOLDS
    # a launcher passing no argument: the parser runs but reads None
    assert setup.judge_notes_launch(_launch_ranks(True, argv="--out=x"), "", 2).verdict is Verdict.FAILS


def test_omp_threads_is_context_with_no_erratum():
    kept = setup.judge_torchrun_omp(["1", "1"], [None], "2.13")
    assert kept.verdict is None and kept.errata == () and "['1', '1']" in kept.evidence
    gone = setup.judge_torchrun_omp([None, None], [None], "9.9")
    assert gone.verdict is None and gone.errata == () and "no longer" in gone.evidence


def test_launch_deprecation_is_an_erratum_only_when_it_warns():
    assert setup.judge_launch_deprecated("FutureWarning: 'x'").errata[0].kind is ErratumKind.DEPRECATED_API
    assert setup.judge_launch_deprecated("").errata == ()


def test_setup_facts_are_judged_and_each_wrong_fact_fails():
    finding = setup.judge_torchrun_env([_facts(0), _facts(1)], 2)
    assert finding.verdict.value == "holds" and "new_group sums 2 in the odd group" in finding.evidence
    for key, value, message in (
        ("initialized_after_destroy", True, "left it initialized"),
        ("after_ddp_equals_rank0", False, "broadcast rank 0"),
        ("ddp_state_dict_keys", ["weight"], "state_dict keys"),
        ("unseeded_init_identical", True, "different seeds"),
    ):
        facts = copy.deepcopy(_facts(1))
        facts[key] = value
        wrong = setup.judge_torchrun_env([_facts(0), facts], 2)
        assert wrong.verdict.value == "fails" and message in wrong.evidence
