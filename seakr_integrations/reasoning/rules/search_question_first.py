"""The question itself is the first query: its results are kept before the first step, as single retrieval keeps
them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from seakr_integrations.reasoning.rules.base import Decision, Rule

if TYPE_CHECKING:
    from seakr_integrations.reasoning.state import QuestionState


@dataclass(frozen=True)
class SearchQuestionFirst(Rule):
    """Search the question before the first step and keep all of its ``n_candidates`` results, as single retrieval
    does; the loop's steps then read them and search for what they leave out (a name a step states that no kept
    passage covers, ``ClaimCheck``).  The paper's first step reasons from nothing: with a small model every first
    step retrieved anyway, on a query built from a guess, and its answers saw fewer of the supporting passages than
    one search on the question does (``docs/decision_rules.md``)."""

    name: ClassVar[str] = "search-question-first"
    decision: ClassVar[Decision] = "when to retrieve"
    order: ClassVar[float] = 10

    def opening_query(self, state: QuestionState) -> str | None:
        return state.question
