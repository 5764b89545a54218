"""SeaKR's decision rules as pure functions of the numbers they compare, so the loop and the offline analysis of
stored traces (``bench/offline_rules.py``) run the same code (``docs/design/reasoning.md``)."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence

from seakr_integrations.reasoning.answer import is_unknown


def pick_passage(uncertainties: Sequence[float], margin: float = 0.0) -> int:
    """Index of the candidate to keep; ``uncertainties`` are in search order (``inf``: unscorable, ranks last).

    The least uncertain candidate wins when it is more than ``margin`` below the first (``margin=0``: the paper's
    rule), else the first is kept; ties keep the search order, and an unscorable first loses to any scorable one.

    Raises:
        ValueError: No candidates, or a negative or NaN margin.
    """
    if not uncertainties:
        raise ValueError("pick_passage needs at least one candidate's uncertainty")
    if not margin >= 0:
        raise ValueError(f"margin={margin!r}: must be >= 0 (0 is the paper's least-uncertain rule)")
    best = min(range(len(uncertainties)), key=lambda i: (uncertainties[i], i))
    first = uncertainties[0]
    if best == 0 or not math.isfinite(first):
        return best
    return best if uncertainties[best] < first - margin else 0


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
    return _words(rationales or "") != _words(knowledge or "")


_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def _words(text: str) -> str:
    """The step's words, compared as answers are scored: lower case, no punctuation, no a/an/the."""
    return " ".join(_ARTICLES.sub(" ", text.casefold().translate(_PUNCTUATION)).split())


def repeats_earlier(step: str, earlier: Sequence[str]) -> bool:
    """Whether ``step`` says word for word what one of the ``earlier`` steps said (case, punctuation, spacing and
    the articles a/an/the aside); a step without words repeats nothing."""
    words = _words(step)
    return bool(words) and any(words == _words(e) for e in earlier)
