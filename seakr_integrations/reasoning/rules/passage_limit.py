"""The loop stops once it has kept a given number of passages (the paper's limit is ``max_docs``, five)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from seakr_integrations.params import check_int
from seakr_integrations.reasoning.records import StopReason
from seakr_integrations.reasoning.rules.base import Decision, Rule

if TYPE_CHECKING:
    from seakr_integrations.reasoning.state import QuestionState


@dataclass(frozen=True)
class PassageLimit(Rule):
    """Stop after ``max_passages`` kept passages, below the paper's five (``SeaKRConfig.max_docs``).  Each HotpotQA
    question has two supporting passages; with five allowed, half of them kept a third, and the chain of dependent
    calls after it is most of SeaKR's time.  Two was chosen by nested cross-validation (``docs/decision_rules.md``).

    Attributes:
        max_passages: Kept passages after which the loop stops (>= 1).
    """

    name: ClassVar[str] = "passage-limit"
    decision: ClassVar[Decision] = "when to stop"
    order: ClassVar[float] = 110
    max_passages: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_passages", check_int("max_passages", self.max_passages, "an integer >= 1", 1))

    def limit(self, state: QuestionState) -> StopReason | None:
        return StopReason.PASSAGE_LIMIT if len(state.docs) >= self.max_passages else None
