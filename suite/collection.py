"""A run's own collection, made in this process by pytest with the run's arguments: every test
the run would make (`plan.estimate.Planned`), with the markers the suite gave it and the plan
point it was parametrised with. What `python -m suite.estimate` prices and `python -m
suite.manifest` deals into shards; the plan itself stays plain Python.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from harness.point.marks import NOT_A_BENCHMARK
from plan import point_of
from plan.estimate import Planned

ROOT = Path(__file__).resolve().parents[1]


class _Collector:
    def __init__(self):
        self.items: list[Planned] = []

    @pytest.hookimpl(wrapper=True)  # after every plugin's own collection_finish (suite.recorder's)
    def pytest_collection_finish(self, session):
        result = yield
        self.items = [
            Planned(
                i.nodeid,
                frozenset(m.name for m in i.iter_markers()),
                any(
                    str(m.kwargs.get("reason", "")).startswith(NOT_A_BENCHMARK)
                    for m in i.iter_markers("skip")
                ),
                case=(dict(i.user_properties).get("point") or {}).get("case", ""),
                test=getattr(i, "originalname", i.name),
                point=point_of(i),
            )
            for i in session.items
        ]
        return result


OUTPUT_OPTIONS = ("--results", "--benchmark-json", "--history")  # each takes a value
OUTPUT_FLAGS = ("--no-history",)


def without_outputs(pytest_args) -> list[str]:
    """The run's arguments less the files it would write: collecting the plan writes nothing (it
    once replaced the results file it named with an empty run, and appended that to the history)."""
    out, skip = [], False
    for arg in pytest_args:
        if skip:
            skip = False
        elif arg in OUTPUT_OPTIONS:
            skip = True
        elif not arg.startswith(tuple(f"{o}=" for o in OUTPUT_OPTIONS)) and arg not in OUTPUT_FLAGS:
            out.append(arg)
    return out


def collect(pytest_args) -> list[Planned]:
    """The run's own collection, in this process, with each test's markers: a test marked
    `multigpu` is skipped on a machine of fewer GPUs, whatever the machine collecting it has."""
    pytest_args = without_outputs(pytest_args)
    plan = _Collector()
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        code = pytest.main(
            [
                str(ROOT / "suite"),
                "--rootdir",
                str(ROOT),
                "--collect-only",
                "-q",
                "-p",
                "no:randomly",
                *pytest_args,
            ],
            plugins=[plan],
        )
    if code not in (0, 5) or not plan.items:
        raise SystemExit(f"collection failed (pytest exit {int(code)}): {printed.getvalue().strip()[-500:]}")
    return plan.items
