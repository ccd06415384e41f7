"""The three generic tests every case gets from its declaration.

* ``test_check``: each variant equals the oracle within the dtype's tolerance and leaves its inputs as
  they were (harness.measure.mutation). Where the run also selects the variant's ``test_benchmark``,
  which makes the same check before its timed calls (and again after them), the check is left to
  it: deselected (suite/conftest.py, plan.checks_run_by_benchmarks).
* ``test_benchmark``: each variant timed by pytest-benchmark (device-synchronized), with its peak
  memory, error and cost model in ``extra_info``; an out-of-memory size is recorded and skipped.
  A side of a timed pair takes its rounds from the pair's (suite/pair_rounds.py): timed once.
* ``test_rule``: each rule check of the case, with its finding on the notes' claim recorded.
"""

from __future__ import annotations

import time

import pytest
import torch

from cases.spec import Role
from harness.measure import faulted_pages
from harness.point import variant_benchmark
from harness.point.variant_benchmark import NotMeasured, WrongAnswer
from notes import text as notes_text
from plan import fresh_build, fresh_spec, oversize_reason, select_points, variant_at
from suite import options
from suite.progress_plugin import progress


def _as_test_outcome(fn, *args, **kwargs):
    """`fn(*args, **kwargs)`, its NotMeasured a skip with the reason and its WrongAnswer a failure
    without a traceback (the message says what broke). Raised outside the except blocks, so the
    harness's frames (and the tensors they hold) are released first."""
    skipped = failed = None
    try:
        return fn(*args, **kwargs)
    except NotMeasured as exc:
        skipped = str(exc)
    except WrongAnswer as exc:
        failed = str(exc)
    if skipped is not None:
        pytest.skip(skipped)
    # Named like an exception's crash line, so the record's error_type is WrongAnswer: the claim
    # the variant decides fails (reports.verdicts), where another red test leaves it undecided.
    pytest.fail(f"{WrongAnswer.__name__}: {failed}", pytrace=False)


# A compiled variant is checked by its benchmark (every benchmark checks its variant against the
# oracle before timing it, under --benchmark-disable too): checking it here would compile it twice.
@select_points(lambda p: p.variant.role is not Role.COMPILED)
def test_check(variant_point, input_cache):
    if reason := oversize_reason(variant_point, input_cache):
        pytest.skip(reason)
    _as_test_outcome(variant_benchmark.check, variant_at(variant_point, input_cache))


def _with_faulted_pages(point, config, benchmark) -> bool:
    """Whether `point` is also timed with pages faulted (harness.measure.faulted_pages): an eager
    CPU point of a case `--faulted-pages` names, in a run that times."""
    cases = options.faulted_pages_cases(config)
    return (
        not benchmark.disabled
        and point.device == "cpu"
        and point.variant.role is not Role.COMPILED
        and (cases is None or point.case.id in cases)
    )


def test_benchmark(variant_point, input_cache, benchmark, machine_ceilings, pair_rounds, request):
    if reason := oversize_reason(variant_point, input_cache):
        pytest.skip(reason)
    # A CUDA point's DeviceClock, or the ReplayClock of a pair's side (suite/pair_rounds.py).
    marker = request.node.get_closest_marker("benchmark")
    _as_test_outcome(
        variant_benchmark.run,
        benchmark,
        variant_at(variant_point, input_cache),
        budget=progress(request.config),
        min_rounds=options.min_rounds(request.config),
        clock=marker.kwargs.get("timer") if marker is not None else None,
        device_ceilings=machine_ceilings(variant_point.device) if not benchmark.disabled else {},
        paired=pair_rounds.side_rounds(variant_point),
    )
    if _with_faulted_pages(variant_point, request.config, benchmark):
        started = time.perf_counter()
        figure = faulted_pages.figure(
            fresh_build, *fresh_spec(variant_point, input_cache.seed), threads=torch.get_num_threads()
        )
        benchmark.extra_info["faulted_pages"] = figure
        if "error" in figure:  # no figure (results.csv: NaN); its JSON row's warnings say why
            warned = benchmark.extra_info.get("warnings") or []
            benchmark.extra_info["warnings"] = [*warned, f"no faulted-pages figure: {figure['error']}"]
        benchmark.extra_info["phase_s"]["faulted_pages"] = time.perf_counter() - started


def test_rule(check_point, record_property):
    # Each erratum keyed by the note file and line its quote is on: one fault, one erratum.
    finding = notes_text.keyed(check_point.check.fn(torch.device(check_point.device)))
    if finding is not None:
        record_property("finding", finding.to_data())
