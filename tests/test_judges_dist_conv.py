"""Re-judged findings of dist.setup, dist.sampler, parallel.average_gradient, parallel.dp_vs_ddp,
conv.shapes and conv.im2col: each verdict follows from its observation (a different observation
gives a different verdict), each erratum appears only where the notes were wrong."""

from __future__ import annotations

import copy

from cases import dist
from cases._lib.data_parallel import reduction_tolerance
from cases.conv import im2col, shapes
from cases.parallel import average_gradient, dp_vs_ddp
from harness.contract.record import ErratumKind, Verdict

U32 = 2.0**-24


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


# ---- parallel.average_gradient and parallel.dp_vs_ddp --------------------------------------------


def test_reduction_bound_separates_rounding_from_a_missing_division():
    bound = reduction_tolerance(U32, batch=32, width=64, d=32, world=2)
    assert 10 * 2.6 * U32 < bound < 1e-4  # measured 2.6u: inside with room; a sum (off by 1) far out


def test_average_gradient_holds_within_the_bound_and_fails_beyond():
    bound = reduction_tolerance(U32, 32, 64, 32, 2)
    assert average_gradient.judge_average_gradient(1.6e-7, 1.0, 0.48, bound, 2).verdict is Verdict.HOLDS
    summed = average_gradient.judge_average_gradient(1.0, 1.0, 0.48, bound, 2)  # ÷ world forgotten
    assert summed.verdict is Verdict.FAILS


def test_all_reduce_multigpu_erratum_follows_hasattr():
    gone = average_gradient.judge_all_reduce_multigpu(False, "AttributeError('no all_reduce_multigpu')")
    assert gone.verdict is None and gone.errata[0].kind is ErratumKind.REMOVED_API
    assert average_gradient.judge_all_reduce_multigpu(True, "").errata == ()


def test_ddp_full_batch_holds_fails_and_concludes_nothing_on_a_rising_loss():
    bound = reduction_tolerance(U32, 32, 64, 32, 2)
    falling = [1.31, 1.19]
    assert dp_vs_ddp.judge_ddp_full_batch(4.6e-8, 4.6e-8, bound, True, falling, 2, 3).verdict is Verdict.HOLDS
    assert dp_vs_ddp.judge_ddp_full_batch(1e-3, 4.6e-8, bound, True, falling, 2, 3).verdict is Verdict.FAILS
    assert (
        dp_vs_ddp.judge_ddp_full_batch(4.6e-8, 4.6e-8, bound, False, falling, 2, 3).verdict is Verdict.FAILS
    )
    assert dp_vs_ddp.judge_ddp_full_batch(4.6e-8, 4.6e-8, bound, True, [1.0, 9.0], 2, 3).verdict is None


def test_ddp_device_ids_list_is_a_removed_api_only_where_two_devices_are_refused():
    refused = "ValueError: device_ids can only be None or contain a single element."
    f = dp_vs_ddp.judge_ddp_device_ids(refused, [], "", "2.13")
    assert f.verdict is None and [e.kind for e in f.errata] == [ErratumKind.REMOVED_API]
    assert "DDP accepts it" in f.evidence
    assert dp_vs_ddp.judge_ddp_device_ids("", [0, 1], "", "1.8").errata == ()


def test_manual_averaging_vs_ddp_and_two_nodes_are_computed():
    assert (
        average_gradient.judge_average_gradient_vs_ddp(0.0, 2e-6, True, 0.02, 0.018, 2).verdict
        is Verdict.HOLDS
    )
    assert (
        average_gradient.judge_average_gradient_vs_ddp(0.5, 2e-6, False, 0.02, 0.018, 2).verdict
        is Verdict.FAILS
    )
    assert dp_vs_ddp.judge_two_nodes(1e-8, 2.5e-6, 7, 9.0).verdict is Verdict.HOLDS
    assert dp_vs_ddp.judge_two_nodes(1e-2, 2.5e-6, 7, 9.0).verdict is Verdict.FAILS


# ---- conv.shapes --------------------------------------------------------------------------------------


def test_output_size_holds_on_the_layers_and_fails_where_a_formula_is_off():
    assert shapes.judge_output_size(210, [], [], 102, 60).verdict is Verdict.HOLDS
    assert shapes.judge_output_size(210, [(7, 3, 0, 1, 1, 6, 7)], [], 102, 60).verdict is Verdict.FAILS
    assert shapes.judge_output_size(210, [], [(7, 3, 0, 1, 6)], 102, 60).verdict is Verdict.FAILS


def test_same_padding_and_weight_shapes_are_computed():
    kept = {1: True, 3: True, 2: True}
    assert shapes.judge_same_padding(kept, {3: (0.0, 4e-5)}, "not supported").verdict is Verdict.HOLDS
    assert shapes.judge_same_padding(kept, {3: (1e-3, 4e-5)}, "not supported").verdict is Verdict.FAILS
    assert shapes.judge_same_padding({**kept, 2: False}, {}, "not supported").verdict is Verdict.FAILS
    assert shapes.judge_same_padding(kept, {}, "").verdict is Verdict.FAILS
    good = {"Conv2d": ((8, 3, 3, 5), (8, 3, 3, 5))}
    assert shapes.judge_weight_shapes(good, 14, 14).verdict is Verdict.HOLDS
    assert (
        shapes.judge_weight_shapes({"Conv2d": ((3, 8, 3, 5), (8, 3, 3, 5))}, 14, 14).verdict is Verdict.FAILS
    )
    assert shapes.judge_weight_shapes(good, 15, 14).verdict is Verdict.FAILS


