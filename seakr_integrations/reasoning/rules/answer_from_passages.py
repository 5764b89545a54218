"""The final answer is reasoned from the kept passages alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from seakr_integrations.reasoning.rules.base import Decision, Rule

if TYPE_CHECKING:
    from seakr_integrations.reasoning.state import QuestionState


@dataclass(frozen=True)
class AnswerFromPassages(Rule):
    """Answer from the kept passages only, when there are any: no answer is reasoned from the rationales, so there
    is nothing to choose between (one LM call, no samples).  Once the question's own passages are kept
    (``SearchQuestionFirst``), the steps mostly restate them and the answer reasoned from them is the better one
    (``docs/decision_rules.md``)."""

    name: ClassVar[str] = "answer-from-passages"
    decision: ClassVar[Decision] = "how to answer"
    order: ClassVar[float] = 140

    def final_strategies(self, state: QuestionState, wanted: list[str]) -> list[str]:
        if not state.docs or "knowledge" not in wanted or wanted == ["knowledge"]:
            return wanted
        return ["knowledge"]
