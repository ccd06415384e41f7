"""cases/_launch/dist_launch_worker.py, run in this process: one rank's record of what its launcher
handed it. The notes' parser refuses torch's `--local-rank=R` with argparse's message, which names
this file (`dist.setup`'s evidence quotes it, so the file keeps its name), and accepts the
`--local_rank R` form the notes' launcher once passed."""

from __future__ import annotations

import json

import pytest

from cases._launch import dist_launch_worker


@pytest.fixture
def launched(tmp_path, monkeypatch):
    for name in ("LOCAL_RANK", "RANK", "LOCAL_WORLD_SIZE", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)

    def run(*argv: str, **env: str) -> dict:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr("sys.argv", ["dist_launch_worker.py", *argv, "--out", str(tmp_path)])
        dist_launch_worker.main()
        return json.loads((tmp_path / f"notes_launch-rank{env.get('RANK', '0')}.json").read_text())

    return run


def test_todays_launcher_flag_stops_the_notes_parser(launched):
    row = launched("--local-rank=1", RANK="1", LOCAL_RANK="1", OMP_NUM_THREADS="1")
    assert row["notes_parser"] == {
        "ok": False,
        "exit_code": 2,
        "error": "dist_launch_worker.py: error: unrecognized arguments: --local-rank=1",
    }
    assert (row["rank"], row["fixed_local_rank"], row["env_local_rank"], row["omp_num_threads"]) == (
        1,
        1,
        1,
        "1",
    )


def test_the_notes_spelling_parses_and_torchrun_passes_no_flag(launched):
    assert launched("--local_rank", "0")["notes_parser"] == {"ok": True, "local_rank": 0}
    row = launched(LOCAL_RANK="0")
    assert row["argv"][0] == "--out" and row["notes_parser"]["local_rank"] is None
    assert row["fixed_local_rank"] is None and row["env_local_rank"] == 0
