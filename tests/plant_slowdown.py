"""A pytest plugin that plants a slowdown in chosen variants, to show the regression gate catches
it on real runs: ``SUITE_PLANT_SLOWDOWN="distance.pairwise:matmul:1.3" pytest -p tests.plant_slowdown ...``.

Each planted variant computes its result as before, then spins for (factor − 1) × the time the
call took, so its wall time grows by the factor on any machine. Test tooling only: nothing in
the product imports it."""

from __future__ import annotations

import dataclasses
import importlib
import os
import time

import pytest

ENV = "SUITE_PLANT_SLOWDOWN"


def slowed(fn, factor: float):
    def call(*args):
        start = time.perf_counter()
        out = fn(*args)
        end = time.perf_counter() + (factor - 1.0) * (time.perf_counter() - start)
        while time.perf_counter() < end:
            pass
        return out

    return call


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    import cases
    from cases.spec import Case

    for spec in filter(None, os.environ.get(ENV, "").split(";")):
        case_id, variant, factor = spec.split(":")
        module = importlib.import_module(cases.declared_in(case_id))
        for name, value in vars(module).items():
            if isinstance(value, Case) and value.id == case_id:
                planted = dataclasses.replace(
                    value.variants[variant], fn=slowed(value.variants[variant].fn, float(factor))
                )
                setattr(
                    module, name, dataclasses.replace(value, variants={**value.variants, variant: planted})
                )
    cases.all_cases.cache_clear()
