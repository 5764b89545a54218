"""The paper's two choices as pure functions of the numbers they compare (which passage to keep, which final answer
to give), so the loop, the rules and an analysis of stored traces run the same code (``docs/design/reasoning.md``)."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from seakr_integrations.reasoning.answer import is_unknown


def pick_passage(uncertainties: Sequence[float]) -> int:
    """Index of the candidate to keep: the least uncertain (``uncertainties`` in search order, ``inf`` for one that
    cannot be scored); ties keep the search order.

    Raises:
        ValueError: No candidates.
    """
    if not uncertainties:
        raise ValueError("pick_passage needs at least one candidate's uncertainty")
    return min(range(len(uncertainties)), key=lambda i: (uncertainties[i], i))


def pick_final(
    rationales: float,
    knowledge: float,
    *,
    rationales_unknown: bool = False,
    knowledge_unknown: bool = False,
    margin: float = 0.0,
) -> str:
    """``"rationales"`` or ``"knowledge"``: which final answer SeaKR gives.

    A missing or "unknown" answer loses (both missing: knowledge); otherwise rationales wins only when its
    uncertainty is more than ``margin`` below knowledge's (``margin=0``: the paper's rule, a tie to knowledge).

    Raises:
        ValueError: A negative or NaN margin.
    """
    if not margin >= 0:
        raise ValueError(f"margin={margin!r}: must be >= 0 (0 is the paper's less-uncertain rule)")
    if rationales_unknown != knowledge_unknown:
        return "knowledge" if rationales_unknown else "rationales"
    if rationales_unknown:
        return "knowledge"
    return "rationales" if rationales < knowledge - margin else "knowledge"


def choice_needs_samples(rationales: str | None, knowledge: str | None) -> bool:
    """Whether ``pick_final`` between these two answers depends on their uncertainties: only when both are known
    and differ (compared as answers are scored); an unknown one always loses, and agreeing ones give the same answer."""
    if is_unknown(rationales) or is_unknown(knowledge):
        return False
    return comparable_words(rationales or "") != comparable_words(knowledge or "")


_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def comparable_words(text: str) -> str:
    """A text's words as answers are compared when scored: lower case, no punctuation, no a/an/the."""
    return " ".join(_ARTICLES.sub(" ", text.casefold().translate(_PUNCTUATION)).split())
