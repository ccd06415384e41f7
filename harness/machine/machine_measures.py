"""What a run measures of the machine itself, once per device: its ceilings (harness.machine.ceilings)
and its A/A noise floor (harness.machine.noise), written into the results' machine info beside the
machine's description; a run that timed nothing measures neither.

Neither runs inside a measurement: the ceilings are measured when the first timed point asks,
before its timing starts; the noise floor when the first pair on the device has finished its
rounds (harness.point.pair_benchmark asks after them).
"""

from __future__ import annotations

import copy
from typing import Sequence

import torch

from harness.machine import ceilings, noise
from harness.measure import device as devices


class MachineMeasures:
    def __init__(self, devices: Sequence[str]):
        self.devices = tuple(devices)  # the run's selected devices
        self.ceilings: dict[str, tuple[dict, dict]] = {}  # device kind → (measured, detail)
        self.noise_floors: dict[str, dict] = {}  # device → harness.machine.noise.measured(device)

    def ceilings_for(self, device: str) -> dict:
        """The measured ceilings of `device`'s kind. The first ask measures every selected device
        present (each once per process, harness.machine.ceilings.measured), i.e. before the first timing."""
        for d in self.devices:
            if d == "cpu" or (d == "cuda" and devices.cuda_available()):
                self.ceilings[d] = ceilings.measured(d)
        return self.ceilings.get(torch.device(device).type, ({}, {}))[0]

    def noise_floor(self, device: str) -> float | None:
        """The A/A noise floor on `device`, measured the first time a pair asks."""
        if device not in self.noise_floors:
            self.noise_floors[device] = noise.measured(device)
        return self.noise_floors[device]["floor"]

    def into(self, torch_info: dict) -> None:
        """Write what was measured into the machine info's ``torch`` entry."""
        if self.ceilings:
            torch_info["ceilings"] = {k: v[0] for k, v in self.ceilings.items()}
            torch_info["ceilings_detail"] = {k: v[1] for k, v in self.ceilings.items()}
        if self.noise_floors:
            torch_info["noise_floor"] = copy.deepcopy(self.noise_floors)
