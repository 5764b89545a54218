"""The loop ends at a step that says what an earlier step said."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from seakr_integrations.reasoning.choices import comparable_words
from seakr_integrations.reasoning.records import StopReason
from seakr_integrations.reasoning.rules.base import Decision, Rule

if TYPE_CHECKING:
    from seakr_integrations.reasoning.state import QuestionState


def repeats_earlier(step: str, earlier: Sequence[str]) -> bool:
    """Whether ``step`` says word for word what one of the ``earlier`` steps said (case, punctuation, spacing and
    the articles a/an/the aside); a step without words repeats nothing."""
    words = comparable_words(step)
    return bool(words) and any(words == comparable_words(e) for e in earlier)


@dataclass(frozen=True)
class StopOnRepeatedStep(Rule):
    """End the loop at a step that repeats an earlier one (case, punctuation and a/an/the aside), leaving the repeat
    out of the chain: it adds nothing to the context, and a small model that repeats itself keeps doing so until the
    step limit.  The paper stops on a repeated query only."""

    name: ClassVar[str] = "stop-on-repeated-step"
    decision: ClassVar[Decision] = "when to stop"
    order: ClassVar[float] = 100

    def ends_at(self, state: QuestionState, text: str, earlier: Sequence[str]) -> StopReason | None:
        return StopReason.REPEATED_STEP if repeats_earlier(text, earlier) else None
