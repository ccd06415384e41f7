"""A timed pair (harness.point.pair_benchmark): both sides checked before any round, a wrong side never
timed, and the record at the pair's own point."""

import pytest
import torch

from cases.spec import Tol
from harness.contract import record
from harness.measure import interleave
from harness.point import pair_benchmark
from harness.point.variant_benchmark import NotMeasured, VariantAtPoint, WrongAnswer

KEY = record.PointKey(
    case="distance.pairwise",
    kind="pair",
    name="matmul/broadcast",
    device="cpu",
    size={"n": 64},
    size_label="n64",
    dtype="float32",
)


def _pair(slow_fn):
    x = torch.randn(64, 64, generator=torch.Generator().manual_seed(0))
    truth = (x.double() * 2).float()

    def side(name, fn):
        tol = Tol(rtol=1e-6, atol=1e-6)  # float32 doubling is exact: any error is a wrong side
        return VariantAtPoint(
            id=name, fn=fn, device="cpu", dtype=torch.float32, tolerance=tol, inputs=lambda: ((x,), truth)
        )

    return pair_benchmark.PairAtPoint(
        key=KEY,
        fast="matmul",
        slow="broadcast",
        sides={"matmul": side("matmul", lambda t: t * 2), "broadcast": side("broadcast", slow_fn)},
        x="n",
    )


def test_a_right_pair_is_timed_at_its_point_with_the_floor_asked_after_its_rounds(monkeypatch):
    order = []
    timed_pair = interleave.timed_pair
    monkeypatch.setattr(
        interleave, "timed_pair", lambda *a, **k: order.append("rounds") or timed_pair(*a, **k)
    )
    timing = pair_benchmark.run(
        _pair(lambda t: t + t), cap_s=0.05, min_rounds=5, noise_floor=lambda: order.append("floor") or 0.03
    )
    assert order == ["rounds", "floor"]  # the floor's own measurement never runs between the rounds
    assert (timing.case, timing.size_label, timing.dtype, timing.device) == (
        "distance.pairwise",
        "n64",
        "float32",
        "cpu",
    )
    assert (timing.fast, timing.slow, timing.x, timing.noise_floor) == ("matmul", "broadcast", "n", 0.03)
    assert len(timing.fast_s) == len(timing.slow_s) >= interleave.MIN_PAIRED_ROUNDS
    assert timing.identical is True
    assert all(s > 0 for s in timing.fast_s + timing.slow_s)


def test_a_side_too_big_is_not_measured_and_its_size_asked_after_the_side_before_it_was_made():
    made = []
    pair = _pair(lambda t: t + t)
    for name, side in pair.sides.items():
        inputs = side.inputs
        object.__setattr__(side, "inputs", lambda name=name, inputs=inputs: made.append(name) or inputs())
    asked = []

    def oversize(name):
        asked.append((name, list(made)))
        return "needs ~9.0 GiB, over this device's budget of 1.0 GiB" if name == "broadcast" else None

    with pytest.raises(NotMeasured, match="broadcast: needs ~9.0 GiB"):
        pair_benchmark.run(pair, cap_s=0.05, min_rounds=5, noise_floor=lambda: None, oversize=oversize)
    assert asked == [("matmul", []), ("broadcast", ["matmul"])]


@pytest.mark.parametrize(
    "slow_fn, what",
    [
        (lambda t: t * 2 + 1e-3, "is outside its tolerance"),
        (lambda t: t.mul_(2), "changes its inputs in place"),
    ],
)
def test_a_wrong_side_leaves_the_pair_untimed_and_red(slow_fn, what):
    """A wrong side was a skip ("not timed"): a run of the pairs alone then exited 0 with a wrong
    answer observed; it is the pair's failure now (WrongAnswer)."""
    never = []
    with pytest.raises(WrongAnswer, match=f"broadcast {what}"):
        pair_benchmark.run(_pair(slow_fn), cap_s=0.05, min_rounds=5, noise_floor=lambda: never.append(1))
    assert never == []
