"""harness.measure.precision_flags: every fp32-precision flag is back as it was after the block, also when
the block raises, and a restore that did not take is an error, not a silent leak."""

from __future__ import annotations

import pytest
import torch

from harness.measure import precision_flags as flags


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


@pytest.mark.parametrize("mutate", [m for _, m in _mutations()], ids=[n for n, _ in _mutations()])
def test_flags_restored_when_the_block_raises(mutate):
    before = flags.snapshot()
    with pytest.raises(AssertionError, match="a check failed"):
        with flags.preserved():
            mutate()
            assert flags.snapshot() != before, "the mutation changed nothing: the test would prove nothing"
            raise AssertionError("a check failed")
    assert flags.snapshot() == before


def test_restore_detects_a_leak(monkeypatch):
    """`restore` reads every flag back: a write that did not take is an error, not a silent leak."""
    with flags.preserved() as saved:
        torch.set_float32_matmul_precision("medium")
        with monkeypatch.context() as m:
            m.setattr(flags, "write", lambda path, value: None)
            with pytest.raises(RuntimeError, match="not restored"):
                flags.restore(saved)
    assert flags.snapshot() == saved
