"""A context a variant runs in, entered around a block of timed calls, never inside each call.

Some of what a computation needs costs more to set up than the computation, or must hold when a
block of calls starts rather than during each: every fp32-precision flag saved, set, restored and
checked (~110-170 µs a time, `harness.measure.precision_flags`), or the process's other threads
gone idle before a computation whose work runs on threads that are not torch's
(`harness.measure.settle`). A variant carries such a context (`scoped`): called directly it enters
it on every call, so a check or any other direct caller runs as the variant means, while the
harness takes it apart (`split`) and calls the bare computation inside one entered context around
each block of timed calls (harness.measure.interleave, harness.point.variant_benchmark), outside
the clock's readings. Contexts stack: a variant scoped twice enters both, the outer one first.
Plain Python, no torch.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, ContextManager

Context = Callable[..., ContextManager]  # called with the variant's inputs


def _none(*args) -> ContextManager:
    return contextlib.nullcontext()


def _stacked(outer: Context, inner: Context) -> Context:
    @contextlib.contextmanager
    def both(*args):
        with outer(*args), inner(*args):
            yield

    return both


def scoped(context: Context) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a computation with the context it runs in: ``context(*inputs)`` is a context
    manager. The decorated function enters it around each direct call and carries it as
    ``block_context`` beside the bare computation (``block_bare``), for `split`; a function
    already scoped keeps its context inside this one."""

    def wrap(fn):
        bare, inner = split(fn)
        both = context if inner is _none else _stacked(context, inner)

        @functools.wraps(fn)
        def call(*args):
            with both(*args):
                return bare(*args)

        call.block_context = both
        call.block_bare = bare
        return call

    return wrap


def split(fn: Callable[..., Any]) -> tuple[Callable[..., Any], Context]:
    """(the bare computation, the context to enter around a block of its calls) of a `scoped`
    function; (`fn`, no context) for any other."""
    context = getattr(fn, "block_context", None)
    if context is None:
        return fn, _none
    return fn.block_bare, context


def entered(fn: Callable[..., Any], inputs: tuple) -> tuple[Callable[[], Any], Callable[[], ContextManager]]:
    """`split` bound to `inputs`: (the bare call, its context), both taking no arguments."""
    bare, context = split(fn)
    return functools.partial(bare, *inputs), functools.partial(context, *inputs)
