"""Queries kept on the question: a query that drifts off it gets the question's missing entity or words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from seakr_integrations.reasoning.entities import ENGLISH_NAMES, EntityFinder, anchor_query, uncovered
from seakr_integrations.reasoning.rules.base import Decision, Rule, check_finder

if TYPE_CHECKING:
    from seakr_integrations.reasoning.state import QuestionState


@dataclass(frozen=True)
class AnchorQueries(Rule):
    """A query that names none of the question's entities still lacking a passage gets the first of them; one that
    shares no word with the question gets the question's content words.  The paper searches the masked step as it
    is, and queries drifted off the question ("chocolate chip cookie cookie chocolate Bloody Mary legend" for a
    cocktail question).

    Attributes:
        entities: Where the question's names are found.
    """

    name: ClassVar[str] = "anchor-queries"
    decision: ClassVar[Decision] = "what to search"
    order: ClassVar[float] = 60
    entities: EntityFinder = ENGLISH_NAMES

    def __post_init__(self) -> None:
        check_finder(self)

    def search_query(self, state: QuestionState, query: str) -> str:
        missing = uncovered(self.entities.names(state.question), state.docs)
        return anchor_query(query, state.question, missing)
