"""Query words chosen by spaCy's part-of-speech tags, as the authors' code does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from seakr_integrations.reasoning.rules.base import Decision, Rule

KEPT_TAGS = frozenset({"NOUN", "ADJ", "VERB", "PROPN", "NUM", "ADV"})
"""The part-of-speech tags whose words a query keeps (the authors' list)."""
DROPPED_WORDS = frozenset({"thus", "answer", "is", "so"})
"""Words the authors' code drops whatever their tag (the rationale's own phrasing)."""


@dataclass(frozen=True)
class SpacyQueryWords(Rule):
    """Keep a query's content words by spaCy's part-of-speech tags (nouns, proper nouns, adjectives, verbs, numbers,
    adverbs), as the authors' code does, instead of the built-in stop-word list.  Needs spaCy and its
    ``en_core_web_sm`` model (English)."""

    name: ClassVar[str] = "spacy-query-words"
    decision: ClassVar[Decision] = "what to search"
    order: ClassVar[float] = 70

    def content_words(self, words: Sequence[str]) -> list[str] | None:
        doc = _english_tagger()(" ".join(words))
        return [t.text for t in doc if t.pos_ in KEPT_TAGS and t.text.lower() not in DROPPED_WORDS]


@lru_cache(maxsize=1)
def _english_tagger() -> Any:
    """spaCy's small English pipeline with the tagger alone, loaded once."""
    try:
        import spacy

        return spacy.load("en_core_web_sm", disable=["parser", "ner", "lemmatizer"])
    except (ImportError, OSError) as exc:
        raise ValueError(
            "the spacy-query-words rule needs spaCy and its English model: pip install spacy and install "
            "en_core_web_sm, or leave the rule out (the built-in stop-word list is the default)"
        ) from exc
