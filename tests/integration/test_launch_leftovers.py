"""A launch leaves nothing in the system's temp folder. torchrun's agent (and the deprecated
``torch.distributed.launch``'s) made a ``torchelastic_*`` folder there for each launch and never
removed it: 1,374 of them in /tmp after a day of suite runs on the CI machine. mp.spawn left the
error file of the rank that raises in the notes' ``args=(world_size)``, once a run. Each launch
now keeps them in its own folder, which goes with pytest's temporary folders."""

import pytest

from cases._launch.dist_launches import WORKER
from harness.run import launch


@pytest.mark.integration
def test_torchrun_the_notes_launcher_and_mp_spawn_leave_nothing_in_the_temp_folder(tmp_path, monkeypatch):
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # the launched processes' temp folder
    one_rank = {"nproc": 1, "timeout_s": 120.0}
    runs = {
        "torchrun": launch.torchrun(
            "cases._launch.dist_launch_worker", [], out_dir=tmp_path / "torchrun", **one_rank
        ),
        "torch.distributed.launch": launch.legacy_launch(
            "cases._launch.dist_launch_worker", [], out_dir=tmp_path / "legacy", **one_rank
        ),
        "mp.spawn": launch.python_module(
            WORKER,
            ["spawn", "--device", "cpu", "--world", "1"],
            out_dir=tmp_path / "spawn",
            timeout_s=120.0,
        ),
    }
    for name, run in runs.items():
        assert run.ok, f"{name}: {run.describe()}"
    # torch's compile cache (one folder a user, kept across runs by design) is no leftover
    left = sorted(p.name for p in temp.iterdir() if not p.name.startswith("torchinductor_"))
    assert left == []
