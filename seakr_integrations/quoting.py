"""Quoting user input in error messages and notes without echoing all of it.

A 200,000-character question once produced a 200,000-character error message.  Messages quote at most the start of
an input and say how long it was, so they stay readable in a terminal, a log line or an HTTP error body.
"""

from __future__ import annotations

__all__ = ["quoted"]

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
