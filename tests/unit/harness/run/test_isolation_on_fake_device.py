"""The CUDA paths of isolation (harness.run.isolation) on the fake device (tests.fake_device):
the sticky-error probe, the barrier after each test's call and the release of a dead context's
memory, driven through the device interface instead of stubbing torch.cuda call by call."""

from __future__ import annotations

import pytest

from harness.measure import device as devices
from harness.run import isolation
from tests.fake_device import FakeDevice

STICKY = "CUDA error: device-side assert triggered"


@pytest.fixture
def fake():
    with devices.installed(FakeDevice()) as device:
        yield device


def test_a_working_context_probes_clean_and_its_calls_are_waited_for(fake):
    assert isolation.cuda_context_error() is None
    isolation.synchronize_cuda()
    assert fake.syncs >= 1
    isolation.release_device_memory()
    assert fake.released == 1


def test_a_dead_context_is_named_by_the_probe_and_its_next_barrier_raises_it(fake):
    fake.kill(STICKY)
    assert isolation.cuda_context_error() == STICKY
    with pytest.raises(RuntimeError, match="device-side assert"):
        isolation.synchronize_cuda()  # the error lands in the test that launched the kernel
    isolation.release_device_memory()  # best effort: the frees fail on a dead context, quietly
    assert fake.released == 0
    fake.dead = None  # revived: the suite's own isolation plugin waits on the device after each test


def test_out_of_memory_is_not_sticky(fake):
    fake.out_of_memory = True
    assert isolation.cuda_context_error() is None


def test_the_isolation_context_reports_the_devices_sticky_error(fake):
    context = isolation.Context()
    assert context.error() is None
    fake.kill(STICKY)
    assert context.error() == STICKY
    fake.dead = None  # revived: the suite's own isolation plugin waits on the device after each test
