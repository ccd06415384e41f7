"""pytest hooks for the whole repository: options, markers, machine info and the results ledger.

Kept thin on purpose; what a case is lives in `cases/`, how to measure in `harness/`, and the
parametrisation of the suite's tests in `suite/conftest.py`.
"""

from __future__ import annotations

import pytest
import torch

from harness import ceilings, machine, requirements
from suite import options

_ledger: list[dict] = []  # one entry per suite test, filled by pytest_runtest_logreport


def pytest_addoption(parser):
    options.add_options(parser)


def pytest_configure(config):
    options.validate(config)
    if config.getoption("--threads") is not None:
        torch.set_num_threads(config.getoption("--threads"))
    _ledger.clear()


def pytest_collection_modifyitems(config, items):
    """Markers and skips come from each point's requirements, in this one place."""
    for item in items:
        point = _point(item)
        if point is None:
            continue
        if requirements.needs_gpu(point.requires, point.device):
            item.add_marker(pytest.mark.gpu)
        if requirements.gpus_needed(point.requires) >= 2:
            item.add_marker(pytest.mark.multigpu)
        if "distributed" in point.requires:
            item.add_marker(pytest.mark.distributed)
        if getattr(point, "slow", False):
            item.add_marker(pytest.mark.slow)
        reason = requirements.unmet(point.requires, point.device)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
        item.user_properties.append(("point", point.describe()))


def _point(item):
    params = getattr(getattr(item, "callspec", None), "params", {})
    return params.get("variant_point") or params.get("check_point")


def pytest_runtest_logreport(report):
    """Every suite test's outcome (with its point and any finding) goes into the results JSON,
    so the reports know which checks failed and which sizes were skipped, and why."""
    props = dict(report.user_properties)
    if "point" not in props:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        entry = {**props["point"], "nodeid": report.nodeid, "outcome": report.outcome}
        if report.skipped and isinstance(report.longrepr, tuple):
            entry["reason"] = report.longrepr[2].removeprefix("Skipped: ")
        elif report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            entry["reason"] = (crash.message if crash else str(report.longrepr))[:2000]
        for key in ("finding", "measured"):
            if key in props:
                entry[key] = props[key]
        _ledger.append(entry)


def pytest_benchmark_update_machine_info(config, machine_info):
    machine_info["torch"] = machine.machine_info()
    machine_info["torch"]["label"] = machine.machine_label(machine_info["torch"])
    # Measured before the first timing of the session (suite/conftest.py: machine_ceilings);
    # absent when nothing in the session was timed.
    measured, detail = ceilings.cached()
    if measured:
        machine_info["torch"]["ceilings"] = measured
        machine_info["torch"]["ceilings_detail"] = detail


def pytest_benchmark_update_json(config, benchmarks, output_json):
    output_json["suite"] = {
        "profile": config.getoption("--profile"),
        "devices": list(options.devices(config)),
        "seed": config.getoption("--seed"),
    }
    output_json["outcomes"] = list(_ledger)


def pytest_terminal_summary(terminalreporter):
    """The notes' claims judged in this run, one line each, so a plain run shows the verdicts
    without a results file."""
    findings = [e for e in _ledger if e.get("finding")]
    if not findings:
        return
    terminalreporter.section("findings on the notes' claims")
    for entry in findings:
        verdict = entry["finding"]["verdict"] or "note"
        evidence = entry["finding"]["evidence"]
        if len(evidence) > 160:
            evidence = evidence[:157] + "..."
        terminalreporter.write_line(f"{verdict:>7}  {entry['case']}/{entry['check']} [{entry['device']}]: {evidence}")
