"""The two final answers are compared by their greedy token probabilities, without samples."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from seakr_integrations.reasoning.answer import is_unknown
from seakr_integrations.reasoning.choices import pick_final
from seakr_integrations.reasoning.rules.base import Decision, FinalReading, Reads, Rule, check_greedy_estimator

if TYPE_CHECKING:
    from seakr_integrations.reasoning.records import FinalTrace


@dataclass(frozen=True)
class FinalFromTokens(Rule):
    """Choose between the answer reasoned from the rationales and the one reasoned from the kept passages by each
    generation's greedy reading (``estimator``), the less uncertain winning as in the paper, a tie to the passages;
    no final answer is sampled.  The paper reads both answers' k samples, two sampled calls a question, most of the
    cost left once the steps are decided without samples.

    Attributes:
        estimator: An estimator of the greedy continuation alone (``"min_token_prob"`` or ``"perplexity"``).
    """

    name: ClassVar[str] = "final-from-tokens"
    decision: ClassVar[Decision] = "how to answer"
    order: ClassVar[float] = 160
    estimator: str = "min_token_prob"

    def __post_init__(self) -> None:
        check_greedy_estimator(self, self.estimator)

    def reads(self) -> Reads:
        return Reads(screen=self.estimator)

    def final_reading(self, reading: FinalReading) -> FinalReading:
        return "none"

    def choose_final(self, rationales: FinalTrace, knowledge: FinalTrace) -> FinalTrace | None:
        strategy = pick_final(
            _reading(rationales),
            _reading(knowledge),
            rationales_unknown=is_unknown(rationales.answer),
            knowledge_unknown=is_unknown(knowledge.answer),
        )
        return rationales if strategy == "rationales" else knowledge


def _reading(final: FinalTrace) -> float:
    return final.screen.value if final.screen is not None else math.nan
