"""A loop that kept no passage answers from its rationales alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from seakr_integrations.reasoning.rules.base import Decision, Rule

if TYPE_CHECKING:
    from seakr_integrations.reasoning.state import QuestionState


@dataclass(frozen=True)
class NoKnowledgeWithoutPassages(Rule):
    """When the loop kept no passage, answer from the rationales alone: reasoning "from knowledge" with no passage
    is a closed-book answer, so the paper's comparison of the two costs a call and chooses between the same
    model's two guesses.  Applies with ``final_strategy="knowledge"`` too."""

    name: ClassVar[str] = "no-knowledge-without-passages"
    decision: ClassVar[Decision] = "how to answer"
    order: ClassVar[float] = 130

    def final_strategies(self, state: QuestionState, wanted: list[str]) -> list[str]:
        if state.docs or "knowledge" not in wanted:
            return wanted
        state.note("no passage was kept, so the answer is reasoned from the rationales alone")
        return ["rationales"]
