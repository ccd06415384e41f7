"""A deprecation is heard whatever category carries it (notes/deprecation.py)."""

from __future__ import annotations

import warnings

import pytest

from notes.deprecation import deprecations, is_deprecation


@pytest.mark.parametrize(
    "category, message",
    [
        (DeprecationWarning, "`torch.jit.script` is deprecated"),  # torch 2.13
        (FutureWarning, "`torch.jit.script` is deprecated"),  # torch 2.14
        (PendingDeprecationWarning, "will go"),
        (UserWarning, "torch.range is deprecated and will be removed"),
        (UserWarning, "This overload is Deprecated"),
    ],
)
def test_each_category_a_torch_version_uses_is_a_deprecation(category, message):
    assert is_deprecation(category, message)


def test_a_warning_that_is_no_deprecation_is_not_one():
    assert not is_deprecation(UserWarning, "Sparse CSR tensor support is in beta state")
    assert not is_deprecation(RuntimeWarning, "overflow encountered")


def test_caught_warnings_are_filtered_in_order():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("a is deprecated", FutureWarning)
        warnings.warn("beta", UserWarning)
        warnings.warn("b deprecated", UserWarning)
    assert [str(w.message) for w in deprecations(caught)] == ["a is deprecated", "b deprecated"]
