"""A question that closes on two options gets one of them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from seakr_integrations.quoting import quoted
from seakr_integrations.reasoning.entities import ENGLISH_NAMES, EntityFinder, option_answer
from seakr_integrations.reasoning.rules.base import Decision, Rule, check_finder

if TYPE_CHECKING:
    from seakr_integrations.reasoning.records import FinalTrace
    from seakr_integrations.reasoning.state import QuestionState


@dataclass(frozen=True)
class AnswerWithOption(Rule):
    """A question that closes on two options ("Which film has the director who died earlier, X or Y?") is answered
    with one of them: an answer naming neither becomes the option whose kept passage names it, else the other final
    answer's option when it names one, else it stays as generated.  The 0.5B model often answers such a question
    with what the comparison went through (the director's name).  It makes no LM call.

    Attributes:
        entities: Where the question's options are found (``EnglishNames``: ", X or Y?").
    """

    name: ClassVar[str] = "answer-with-option"
    decision: ClassVar[Decision] = "how to answer"
    order: ClassVar[float] = 180
    entities: EntityFinder = ENGLISH_NAMES

    def __post_init__(self) -> None:
        check_finder(self)

    def final_answer(self, state: QuestionState, winner: FinalTrace, finals: dict[str, FinalTrace]) -> FinalTrace:
        if not winner.answer:
            return winner
        others = [f.answer for f in finals.values() if f is not winner and f.answer]
        option = option_answer(self.entities.options(state.question), winner.answer, state.docs, others)
        if option == winner.answer:
            return winner
        state.note(
            f"the answer {quoted(winner.answer)} names neither option the question offers, so {quoted(option)} is "
            f"given ({self.name})"
        )
        return replace(winner, answer=option)
