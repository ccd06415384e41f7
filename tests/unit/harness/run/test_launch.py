"""How the distributed tests are launched (harness/run/launch.py): the world sizes come from
SUITE_WORLD_SIZES, else from the hardware."""


def test_world_sizes_come_from_the_environment_else_the_hardware(monkeypatch):
    from harness.run.launch import world_sizes

    monkeypatch.delenv("SUITE_WORLD_SIZES", raising=False)
    assert world_sizes("cpu") == [1, 2, 4]
    monkeypatch.setenv("SUITE_WORLD_SIZES", "2, 8")
    assert world_sizes("cpu") == world_sizes("cuda") == [2, 8]
