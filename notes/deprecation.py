"""A deprecation recognised by its meaning, whatever warning category a torch version gives it.

torch 2.13 warns `torch.jit.script` with DeprecationWarning where 2.14 warns FutureWarning (the
convention for user-facing removals), and some APIs say "deprecated" in a plain UserWarning
(`torch.range`). A check that heard only DeprecationWarning found the notes more right on a newer
torch, where the APIs are more deprecated. Every check that reads deprecations asks this one
function.

"""

from __future__ import annotations

import re
import warnings

CATEGORIES = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)
_SAYS_DEPRECATED = re.compile(r"deprecat", re.I)


def is_deprecation(category: type, message: str) -> bool:
    """True for DeprecationWarning, PendingDeprecationWarning and FutureWarning, and for any other
    warning whose message says the API is deprecated."""
    return issubclass(category, CATEGORIES) or bool(_SAYS_DEPRECATED.search(message))


def deprecations(caught: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    """The caught warnings that are deprecations, in the order caught."""
    return [w for w in caught if is_deprecation(w.category, str(w.message))]
