"""The suite's option values read and checked without a pytest run (harness.run.option_values): each
wrong value names the values allowed; the subprocess tests in test_suite_glue/test_options show
pytest turning these into usage errors."""

import os

import pytest

from harness.measure import compiled
from harness.run import option_values

GOOD = dict(threads=None, seed=0, time_budget=None, timing_mode="warm", device="cpu")


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"threads": 0}, "--threads 0: use 1 to"),
        ({"threads": 10**6}, "usable cores; more only oversubscribes them"),
        ({"seed": -1}, "--seed -1: use an integer from 0 to 2**63 - 1"),
        ({"seed": 2**63}, "a generator's seed"),
        ({"time_budget": 0.0}, "--time-budget 0.0: use a positive, finite number of seconds"),
        ({"time_budget": float("inf")}, "--time-budget inf: use a positive, finite number"),
        ({"max_time": -1.0}, "--benchmark-max-time -1.0: use a positive, finite number of seconds"),
        ({"max_time": 0.0}, "--benchmark-max-time 0.0"),
        ({"max_time": float("inf")}, "--benchmark-max-time inf"),
        (
            {"timing_mode": "warm,hot"},
            "--timing-mode 'warm,hot': use a comma-separated list of warm, cold_l2, graph, or all",
        ),
        ({"timing_mode": " , "}, "--timing-mode"),
        ({"device": "tpu"}, "--device 'tpu': use a comma-separated list of cpu, cuda"),
        ({"device": ","}, "--device ','"),
    ],
)
def test_a_wrong_value_names_the_allowed_ones(bad, message):
    with pytest.raises(ValueError) as raised:
        option_values.check(**{**GOOD, **bad})
    assert message in str(raised.value)


def test_good_values_pass_and_parse():
    option_values.check(**{**GOOD, "threads": 1, "seed": 2**63 - 1, "time_budget": 0.5, "timing_mode": "all"})
    assert option_values.devices(" cuda, cpu,cuda,") == ("cuda", "cpu")
    assert option_values.devices(None)[0] == "cpu"  # by default the devices present
    assert option_values.timing_modes(" all ") == ("warm", "cold_l2", "graph")
    assert option_values.timing_modes("graph, warm") == ("graph", "warm")


def test_every_compile_scope_is_one_the_plan_knows():
    assert compiled.COMPILE_SCOPES[0] == "auto"
    for scope in compiled.COMPILE_SCOPES:
        for profile in ("quick", "full"):
            compiled.compiled_cases(scope, profile)  # a scope without cases would raise KeyError


def test_a_results_path_that_cannot_be_written_is_refused_before_the_first_test(tmp_path):
    """A --results naming a folder ran everything, printed 'results: <folder>' and then lost every
    outcome to IsADirectoryError; an unwritable folder lost them the same way."""
    with pytest.raises(ValueError, match="is a folder; name the results file"):
        option_values.check(**GOOD, results=str(tmp_path))
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        if not os.access(locked, os.W_OK):  # root writes anywhere: nothing to refuse there
            with pytest.raises(ValueError, match="cannot write into"):
                option_values.check(**GOOD, results=str(locked / "r.json"))
    finally:
        locked.chmod(0o700)
    option_values.check(**GOOD, results=str(tmp_path / "new" / "r.json"), max_time=float("nan"))


@pytest.mark.parametrize("kind", ["mps", "xpu"])
def test_a_run_on_another_accelerator_is_refused_with_the_reason(kind):
    with pytest.raises(ValueError, match=f"--device {kind}: the device layer reaches it.*cpu and cuda only"):
        option_values.check(threads=None, seed=0, time_budget=None, timing_mode="warm", device=f"cpu,{kind}")
