"""Findings computed from what was observed, errata apart: a different observation gives a
different verdict, and an erratum never decides the technique."""

from __future__ import annotations

from cases import distance, layernorm, onehot
from harness.contract.record import ErratumKind, Verdict


def test_onehot_names_are_errata_and_the_semantics_decide():
    seen = ((6, 4), "torch.int64", (2, 3, 5))
    f = onehot.judge_notes_names(*seen, ["torch.one_hot"], "2.13.0")
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert not onehot.judge_notes_names(*seen, [], "9.9").errata
    assert onehot.judge_notes_names((6, 3), "torch.int64", (2, 3, 5), [], "2.13.0").verdict is Verdict.FAILS


def test_layernorm_relation_verdict_follows_the_measured_relation():
    assert layernorm.judge_relation(8e-16, 1e-12, 3e-3, 512).verdict is Verdict.HOLDS
    assert layernorm.judge_relation(1e-6, 1e-12, 3e-3, 512).verdict is Verdict.FAILS
    assert layernorm.judge_relation(8e-16, 1e-6, 3e-3, 512).verdict is Verdict.FAILS


def test_distance_snippets_are_errata_and_the_corrected_forms_decide():
    f = distance.judge_binary_snippet(raised=True, literal_err=43.0, fixed_err=0.0)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_SHAPE_OR_FORMULA
    assert not distance.judge_binary_snippet(False, 0.0, 0.0).errata
    assert distance.judge_binary_snippet(True, 43.0, 2.0).verdict is Verdict.FAILS
    g = distance.judge_orientation(True, (24, 32), (32, 24))
    assert g.verdict is Verdict.HOLDS and g.errata
    assert not distance.judge_orientation(True, (32, 24), (32, 24)).errata
    assert distance.judge_orientation(False, (24, 32), (32, 24)).verdict is Verdict.FAILS


def test_typos_deprecations_and_wrong_statements_are_errata_in_every_id():
    from cases import jit
    from cases.misc import tensorboard
    from cases.precision import amp

    typo = tensorboard.judge_import_line(notes_line_imports=False, right_name_imports=True)
    assert typo.verdict is Verdict.HOLDS and typo.errata[0].kind is ErratumKind.TYPO
    assert tensorboard.judge_import_line(False, False).verdict is Verdict.FAILS
    assert not tensorboard.judge_import_line(True, True).errata
    deprecated = amp.judge_spellings(["torch.cuda.amp.autocast(args...) is deprecated"], "2.13.0")
    assert deprecated.verdict is None and deprecated.errata[0].kind is ErratumKind.DEPRECATED_API
    assert not amp.judge_spellings([], "2.13.0").errata
    scripted = jit.judge_deprecation(["torch.jit.script"], "deprecated", "2.13.0")
    assert scripted.verdict is None and scripted.errata[0].kind is ErratumKind.DEPRECATED_API
    assert not jit.judge_deprecation([], "", "2.13.0").errata
    statement = amp.judge_cpu_autocast(True, True)
    assert statement.verdict is None and statement.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert not amp.judge_cpu_autocast(False, True).errata


def test_receptive_field_and_recordio_layout_are_judged_on_the_technique():
    from cases.conv import dilated
    from cases.data import recordio

    right = dilated.judge_receptive_field([("d=2,2,2", 13, 13, 7)])
    assert right.verdict is Verdict.HOLDS and right.errata[0].kind is ErratumKind.WRONG_SHAPE_OR_FORMULA
    assert dilated.judge_receptive_field([("d=2,2,2", 13, 11, 7)]).verdict is Verdict.FAILS
    assert not dilated.judge_receptive_field([("d=1", 7, 7, 7)]).errata
    layout = recordio.judge_layout(True, [(1, 12, 16)])
    assert layout.verdict is Verdict.HOLDS and layout.errata
    assert (
        recordio.judge_layout(False, []).verdict is Verdict.FAILS
        and not recordio.judge_layout(True, []).errata
    )


def test_a_bound_the_notes_copy_from_torchs_docstring_is_an_erratum_not_a_failure():
    from cases.misc import sampling_ops

    f = sampling_ops.judge_multinomial_bound(n_of_n_runs=True, permutation=True, over_raises=True)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert not sampling_ops.judge_multinomial_bound(False, True, True).errata
    assert sampling_ops.judge_multinomial_bound(True, True, False).verdict is Verdict.FAILS


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
        kd_vs_brute.judge_crossover(obs(G.UNCLEAR, G.SAME, G.SLOWER), 1, 1, "cpu").verdict is Verdict.DEPENDS
    )
    assert "from D=8" in kd_vs_brute.judge_crossover(obs(G.FASTER, G.SAME, G.SLOWER), 1, 1, "cpu").evidence
    busy = kd_vs_brute.judge_crossover(obs(G.FASTER, G.SAME, G.SLOWER), 1, 1, "cpu", busy="machine busy (x)")
    assert busy.verdict is Verdict.DEPENDS and "machine busy (x)" in busy.evidence


