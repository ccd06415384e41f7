"""The machine's description (harness/machine/__init__.py): the label results are grouped by, and
the precision settings and CPU features recorded with every run."""

from __future__ import annotations

import torch

from harness import machine


def test_the_label_is_the_gpu_where_there_is_one_else_the_cpu():
    cpu = {"model": "Xeon 8480", "usable_cores": 2}
    assert machine.machine_label({"gpu": {"name": "H100", "count": 2}, "cpu_detail": cpu}) == "H100 x2"
    assert machine.machine_label({"gpu": {"count": 0}, "cpu_detail": cpu}) == "Xeon 8480 (2 cores)"
    assert machine.machine_label({}) == "cpu (? cores)"


def test_the_precision_settings_read_the_flags_as_they_are_now():
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert machine.precision_settings()["float32_matmul_precision"] == "high"
        torch.set_float32_matmul_precision("highest")
        assert machine.precision_settings()["float32_matmul_precision"] == "highest"
    finally:
        torch.set_float32_matmul_precision(before)


def test_the_machine_info_records_the_cpu_features_it_knows():
    info = machine.machine_info()
    assert set(info["cpu_detail"]["features"]) == set(machine.CPU_FEATURES)
    assert info["precision"] == machine.precision_settings()
