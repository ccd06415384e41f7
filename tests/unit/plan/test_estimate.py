"""plan/estimate.py's pure parts: the devices a GPU plan is collected for (its pricing is
tests/unit/plan/test_costmodel.py's; its command line, tests/unit/suite/test_estimate.py's)."""

from __future__ import annotations

from plan.estimate import pytest_args_for


def test_a_gpu_plan_is_collected_with_the_devices_of_a_gpu_machine():
    # Without --device a run takes the devices present: a CPU-only machine collecting for --gpus 1
    # collected no CUDA point and priced the quick GPU run at 0.1 min.
    assert pytest_args_for(["-m", "gpu"], gpus=1) == ["-m", "gpu", "--device", "cpu,cuda"]
    assert pytest_args_for(["-m", "gpu", "--device", "cuda"], gpus=1) == ["-m", "gpu", "--device", "cuda"]
    assert pytest_args_for(["--device=cuda"], gpus=2) == ["--device=cuda"]
    assert pytest_args_for(["-m", "gpu"], gpus=0) == ["-m", "gpu"]


# Bad input is a one-line error on stderr naming the file (or option) and the field, exit 2, and
# is found before the run's plan is collected (seconds) or anything is priced.
