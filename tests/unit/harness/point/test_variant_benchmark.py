"""One variant at one point, measured (harness/point/variant_benchmark.py): out of memory is `not measured`
with the reason, any other error raises."""

import pytest
import torch

from harness.point.variant_benchmark import NotMeasured, not_measured_on_oom


class _Point:
    id = "x.y-v-n1-float32-cpu"
    device = "cpu"


def test_out_of_memory_is_skipped_with_the_reason_and_others_raise():
    def oom():
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 16.00 GiB")

    with pytest.raises(NotMeasured, match="out of memory at x.y-v-n1-float32-cpu"):
        not_measured_on_oom(_Point(), oom)
    with pytest.raises(ValueError):
        not_measured_on_oom(_Point(), lambda: (_ for _ in ()).throw(ValueError("a real bug")))
    assert not_measured_on_oom(_Point(), lambda: 3) == 3
