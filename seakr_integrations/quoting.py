"""Quoting user input in error messages and notes without echoing all of it: the start of an input and its length,
so a message stays readable in a terminal, a log line or an HTTP error body (a question can be 200,000 characters).
"""

from __future__ import annotations

LIMIT = 120
"""Characters of an input that a message quotes."""


def quoted(text: object, limit: int = LIMIT) -> str:
    """``repr(text)``, shortened to its first ``limit`` characters plus its length when it is longer."""
    shown = text if isinstance(text, str) else repr(text)
    if len(shown) <= limit:
        return repr(text)
    head = repr(shown[:limit]) if isinstance(text, str) else shown[:limit]
    return f"{head}... ({len(shown):,} characters)"
