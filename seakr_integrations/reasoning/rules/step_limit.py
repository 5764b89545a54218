"""The loop stops after a given number of reasoning steps (the paper's limit is ``max_steps``, seven)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from seakr_integrations.params import check_int
from seakr_integrations.reasoning.records import StopReason
from seakr_integrations.reasoning.rules.base import Decision, Rule

if TYPE_CHECKING:
    from seakr_integrations.reasoning.state import QuestionState


@dataclass(frozen=True)
class StepLimit(Rule):
    """Stop after ``max_steps`` reasoning steps, below the paper's seven (``SeaKRConfig.max_steps``).  Once the
    question's own passages are kept (``SearchQuestionFirst``), the steps that find a missing passage are the first
    ones; later steps mostly restate what the model has read, one LM call each.

    Attributes:
        max_steps: Reasoning steps after which the loop stops (>= 1).
    """

    name: ClassVar[str] = "step-limit"
    decision: ClassVar[Decision] = "when to stop"
    order: ClassVar[float] = 120
    max_steps: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_steps", check_int("max_steps", self.max_steps, "an integer >= 1", 1))

    def limit(self, state: QuestionState) -> StopReason | None:
        return StopReason.STEP_LIMIT if len(state.steps) >= self.max_steps else None
