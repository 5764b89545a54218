"""Query words chosen by spaCy's part-of-speech tags, as the authors' code does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from seakr_integrations.reasoning.rules.base import Decision, Rule


@dataclass(frozen=True)
class SpacyQueryWords(Rule):
    """Keep a query's content words by spaCy's part-of-speech tags (nouns, proper nouns, adjectives, verbs, numbers,
    adverbs), as the authors' code does, instead of the built-in stop-word list.  Needs spaCy and its
    ``en_core_web_sm`` model (English)."""

    name: ClassVar[str] = "spacy-query-words"
    decision: ClassVar[Decision] = "when to retrieve"

    def content_filter(self) -> str | None:
        return "spacy"
