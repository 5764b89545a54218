"""Reading the final answer out of a chain of thought (SPEC section 7).

As the authors' pattern, but a comma inside a date ("August 25, 1963") does not end the answer, and the answer
keeps its case (``docs/design/reasoning.md``).
"""

from __future__ import annotations

import re

ANSWER_PROMPT = " So the answer is "
"""Appended to a chain of thought that ended without an answer, to force one (SPEC section 5)."""

_ANSWER_IS = re.compile(r"the answer is(?:\s*:\s*)?", re.IGNORECASE)
_IS_THE_ANSWER = re.compile(r"(?:^|[.?!])\s*([^?!.]*?)\s+is the answer\b", re.IGNORECASE)
# End of the answer: a period/question/exclamation mark that ends a sentence (not "3.5"), a newline, or a comma
# that is not the one between a day and a year ("August 25, 1963").
_END = re.compile(r"[.?!](?=\s|$)|\n|,(?!\s*\d{4}\b)")
_DAY_BEFORE_COMMA = re.compile(r"\d{1,2}$")


def has_answer(text: str) -> bool:
    """Whether a step states the final answer (the loop stops there, before looking at uncertainty)."""
    return "the answer is" in text.lower()


def cut_answer(rest: str) -> str:
    """``rest`` up to where a stated answer ends: a sentence end, a line end or a comma (not the one in a date)."""
    for match in _END.finditer(rest):
        if match.group() != "," or _DAY_BEFORE_COMMA.search(rest[: match.start()]) is None:
            return rest[: match.start()]
    return rest


def extract_answer(text: str) -> str | None:
    """The answer stated in ``text``, or ``None`` when it states none.

    ``"... So the answer is August 25, 1963."`` gives ``"August 25, 1963"``; ``"Paris, France"`` gives ``"Paris"``
    (as the authors' comma rule).  Falls back to ``"... X is the answer"``.
    """
    match = _ANSWER_IS.search(text)
    if match is not None:
        answer = cut_answer(text[match.end() :]).strip().strip("\"'").strip()
        return answer or None
    match = _IS_THE_ANSWER.search(text)
    if match is not None:
        return match.group(1).strip() or None
    return None


def ends_answer(text: str) -> bool:
    """Whether ``text`` holds a mark that ends a stated answer (a sentence end, a line end, a comma)."""
    return _END.search(text) is not None


def is_unknown(answer: str | None) -> bool:
    """A missing answer or one that says "unknown" loses the final choice (SPEC section 5)."""
    return answer is None or not answer.strip() or "unknown" in answer.lower()
