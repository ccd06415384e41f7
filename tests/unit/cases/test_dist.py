"""The judges of `cases/dist.py`: each verdict follows from what its check observed (a different observation
gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import copy

from cases import dist, get_case
from cases import dist as S
from harness.contract.record import ErratumKind, Verdict

# ---- dist.setup -------------------------------------------------------------------------------------------


def test_notes_lines_are_typos():
    f = dist.judge_notes_lines(
        {"使用 destory_process_group() 销毁进程组": "AttributeError: no destory_process_group"}
    )
    assert f.verdict is None and f.errata[0].kind is ErratumKind.TYPO and "destroy" in f.errata[0].evidence
    assert dist.judge_notes_lines({"x": ""}).errata == ()


def test_partition_depends_on_p_dividing_n_and_the_unconditional_wording_is_an_erratum():
    even = [(12, 4, False, 0, 0, True)]
    held = dist.judge_partition(even)
    assert held.verdict is Verdict.HOLDS and held.errata == ()
    uneven = dist.judge_partition([*even, (10, 4, False, 2, 0, True)])
    assert uneven.verdict is Verdict.DEPENDS
    assert [e.kind for e in uneven.errata] == [ErratumKind.WRONG_STATEMENT]
    assert "互不相交的子集" in uneven.errata[0].quote and "n=10, p=4" in uneven.errata[0].evidence
    assert dist.judge_partition([(10, 4, False, 2, 0, False)]).verdict is Verdict.FAILS


def test_process_group_steps_quotes_one_note():
    (claim,) = [c for c in get_case("dist.setup").claims if c.id == "process_group_steps"]
    assert claim.file == "000" and "torchrun" not in claim.quote


# ---- dist.setup -------------------------------------------------------------------------------------


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
    assert dist.judge_torchrun_env([_facts(0), _facts(1)], 2).verdict is Verdict.HOLDS
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
        f = dist.judge_torchrun_env([_facts(0), facts], 2)
        assert f.verdict is Verdict.FAILS and words in f.evidence, (key, f.evidence)


def test_spawn_slips_are_typos_and_the_spawned_ranks_decide():
    slip = {
        "args": "2",
        "args_type": "int",
        "raised": True,
        "error": "TypeError: Value after * must be an iterable, not int",
        "nprocs_error": "NameError: name 'wold_size' is not defined",
    }
    f = dist.judge_spawn([_facts(0), _facts(1)], slip, 2)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO] * 2
    assert "TypeError" in f.errata[1].evidence and "wold_size" in f.errata[0].evidence
    right = {**slip, "args_type": "tuple", "raised": False, "nprocs_error": None}
    assert dist.judge_spawn([_facts(0), _facts(1)], right, 2).errata == ()
    broken = {**_facts(1), "reload_equal": False}
    assert dist.judge_spawn([_facts(0), broken], slip, 2).verdict is Verdict.FAILS


def test_launch_local_rank_argument_is_a_deprecation_and_the_environment_decides():
    ranks = [
        {
            "rank": r,
            "fixed_local_rank": r,
            "env_local_rank": r,
            "argv": ["--local-rank=0"],
            "notes_parser": {"ok": False, "error": "unrecognized arguments: --local-rank=0"},
        }
        for r in (0, 1)
    ]
    g = dist.judge_notes_launch(ranks, "FutureWarning: ... is deprecated", 2)
    assert g.verdict is Verdict.HOLDS and [e.kind for e in g.errata] == [ErratumKind.DEPRECATED_API]
    assert dist.judge_notes_launch([{**r, "notes_parser": {"ok": True}} for r in ranks], "", 2).errata == ()
    lost = dist.judge_notes_launch([{**ranks[0], "env_local_rank": 1}, ranks[1]], "", 2)
    assert lost.verdict is Verdict.FAILS


def test_omp_threads_is_context_and_an_erratum_only_where_torchrun_stopped_setting_it():
    kept = dist.judge_torchrun_omp(["1", "1"], [None], "2.13")
    assert kept.verdict is None and kept.errata == () and "['1', '1']" in kept.evidence
    gone = dist.judge_torchrun_omp([None, None], [None], "9.9")
    assert gone.verdict is None and [e.kind for e in gone.errata] == [ErratumKind.WRONG_STATEMENT]


def test_launch_deprecation_is_an_erratum_only_when_it_warns():
    assert dist.judge_launch_deprecated("FutureWarning: 'x'").errata[0].kind is ErratumKind.DEPRECATED_API
    assert dist.judge_launch_deprecated("").errata == ()


# ---- dist.sampler -----------------------------------------------------------------------------------


def test_partition_depends_on_divisibility_and_fails_off_the_documented_split():
    even = [(12, 4, False, 0, 0, True), (12, 4, True, 0, 0, True)]
    assert dist.judge_partition(even).verdict is Verdict.HOLDS
    uneven = [*even, (10, 4, False, 2, 0, True), (10, 4, True, 0, 2, True)]
    f = dist.judge_partition(uneven, notes_use=(50_000, 6, False, 4, 0, True))
    assert f.verdict is Verdict.DEPENDS
    assert "p dividing n" in f.evidence and "drop_last" in f.evidence and "50,000" in f.evidence
    assert dist.judge_partition([*even, (10, 4, False, 2, 0, False)]).verdict is Verdict.FAILS


def test_split_rows_as_observed():
    assert dist.split_row(12, 4, False) == (12, 4, False, 0, 0, True)
    assert dist.split_row(10, 4, False) == (10, 4, False, 2, 0, True)
    assert dist.split_row(10, 4, True) == (10, 4, True, 0, 2, True)
    assert dist.split_row(50_000, 6, False)[3] == 4


def test_set_epoch_holds_only_where_it_reshuffles_consistently():
    assert dist.judge_set_epoch(True, 48, True, True).verdict is Verdict.HOLDS
    assert dist.judge_set_epoch(True, 0, True, True).verdict is Verdict.FAILS
    assert dist.judge_set_epoch(False, 48, True, True).verdict is Verdict.FAILS


def test_notes_loader_keyword_slip_is_a_typo_and_the_shard_decides():
    f = dist.judge_notes_loader(
        [1, 5, 9], [1, 5, 9], "TypeError: unexpected keyword 'sampleer'", "ValueError"
    )
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert dist.judge_notes_loader([1, 5, 9], [1, 5, 9], "", "ValueError").errata == ()
    assert dist.judge_notes_loader([1, 5], [1, 5, 9], "", "").verdict is Verdict.FAILS


def test_dist_partition_and_setup_errata():
    assert dist.judge_partition([(12, 4, False, 0, 0, True)]).verdict is Verdict.HOLDS
    assert dist.judge_partition([(10, 4, False, 2, 0, True)]).verdict is Verdict.DEPENDS
    assert dist.judge_partition([(10, 4, False, 2, 0, False)]).verdict is Verdict.FAILS
    warned = dist.judge_launch_deprecated("FutureWarning: 'deprecated'")
    assert warned.verdict is None and warned.errata[0].kind is ErratumKind.DEPRECATED_API
    assert dist.judge_launch_deprecated("").errata == ()


def test_setup_facts_are_judged_and_each_wrong_fact_fails():
    finding = S.judge_torchrun_env([_facts(0), _facts(1)], 2)
    assert finding.verdict.value == "holds" and "new_group sums 2 in the odd group" in finding.evidence
    for key, value, message in (
        ("initialized_after_destroy", True, "left it initialized"),
        ("after_ddp_equals_rank0", False, "broadcast rank 0"),
        ("ddp_state_dict_keys", ["weight"], "state_dict keys"),
        ("unseeded_init_identical", True, "different seeds"),
    ):
        facts = copy.deepcopy(_facts(1))
        facts[key] = value
        wrong = S.judge_torchrun_env([_facts(0), facts], 2)
        assert wrong.verdict.value == "fails" and message in wrong.evidence


def test_spawn_and_launch_slips_are_errata_the_launched_ranks_decide():
    slip = {
        "args": 2,
        "args_type": "int",
        "raised": True,
        "error": "TypeError: Value after * must be an iterable",
    }
    f = S.judge_spawn([_facts(0), _facts(1)], slip, 2)
    assert f.verdict.value == "holds" and f.errata[0].kind.value == "typo"
    assert (
        S.judge_spawn([_facts(0), _facts(1)], {**slip, "args_type": "tuple", "raised": False}, 2).errata == ()
    )
    broken = copy.deepcopy(_facts(1))
    broken["reload_equal"] = False
    bad = S.judge_spawn([_facts(0), broken], slip, 2)
    assert bad.verdict.value == "fails" and "reload" in bad.evidence
    ranks = [
        {
            "rank": r,
            "fixed_local_rank": r,
            "env_local_rank": r,
            "argv": ["--local-rank=0"],
            "notes_parser": {"ok": False, "error": "unrecognized arguments: --local-rank=0"},
        }
        for r in (0, 1)
    ]
    g = S.judge_notes_launch(ranks, "FutureWarning: ... is deprecated", 2)
    assert g.verdict.value == "holds" and g.errata[0].kind.value == "deprecated API"
    fine = [{**r, "notes_parser": {"ok": True}} for r in ranks]
    assert S.judge_notes_launch(fine, "", 2).errata == ()
    assert S.judge_notes_launch([{**ranks[0], "env_local_rank": 1}, ranks[1]], "", 2).verdict.value == "fails"
