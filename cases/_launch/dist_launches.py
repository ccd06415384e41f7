"""The launches of `cases._launch.dist_worker` that the distributed cases are judged from, and what judging
one gives back.

`Runs` knows the worker's command line: which task, with which arguments, how many ranks, where
the rank files go. A training or all-reduce launch takes seconds of process start-up, so those are
made once per session and shared by every judge that reads them (DDP at world N also reads the
world-1 run as its baseline); the others write into the directory they are given. A launch that
failed raises `harness.run.launch.LaunchFailed` where its rank files are read.

A `LaunchRecord` is what one launched point records: a finding under its check's name, a benchmark row
(the `harness.contract.record.BenchmarkInfo` fields, extra keys, the per-step seconds the benchmark replays)
in its group, and figures for the run's closing lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cases._launch.launched_training import TRAIN_SIZES
from harness.contract.claims import Finding
from harness.contract.record import BenchmarkInfo
from harness.run import launch

WORKER = "cases._launch.dist_worker"
TIMEOUT_S = 180.0


def allreduce_message_sizes(profile: str, device: str) -> list[int]:
    """1 KiB (α-bound: the per-message latency dominates) to 64 MiB (β-bound), every 16× in the
    quick profile and every 4× in the full one, whose GPU sweep goes on to 256 MiB, where NVLink
    and PCIe reach their bandwidth. The α–β fit needs both ends."""
    top = 28 if profile == "full" and device == "cuda" else 26
    step = 2 if profile == "full" else 4
    return [1 << k for k in range(10, top + 1, step)]


def train_args(profile: str) -> list[str]:
    return [a for k, v in TRAIN_SIZES[profile].items() for a in (f"--{k}", str(v))]


class Runs:
    """The launches of one session, under `root`, at the sizes of `profile`."""

    def __init__(self, root: Path, profile: str):
        self.root, self.profile, self.done = root, profile, {}

    def train(self, device: str, world: int, nnodes: int = 1) -> launch.Launch:
        """DDP and manual gradient averaging (the worker's default modes), `world` ranks over
        `nnodes` simulated nodes; shared."""
        key = ("train", device, world, nnodes)
        if key not in self.done:
            args = ["train", "--device", device, *train_args(self.profile)]
            out = self.root / f"train-{device}-w{world}-n{nnodes}"
            self.done[key] = launch.torchrun(
                WORKER, args, nproc=world // nnodes, nnodes=nnodes, out_dir=out, timeout_s=TIMEOUT_S
            )
        return self.done[key]

    def allreduce(self, device: str, world: int) -> launch.Launch:
        """The four all-reduce algorithms at every message size; shared."""
        key = ("allreduce", device, world)
        if key not in self.done:
            sizes = ",".join(str(s) for s in allreduce_message_sizes(self.profile, device))
            self.done[key] = launch.torchrun(
                WORKER,
                ["allreduce", "--device", device, "--sizes", sizes],
                nproc=world,
                out_dir=self.root / f"allreduce-{device}-w{world}",
                timeout_s=TIMEOUT_S,
            )
        return self.done[key]

    def dataparallel(self, out_dir: Path) -> launch.Launch:
        """nn.DataParallel: one process driving every GPU it sees."""
        args = ["train", "--device", "cuda", "--modes", "dp", *train_args(self.profile)]
        return launch.torchrun(WORKER, args, nproc=1, out_dir=out_dir, timeout_s=TIMEOUT_S)

    def setup(self, device: str, world: int, out_dir: Path) -> launch.Launch:
        """The process-group set-up facts under torchrun (env://)."""
        args = ["setup", "--device", device]
        return launch.torchrun(WORKER, args, nproc=world, out_dir=out_dir, timeout_s=TIMEOUT_S)

    def spawn(self, device: str, world: int, out_dir: Path) -> launch.Launch:
        """The set-up facts under mp.spawn (tcp://), and the notes' ``args=(world_size)``."""
        args = ["spawn", "--device", device, "--world", str(world)]
        return launch.python_module(WORKER, args, out_dir=out_dir, timeout_s=TIMEOUT_S)

    def notes_launch(self, world: int, out_dir: Path) -> launch.Launch:
        """What the notes' launcher hands each rank (`cases._launch.dist_launch_worker`)."""
        return launch.legacy_launch(
            "cases._launch.dist_launch_worker", [], nproc=world, out_dir=out_dir, timeout_s=TIMEOUT_S
        )

    def fault(
        self, kind: str, out_dir: Path, *, timeout_s: float = TIMEOUT_S, port: int | None = None
    ) -> launch.Launch:
        """Two ranks meeting in one all-reduce, one of them raising or hanging first (`kind`)."""
        args = ["fault", "--kind", kind]
        return launch.torchrun(WORKER, args, nproc=2, out_dir=out_dir, port=port, timeout_s=timeout_s)


@dataclass(frozen=True)
class LaunchRecord:
    """What one launched point records (any part may be absent): what the distributed glue hands pytest."""

    check: str = ""  # the finding's check name, e.g. ``ddp_scaling-w2``
    finding: Finding | None = None
    group: str = ""  # the benchmark row's group
    row: tuple[dict, dict, list[float]] | None = None
    measured: dict | None = None  # figures the run's answer tabulates (reports/answer.py)

    def properties(self, point: dict) -> list[tuple[str, object]]:
        """The user properties this adds to its test's recorded `point` (the results JSON's outcome
        reads them): a finding names its own check (``ddp_scaling-w2``), which names the outcome."""
        props: list[tuple[str, object]] = []
        if self.finding is not None:
            props += [("point", {**point, "check": self.check}), ("finding", self.finding.to_data())]
        if self.measured is not None:
            props.append(("measured", self.measured))
        return props

    @property
    def extra_info(self) -> dict:
        """The benchmark row's extra_info: the `BenchmarkInfo` fields, then the extra keys."""
        info, extra, _ = self.row
        return {**BenchmarkInfo(**info).to_data(), **extra}

    @property
    def step_seconds(self) -> list[float]:
        """The per-step seconds the benchmark replays, the slowest rank's at each step."""
        return self.row[2]
