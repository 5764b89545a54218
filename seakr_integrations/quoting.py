"""Quoting user input in error messages and notes without echoing all of it: the start of an input and its length,
so a message stays readable in a terminal, a log line or an HTTP error body (a question can be 200,000 characters).
"""

from __future__ import annotations

LIMIT = 120
"""Characters of an input that a message quotes."""


def quoted(text: object, limit: int = LIMIT) -> str:
    """``repr(text)``, shortened to its first ``limit`` characters plus its length when it is longer."""
    if not isinstance(text, str):
        text = repr(text)
        if len(text) <= limit:
            return text
        return f"{text[:limit]}... ({len(text):,} characters)"
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"
