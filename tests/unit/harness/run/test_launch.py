"""How the distributed tests are launched (harness/run/launch.py): the world sizes come from
SUITE_WORLD_SIZES, else from the hardware; a port is handed out once."""

import pytest

from harness.run import launch


def test_world_sizes_come_from_the_environment_else_the_hardware(monkeypatch):
    from harness.run.launch import world_sizes

    monkeypatch.delenv("SUITE_WORLD_SIZES", raising=False)
    assert world_sizes("cpu") == [1, 2, 4]
    monkeypatch.setenv("SUITE_WORLD_SIZES", "2, 8")
    assert world_sizes("cpu") == world_sizes("cuda") == [2, 8]


def test_a_port_handed_out_is_not_handed_out_again_while_its_launch_may_still_bind_it(monkeypatch):
    """The kernel may give the port of a probe just closed to the next probe (two launches at once
    then met in one rendezvous): free_port skips any port it gave out in the last HOLD_S."""
    monkeypatch.setattr(launch, "_HANDED_OUT", {})
    kernel = iter([5001, 5001, 5001, 5002])
    monkeypatch.setattr(launch, "_kernel_port", lambda host: next(kernel))
    assert [launch.free_port(), launch.free_port()] == [5001, 5002]
    monkeypatch.setattr(launch, "port_is_free", lambda port, host="127.0.0.1": True)
    monkeypatch.setattr(launch, "_kernel_port", lambda host: 5003)
    assert launch.free_port(preferred=5001) == 5003  # the preferred port was handed out already
    assert launch.free_port(preferred=6000) == 6000
    with pytest.raises(OSError, match="handed out already"):
        launch.free_port()  # the kernel offers only 5003 again


def test_ports_handed_out_long_ago_can_be_handed_out_again(monkeypatch):
    monkeypatch.setattr(launch, "_HANDED_OUT", {5001: launch.time.monotonic() - launch.HOLD_S - 1})
    monkeypatch.setattr(launch, "_kernel_port", lambda host: 5001)
    assert launch.free_port() == 5001
