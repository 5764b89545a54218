"""The passage record and the one-method protocol every search back-end implements ("the k best passages for this
query, best first"): small enough that tantivy, Elasticsearch and test doubles stand in for each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrievable unit of text (a Wikipedia paragraph in SeaKR's corpora).

    Frozen so that results can be cached, deduplicated and put in sets without a caller mutating a shared record.

    Attributes:
        id: Corpus-unique identifier, always a string (integer ids from JSON are converted when read).
        title: Title of the page the passage comes from; ``""`` when the corpus has none.
        text: The passage text.  SeaKR gives only this to the LM, the title is used for matching.
        score: The search engine's relevance score (higher = better; only comparable within one result list of
            one engine).  ``0.0`` for passages that were not produced by a search.
    """

    id: str
    title: str
    text: str
    score: float = 0.0

    def to_dict(self) -> dict[str, str | float]:
        """A JSON-ready dict with the corpus fields and the score, e.g. for writing retrieval logs."""
        return {"id": self.id, "title": self.title, "text": self.text, "score": self.score}


@runtime_checkable
class Retriever(Protocol):
    """Anything that returns the ``k`` best passages for a query, ranked best first.

    Runtime-checkable so that adapters can accept any object with a matching ``search`` method and still reject a
    wrong object early with ``isinstance`` (which checks the method's presence, not its signature).
    """

    def search(self, query: str, k: int = 3) -> list[Passage]:
        """The at most ``k`` best passages for ``query``, best first, ``score`` set to the engine's score."""
        ...


def check_search(query: str, k: int) -> None:
    """Refuse a search that is a caller bug: ``query`` not a string (``TypeError``), ``k`` not an integer >= 1 or
    ``query`` empty or only whitespace (``ValueError``)."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k={k!r}: must be an integer >= 1")
    if not query.strip():
        raise ValueError("empty query: pass the text to search for")
