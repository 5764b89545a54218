"""One way to retire a public name: it keeps working for one release and says, once per call site, what replaces it.

The warning points at the user's line, not at the validator or wrapper that noticed the old name: Python shows a
``DeprecationWarning`` by default only when it is attributed to ``__main__``, and a pointer into pydantic or this
package would tell the user nothing about which of their lines to change.
"""

from __future__ import annotations

import sys
import warnings

__all__ = ["warn_renamed"]

_INTERNAL = ("seakr_integrations", "langchain_seakr", "llamaindex_seakr", "pydantic", "langchain_core", "llama_index")


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside this package, the adapters and the frameworks they extend."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in _INTERNAL:
        frame, level = frame.f_back, level + 1
    return level


def warn_renamed(old: str, new: str, *, detail: str = "") -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` and goes away in the next release.

    Args:
        old: The old spelling as the user wrote it (``"ChatSeaKR(backend_kind=...)"``).
        new: What to write instead.
        detail: An optional sentence on what changed besides the name.
    """
    message = f"{old} is deprecated and will be removed in the next release: use {new}."
    if detail:
        message += " " + detail
    warnings.warn(message, DeprecationWarning, stacklevel=_user_stacklevel())