def test_manual_dp_verdict_follows_its_error_against_one_device():
    from cases.parallel import manual_dp

    assert manual_dp.judge_manual_dp(1e-7, 7e-7, 2).verdict is Verdict.HOLDS
    assert manual_dp.judge_manual_dp(1e-3, 7e-7, 2).verdict is Verdict.FAILS


def test_onehot_snippet_slips_are_typos_and_the_fixed_scatter_decides():
    slips = [("torch.to_numpy", "no such function")]
    f = onehot.judge_notes_snippet(slips, True)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert onehot.judge_notes_snippet([], True).errata == ()
    assert onehot.judge_notes_snippet(slips, False).verdict is Verdict.FAILS


def test_tf32_defaults_are_wrong_default_errata_and_decide_nothing():
    from cases.precision import tf32

    f = tf32.judge_defaults(False, True, "e")
    assert f.verdict is None and [e.kind for e in f.errata] == [ErratumKind.WRONG_DEFAULT]
    assert "matmul" in f.errata[0].quote
    assert len(tf32.judge_defaults(False, False, "e").errata) == 2
    assert tf32.judge_defaults(True, True, "e").errata == ()


def test_checkpoint_toy_slips_are_errata_and_the_gradients_decide():
    from cases import memory

    f = memory.judge_notes_toy("cannot assign module", False, "pass use_reentrant explicitly", True)
    assert f.verdict is Verdict.HOLDS
    assert [e.kind for e in f.errata] == [ErratumKind.WRONG_STATEMENT, ErratumKind.DEPRECATED_API]
    assert memory.judge_notes_toy("", True, "", True).errata == ()
    assert memory.judge_notes_toy("", True, "", False).verdict is Verdict.FAILS


def test_tensorboard_image_graph_embedding_judged_on_what_was_read_back():
    from cases.misc import tensorboard

    ops = ["aten::linear", "aten::relu"]
    assert tensorboard.judge_image_graph_embedding(0, ops, 0.0, True, (32, 32)).verdict is Verdict.HOLDS
    assert tensorboard.judge_image_graph_embedding(1, ops, 0.0, True, (32, 32)).verdict is Verdict.FAILS
    assert tensorboard.judge_image_graph_embedding(0, ops[:1], 0.0, True, (32, 32)).verdict is Verdict.FAILS
    assert tensorboard.judge_image_graph_embedding(0, ops, 1e-3, True, (32, 32)).verdict is Verdict.FAILS


def test_jit_nested_example_judged_on_the_loaded_model_and_the_coverage_claim():
    from cases import jit

    assert jit.judge_notes_nested(0.0, True, "RuntimeError", True).verdict is Verdict.HOLDS
    assert jit.judge_notes_nested(0.97, True, "RuntimeError", True).verdict is Verdict.FAILS  # other weights
    assert jit.judge_notes_nested(0.0, False, "RuntimeError", True).verdict is Verdict.FAILS
    assert jit.judge_notes_nested(0.0, True, "", True).verdict is Verdict.FAILS  # script covered it


def test_a_timed_faster_claim_follows_the_gain_policy_and_the_load():
    """loss.cross_entropy's and clip.grad_norm's timed checks: an interval above the ±5% band
    holds, inside it or below it fails, across an edge depends; the same interval on a busy
    machine depends, naming the load (beside two CPU burners the fastest-of-5 timing said 0.24×)."""
    from cases._lib.timing import judge_faster
    from harness.contract.gain import Ratio

    def verdict(lo, hi, busy=None):
        return judge_faster(Ratio((lo + hi) / 2, lo, hi, 12), busy, "slow ÷ fast")

    assert verdict(1.34, 1.46)[0] is Verdict.HOLDS
    assert verdict(0.98, 1.03)[0] is Verdict.FAILS  # no measurable difference: not faster
    assert verdict(0.20, 0.30)[0] is Verdict.FAILS
    assert verdict(1.02, 1.30)[0] is Verdict.DEPENDS  # crosses 1.05: too noisy to tell
    busy, said = verdict(1.34, 1.46, busy="machine busy (load average 7.1 on 2 cores)")
    assert busy is Verdict.DEPENDS and "load average 7.1" in said
    assert verdict(0.20, 0.30, busy="machine busy")[0] is Verdict.DEPENDS
