"""A step whose every name a kept passage covers is accepted without samples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.entities import ENGLISH_NAMES, EntityFinder, uncovered
from seakr_integrations.reasoning.rules.base import Decision, Reads, Rule, check_finder

if TYPE_CHECKING:
    from seakr_integrations.outputs import SelfAwareOutput
    from seakr_integrations.reasoning.state import QuestionState


@dataclass(frozen=True)
class AcceptCoveredSteps(Rule):
    """A step that names at least one entity, all of them covered by the kept passages, is accepted without drawing
    samples: it restates what the model read.  The mirror of ``ClaimCheck`` (a name no passage covers retrieves),
    so the samples are drawn only for steps that name nothing.  The k samples are nearly all of SeaKR's cost, and
    on a 0.5B model they carry little information about such steps (``docs/gate_signals.md``).

    Attributes:
        entities: Where names are found.
    """

    name: ClassVar[str] = "accept-covered-steps"
    decision: ClassVar[Decision] = "when to retrieve"
    order: ClassVar[float] = 30
    entities: EntityFinder = ENGLISH_NAMES

    def __post_init__(self) -> None:
        check_finder(self)

    def reads(self) -> Reads:
        return Reads(greedy_step=True)

    def read_step(self, state: QuestionState, text: str, output: SelfAwareOutput) -> GateReason | None:
        names = self.entities.names(text)
        if names and state.docs and not uncovered(names, state.docs):
            return GateReason.SUPPORTED_CLAIM
        return None
