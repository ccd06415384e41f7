"""torch.compile on real compiles: compile time measured apart and the result right, compiled dropout
drawing eager masks, a twin recording no metrics of its eager source."""

import pytest
import torch

from harness.measure import compiled


# A real torch.compile: inductor generates C++ and runs the compiler in another process (~10 s
# on the 2-core CI machine, the unit tier's slowest test): the integration tier's kind of test.
@pytest.mark.integration
def test_compile_time_is_measured_apart_and_the_result_is_right():
    fn = compiled.Compiled(lambda x: (x * 2).sin().sum(-1))
    x = torch.randn(64, 32)
    out, seconds, breaks = fn.compile_and_time(x)
    assert seconds > 0 and breaks == 0
    torch.testing.assert_close(fn(x), (x * 2).sin().sum(-1))


# Inductor's own random numbers are the question (it draws dropout masks the eager way only
# under harness.measure.compiled's settings): a real inductor compile, so the integration tier.
@pytest.mark.integration
def test_compiled_dropout_draws_eager_masks():
    def step(x):
        torch.manual_seed(7)
        return torch.nn.functional.dropout(x, 0.5, training=True) * 3

    x = torch.randn(256)
    fn = compiled.Compiled(step)
    out, _, _ = fn.compile_and_time(x)
    torch.testing.assert_close(out, step(x))
    torch.testing.assert_close(fn(x), step(x))  # steady state: the same compiled code


@pytest.mark.integration
def test_a_twin_records_no_metrics_of_its_eager_source(tmp_path):
    """memory.checkpoint's metrics (saved activations by segment count) describe its eager
    variants; its twins record none. (Their names once reached the metrics as keys: the
    max-autotune twins' `plain_max_autotune` was a KeyError after the compile.)"""
    import json
    import subprocess

    from tests.launcher import PYTEST, ROOT

    out = tmp_path / "run.json"
    select = "test_benchmark and memory.checkpoint and linear.plain and depth8 and cpu"
    run = subprocess.run(
        [*PYTEST, "suite", "--device", "cpu", "--compiled", "all", "--benchmark-only", "-k", select,
         "--benchmark-max-time=0.05", f"--benchmark-json={out}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:]
    extra = {b["extra_info"]["variant"]: b["extra_info"] for b in json.loads(out.read_text())["benchmarks"]}
    assert "saved_bytes" in extra["linear.plain"]
    assert (
        "saved_bytes" not in extra["compiled_linear.plain"] and "compile_s" in extra["compiled_linear.plain"]
    )
