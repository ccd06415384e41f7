"""What a run measures of the machine (harness/machine/machine_measures.py): the ceilings at the
first ask, the noise floor once per device, both written into the machine info; nothing measured,
nothing written."""

from __future__ import annotations

from harness.machine import ceilings, machine_measures, noise


def test_each_measure_is_taken_once_and_written_into_the_machine_info(monkeypatch):
    calls = []
    monkeypatch.setattr(
        ceilings, "measured", lambda d: calls.append(("ceilings", d)) or ({"flops": 1.0}, {"n": 1})
    )
    monkeypatch.setattr(
        noise, "measured", lambda d: calls.append(("noise", d)) or {"floor": 0.02, "rounds": 9}
    )
    measures = machine_measures.MachineMeasures(["cpu"])
    empty: dict = {}
    measures.into(empty)
    assert empty == {}  # a run that timed nothing measures neither
    assert measures.ceilings_for("cpu") == {"flops": 1.0}
    assert measures.noise_floor("cpu") == measures.noise_floor("cpu") == 0.02
    assert calls.count(("noise", "cpu")) == 1
    info: dict = {}
    measures.into(info)
    assert info["ceilings"] == {"cpu": {"flops": 1.0}} and info["ceilings_detail"] == {"cpu": {"n": 1}}
    assert info["noise_floor"] == {"cpu": {"floor": 0.02, "rounds": 9}}
    assert measures.ceilings_for("cuda") == {}  # a device kind never measured has none
