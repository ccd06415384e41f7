"""The judges of `cases/layernorm.py`: each verdict follows from what its check observed (a different
observation gives a different verdict)."""

from __future__ import annotations

from cases import layernorm
from harness.contract.record import Verdict

# (D, gap to nn.LayerNorm as a fraction of the output's scale, the fp32 bound at D), as measured.
MEASURED = [(2, 0.29, 1.1e-6), (512, 9.8e-4, 3.7e-6), (32768, 1.5e-5, 2.3e-5), (65536, 6.9e-6, 3.1e-5)]


def test_layernorm_notes_class_depends_on_d_where_the_gap_closes():
    f = layernorm.judge_layer_norm(4e-16, 3e-14, MEASURED)
    assert f.verdict is Verdict.DEPENDS and "D = 32768" in f.evidence and f.errata == ()


def test_layernorm_notes_class_fails_where_it_is_off_at_every_d():
    outside = [(d, gap, bound) for d, gap, bound in MEASURED[:2]]
    assert layernorm.judge_layer_norm(4e-16, 3e-14, outside).verdict is Verdict.FAILS


def test_layernorm_notes_class_holds_where_it_is_nn_layernorm():
    # A class with the biased variance and ε inside the root: no gap at any D.
    same = [(d, 1e-16, bound) for d, _, bound in MEASURED]
    assert layernorm.judge_layer_norm(4e-16, 3e-14, same).verdict is Verdict.HOLDS


def test_layernorm_relation_decides_what_the_class_computes():
    # Normalising over the wrong axis (or not at all) breaks the exact relation.
    assert layernorm.judge_layer_norm(1e-6, 3e-14, MEASURED).verdict is Verdict.FAILS
    assert layernorm.judge_layer_norm(4e-16, 1e-6, MEASURED).verdict is Verdict.FAILS


def test_layernorm_notes_class_depends_on_the_input_scale_where_the_eps_terms_part():
    # Inside the bound at every D at unit scale, but rows with σ = 1e-3 put ε's placement first.
    same = [(d, 1e-16, bound) for d, _, bound in MEASURED]
    small = (1e-3, 65536, 2.3, 3.1e-5)
    f = layernorm.judge_layer_norm(4e-16, 3e-14, same, small)
    assert f.verdict is Verdict.DEPENDS and "input's scale" in f.evidence and "on D" not in f.evidence
    assert (
        layernorm.judge_layer_norm(4e-16, 3e-14, same, (1e-3, 65536, 1e-6, 3.1e-5)).verdict is Verdict.HOLDS
    )
    both = layernorm.judge_layer_norm(4e-16, 3e-14, MEASURED, small)
    assert both.verdict is Verdict.DEPENDS and "on D" in both.evidence and "input's scale" in both.evidence
