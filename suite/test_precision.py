"""precision.tf32 / precision.amp: the global precision flags are the same after every variant
and check as before, also when the code inside raises (the generic tests cannot see this)."""

from __future__ import annotations

import pytest
import torch

from cases.precision import amp, tf32
from harness import precision_flags as flags

TF32_VARIANTS = sorted(tf32.CASE.variants)
CHECKS = [
    (case, name)
    for case in (tf32.CASE, amp.CASE)
    for name in case.checks
    if "cpu" in case.checks[name].devices
]


def _mutations():
    """Writes through both APIs, including the combination after which the legacy getter raises."""
    yield (
        "legacy",
        lambda: (
            torch.set_float32_matmul_precision("medium"),
            setattr(torch.backends.cudnn, "allow_tf32", False),
        ),
    )
    if flags.has_new_api():
        yield (
            "new",
            lambda: (
                setattr(torch.backends.mkldnn.matmul, "fp32_precision", "bf16"),
                setattr(torch.backends.cudnn.conv, "fp32_precision", "ieee"),
            ),
        )
        yield "global", lambda: setattr(torch.backends, "fp32_precision", "ieee")


@pytest.mark.parametrize(
    "mutate", [m for _, m in _mutations()], ids=[f"precision.tf32-{n}" for n, _ in _mutations()]
)
def test_flags_restored_when_the_block_raises(mutate):
    before = flags.snapshot()
    with pytest.raises(AssertionError, match="a check failed"):
        with flags.preserved():
            mutate()
            assert flags.snapshot() != before, "the mutation changed nothing: the test would prove nothing"
            raise AssertionError("a check failed")
    assert flags.snapshot() == before


@pytest.mark.parametrize("case_id", ["precision.tf32"])
def test_restore_detects_a_leak(case_id, monkeypatch):
    """`restore` reads every flag back: a write that did not take is an error, not a silent leak."""
    with flags.preserved() as saved:
        torch.set_float32_matmul_precision("medium")
        with monkeypatch.context() as m:
            m.setattr(flags, "write", lambda path, value: None)
            with pytest.raises(RuntimeError, match="not restored"):
                flags.restore(saved)
    assert flags.snapshot() == saved


@pytest.mark.parametrize("name", TF32_VARIANTS, ids=[f"precision.tf32-{n}" for n in TF32_VARIANTS])
def test_tf32_variants_leave_flags_unchanged(name):
    variant = tf32.CASE.variants[name]
    maker = variant.inputs or tf32.CASE.make_inputs
    inputs = maker({"n": 64}, torch.float32, torch.device("cpu"), 0)
    before = flags.snapshot()
    variant.fn(*inputs)
    assert flags.snapshot() == before


@pytest.mark.parametrize("case,name", CHECKS, ids=[f"{c.id}-{n}" for c, n in CHECKS])
def test_checks_leave_flags_unchanged(case, name):
    before = flags.snapshot()
    case.checks[name].fn(torch.device("cpu"))
    assert flags.snapshot() == before