def test_vgg16_table_slips_are_errata_and_the_built_network_decides():
    wrong = [(1, (112, 112, 128), (112, 112, 64)), (3, (28, 32, 512), (28, 28, 256))]
    f = shapes.judge_vgg16(138_357_544, wrong, 17, 138_505_128)
    assert f.verdict is Verdict.HOLDS
    assert [e.kind for e in f.errata] == [ErratumKind.WRONG_SHAPE_OR_FORMULA] * 3
    assert "(28, 28, 256)" in f.errata[1].evidence and "17 weight layers" in f.errata[2].evidence
    assert shapes.judge_vgg16(138_357_544, [], 16, 138_357_544).errata == ()
    assert shapes.judge_vgg16(138_357_544, [], 16, 1, hand_count=1).verdict is Verdict.FAILS
    off = [(3, (28, 28, 256), (27, 27, 256))]
    assert shapes.judge_vgg16(138_357_544, [], 16, 1, shapes_off=off).verdict is Verdict.FAILS


def test_formula_pooled_shapes_are_vgg16s():
    pooled = shapes.formula_pooled_shapes(shapes.VGG16_CFG)
    assert pooled == ((112, 112, 64), (56, 56, 128), (28, 28, 256), (14, 14, 512), (7, 7, 512))


def test_equivariance_depends_on_padding_and_stride_and_fails_where_even_circular_breaks():
    bound = 4e-5
    f = shapes.judge_equivariance(0.0, 1.3, 0.0, 0.0, 3.0, bound)
    assert f.verdict is Verdict.DEPENDS and "circular" in f.evidence and "stride" in f.evidence
    assert shapes.judge_equivariance(0.0, 0.0, 0.0, 0.0, 0.0, bound).verdict is Verdict.HOLDS
    assert shapes.judge_equivariance(0.0, 1.3, 0.0, 0.0, 0.0, bound).verdict is Verdict.DEPENDS  # padding
    assert shapes.judge_equivariance(0.0, 0.0, 0.0, 0.0, 3.0, bound).verdict is Verdict.DEPENDS  # stride
    assert shapes.judge_equivariance(0.5, 1.3, 0.0, 0.0, 3.0, bound).verdict is Verdict.FAILS
    assert shapes.judge_equivariance(0.0, 1.3, 0.5, 0.0, 3.0, bound).verdict is Verdict.FAILS


def test_padding_mode_is_a_mode_and_the_fill_value_reading_is_an_erratum():
    exact = {"zeros": 0.0, "reflect": 0.0, "replicate": 0.0, "circular": 0.0}
    copied = {"zeros": True, "reflect": False, "replicate": False, "circular": False}
    refused = "ValueError: padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}"
    f = shapes.judge_padding_modes(exact, copied, refused)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.WRONG_STATEMENT]
    # A torch where padding_mode took a number and filled with it: the notes would be right.
    filled = {m: True for m in copied}
    assert shapes.judge_padding_modes(exact, filled, "").errata == ()
    assert shapes.judge_padding_modes(exact, copied, "").errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert shapes.judge_padding_modes(exact, filled, refused).errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert shapes.judge_padding_modes({**exact, "reflect": 2.0}, copied, refused).verdict is Verdict.FAILS


def test_stacked_3x3_field_and_parameters_are_measured():
    extents = {"2×3×3": 5, "5×5": 5, "3×3×3": 7, "7×7": 7}
    counts = {"2×3×3": 73_856, "5×5": 102_464, "3×3×3": 110_784, "7×7": 200_768}
    assert shapes.judge_stacked_3x3(extents, counts, 64).verdict is Verdict.HOLDS
    assert shapes.judge_stacked_3x3({**extents, "2×3×3": 3}, counts, 64).verdict is Verdict.FAILS
    assert shapes.judge_stacked_3x3(extents, {**counts, "2×3×3": 200_000}, 64).verdict is Verdict.FAILS


# ---- conv.im2col --------------------------------------------------------------------------------------


def test_unfold_shape_is_computed_and_a_wrong_notes_number_would_be_an_erratum():
    f = im2col.judge_unfold_shape((2, 30, 4), (2, 30, 4), [], 24)
    assert f.verdict is Verdict.HOLDS and f.errata == ()
    g = im2col.judge_unfold_shape((2, 30, 4), (2, 24, 4), [], 24)
    assert [e.kind for e in g.errata] == [ErratumKind.WRONG_SHAPE_OR_FORMULA]
    assert im2col.judge_unfold_shape(
        (2, 30, 4), (2, 30, 4), [((2, 3), 1, 0, 1, (1, 18, 56), (1, 18, 42))], 24
    ).verdict is (Verdict.FAILS)


def test_im2col_equality_holds_within_the_bound_and_fails_beyond():
    assert im2col.judge_im2col_equals_conv([("k=3", 0.06, 0.08), ("k=5", 0.01, 3.0)]).verdict is Verdict.HOLDS
    assert im2col.judge_im2col_equals_conv([("k=3", 0.06, 0.08), ("k=5", 1.5, 0.03)]).verdict is Verdict.FAILS


def test_library_kernel_statement_is_an_erratum_only_where_the_matrix_is_never_built():
    f = im2col.judge_conv_is_a_matrix_product(False, "peak 4 MiB")
    assert f.verdict is None and f.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert im2col.judge_conv_is_a_matrix_product(True, "peak 12 MiB").errata == ()
