"""The rationales' answer wins only when it is surer than the knowledge answer by a margin."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from seakr_integrations.params import check_real
from seakr_integrations.reasoning.answer import is_unknown
from seakr_integrations.reasoning.choices import pick_final
from seakr_integrations.reasoning.rules.base import Decision, Rule

if TYPE_CHECKING:
    from seakr_integrations.reasoning.records import FinalTrace


@dataclass(frozen=True)
class FinalMargin(Rule):
    """Give the answer reasoned from the rationales only when its uncertainty is more than ``margin`` below the
    answer reasoned from the kept passages; the paper gives the less uncertain (margin 0).  The passages are read
    text, the rationales the model's own; with the 0.5B model the margin rule scored best on the development fold.

    Attributes:
        margin: In the estimator's units (>= 0).
    """

    name: ClassVar[str] = "final-margin"
    decision: ClassVar[Decision] = "how to answer"
    order: ClassVar[float] = 170
    margin: float = 0.5

    def __post_init__(self) -> None:
        rule = ">= 0 (0: the paper's less uncertain answer)"
        object.__setattr__(
            self, "margin", check_real("margin", self.margin, f"a number {rule}", 0, refusal=f"must be {rule}")
        )

    def choose_final(self, rationales: FinalTrace, knowledge: FinalTrace) -> FinalTrace | None:
        strategy = pick_final(
            rationales.uncertainty.value,
            knowledge.uncertainty.value,
            rationales_unknown=is_unknown(rationales.answer),
            knowledge_unknown=is_unknown(knowledge.answer),
            margin=self.margin,
        )
        return rationales if strategy == "rationales" else knowledge
