"""harness.measure.graph_figure on the fake CUDA device: several calls captured as one graph and
replayed on the device's clock give the GPU's time per call, also for a call the host issues
slower than the device runs it; a call that cannot be captured gets a reason, not a figure."""

from __future__ import annotations

import contextlib
import math

import pytest

from harness.contract import rounds
from harness.measure import graph_figure
from tests import fake_gpu
from tests.fake_device import FakeDevice


def test_a_host_bound_call_replayed_from_a_graph_reads_its_gpu_time():
    fake = FakeDevice(launch_latency=20e-6)
    call = fake_gpu.launches(fake, 6, 6e-6, 12.5e-6, None)  # 36 µs of GPU work, 75 µs of host issue
    figure = graph_figure.per_call(call, fake, call_s=75e-6, min_round_s=rounds.MIN_ROUND_S["cuda"])
    assert figure.calls == math.ceil(2e-3 / 75e-6) and figure.reason == ""  # a round of the host's pace
    # One launch gap per replay round of ≥ 2 ms: under 1%.
    assert figure.seconds == pytest.approx(36e-6, rel=0.01)


def test_a_long_call_is_captured_once_and_replayed_as_often_as_a_round_needs():
    fake = FakeDevice(launch_latency=20e-6)
    figure = graph_figure.per_call(
        fake_gpu.kernel(fake, 5e-3, None), fake, call_s=5e-3, min_round_s=rounds.MIN_ROUND_S["cuda"]
    )
    assert figure.calls == 1 and figure.seconds == pytest.approx(5e-3, rel=0.01)


def test_a_call_that_waits_for_the_host_is_not_captured_and_says_why():
    fake = FakeDevice()

    def item():
        fake.launch(1e-6)
        fake.synchronize()  # .item(): a capture refuses it

    figure = graph_figure.per_call(item, fake, call_s=1e-6, min_round_s=2e-3)
    assert figure.seconds is None and figure.reason.startswith("not capturable: operation not permitted")


def test_the_host_has_no_graphs():
    figure = graph_figure.per_call(lambda: None, "cpu", call_s=1e-3, min_round_s=0.25e-3)
    assert figure.seconds is None and figure.reason == "cpu has no graphs"


def test_the_sides_context_holds_around_the_capture_and_the_replays():
    fake = FakeDevice()
    inside = []

    @contextlib.contextmanager
    def flags():
        inside.append(True)
        yield
        inside.append(False)

    def call():
        assert inside[-1:] == [True], "called outside its context"
        fake.launch(1e-3)

    assert graph_figure.per_call(
        call, fake, call_s=1e-3, min_round_s=2e-3, context=flags
    ).seconds == pytest.approx(1e-3, rel=1e-3)
    assert inside == [True, False]


def test_a_call_over_the_limit_is_not_replayed_and_costs_nothing():
    fake = FakeDevice()
    calls = []
    figure = graph_figure.per_call(lambda: calls.append(1), fake, call_s=0.5, min_round_s=2e-3)
    assert figure.seconds is None and figure.reason.startswith("not replayed: 500 ms a call")
    assert calls == [] and graph_figure.expected_calls(0.5, 2e-3) == 0
