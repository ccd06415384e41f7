"""The suite's option values read and checked without a pytest run (harness.option_values): each
wrong value names the values allowed; the subprocess tests in test_suite_glue/test_options show
pytest turning these into usage errors."""

import pytest

from harness import compiled, option_values

GOOD = dict(threads=None, seed=0, time_budget=None, timing_mode="warm", device="cpu")


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"threads": 0}, "--threads 0: use 1 to"),
        ({"threads": 10**6}, "usable cores; more only oversubscribes them"),
        ({"seed": -1}, "--seed -1: use an integer from 0 to 2**63 - 1"),
        ({"seed": 2**63}, "a generator's seed"),
        ({"time_budget": 0.0}, "--time-budget 0.0: use a positive number of seconds"),
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
