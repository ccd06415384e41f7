"""harness.measure.block_context: a variant's context entered on each direct call, and once around
a block of the harness's calls; two contexts on one variant both entered, the outer first."""

from __future__ import annotations

import contextlib

from harness.measure import block_context


def _recording(log: list, name: str):
    @contextlib.contextmanager
    def context(*inputs):
        log.append(f"enter {name} {inputs}")
        yield
        log.append(f"leave {name}")

    return context


def test_a_direct_call_enters_the_context_and_the_harness_enters_it_once_for_a_block():
    log = []

    @block_context.scoped(_recording(log, "flags"))
    def add(a, b):
        log.append("call")
        return a + b

    assert add(1, 2) == 3
    assert log == ["enter flags (1, 2)", "call", "leave flags"]
    log.clear()
    call, context = block_context.entered(add, (1, 2))
    with context():
        assert [call() for _ in range(3)] == [3, 3, 3]
    assert log == ["enter flags (1, 2)", "call", "call", "call", "leave flags"]


def test_two_contexts_stack_the_outer_first_and_the_bare_call_enters_neither():
    log = []

    @block_context.scoped(_recording(log, "outer"))
    @block_context.scoped(_recording(log, "inner"))
    def one():
        log.append("call")
        return 1

    one()
    assert log == ["enter outer ()", "enter inner ()", "call", "leave inner", "leave outer"]
    log.clear()
    bare, context = block_context.split(one)
    bare()
    assert log == ["call"]


def test_a_plain_function_has_no_context():
    def plain(x):
        return x

    bare, context = block_context.split(plain)
    assert bare is plain
    with context(1):
        pass
