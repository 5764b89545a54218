"""A question that compares entities is not answered while one of them has no kept passage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from seakr_integrations.reasoning.entities import ENGLISH_NAMES, EntityFinder, entity_query, uncovered
from seakr_integrations.reasoning.rules.base import Decision, Rule, check_finder

if TYPE_CHECKING:
    from seakr_integrations.reasoning.state import QuestionState


@dataclass(frozen=True)
class CoverComparedEntities(Rule):
    """A question that compares or joins entities ("X or Y", "X and Y", "both X and Y") is not answered while one
    of them has no kept passage: a step that states the answer then searches for that entity first (the entity and
    the question's relation words), within the step and passage limits.  On 2Wiki, single retrieval's three
    passages covered 57 supporting titles where SeaKR's kept passages covered 40, all of the gap on the questions
    SeaKR answered before it had read about both sides.

    Attributes:
        entities: Where the compared entities and the question's names are found.
    """

    name: ClassVar[str] = "cover-compared-entities"
    decision: ClassVar[Decision] = "when to stop"
    order: ClassVar[float] = 90
    entities: EntityFinder = ENGLISH_NAMES

    def __post_init__(self) -> None:
        check_finder(self)

    def needed_entities(self, state: QuestionState) -> list[str]:
        return uncovered(self.entities.compared(state.question), state.docs)

    def entity_query(self, state: QuestionState, entity: str) -> str:
        return entity_query(entity, state.question, self.entities.names(state.question))
