"""A pytest plugin that plants red checks, to show that a red test never leaves its ID reading
`holds`: ``SUITE_PLANT_RED="nn.grid_sample:check:identity;distance.pairwise:variant:matmul"
pytest -p tests.plant_red ...``.

A planted check asserts the impossible before it observes anything (its test goes red the way a
broken check does); a planted variant returns its result 1% off (outside every fp32 bound: its
check against the truth fails, and the pair it is in is not timed). Test tooling only: nothing in
the product imports it."""

from __future__ import annotations

import dataclasses
import importlib
import os

import pytest

ENV = "SUITE_PLANT_RED"
# relative: far outside every fp32 bound of the quick sizes (tests/unit/properties/test_mutations.py: 1e-4)
OFF = 1e-2


def asserting(fn):
    def check(device):
        assert False, "planted: a check that asserts the impossible"

    return check


def off(fn):
    def call(*args):
        out = fn(*args)
        return tuple(o * (1 + OFF) for o in out) if isinstance(out, tuple) else out * (1 + OFF)

    return call


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    import cases
    from cases.spec import Case

    for spec in filter(None, os.environ.get(ENV, "").split(";")):
        case_id, kind, name = spec.split(":")
        module = importlib.import_module(cases.declared_in(case_id))
        for attr, value in vars(module).items():
            if not (isinstance(value, Case) and value.id == case_id):
                continue
            if kind == "check":
                planted = dataclasses.replace(value.checks[name], fn=asserting(value.checks[name].fn))
                value = dataclasses.replace(value, checks={**value.checks, name: planted})
            else:
                planted = dataclasses.replace(value.variants[name], fn=off(value.variants[name].fn))
                value = dataclasses.replace(value, variants={**value.variants, name: planted})
            setattr(module, attr, value)
    cases.all_cases.cache_clear()
