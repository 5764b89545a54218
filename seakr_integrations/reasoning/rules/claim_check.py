"""Claims checked against the kept passages: a step that names what no kept passage backs searches first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from seakr_integrations.params import check_choice
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.entities import ENGLISH_NAMES, EntityFinder, covers, is_date, titled, uncovered
from seakr_integrations.reasoning.rules.base import Decision, Reads, Rule, check_finder

if TYPE_CHECKING:
    from seakr_integrations.outputs import SelfAwareOutput
    from seakr_integrations.reasoning.state import QuestionState
    from seakr_integrations.retrieval.passage import Passage

ClaimQuery = Literal["entity", "step"]
Backing = Literal["page", "mention"]


@dataclass(frozen=True)
class ClaimCheck(Rule):
    """A step that names an entity no kept passage backs is sent to retrieval, whatever its uncertainty, and the
    passage kept from that search is one that covers an entity the step or the question still lacks (when one
    does).  A small model writes confident, wrong claims about entities it has not read about ("The Blue Bead was
    directed by Enrique Vico Carré", EigenScore far below delta); the paper's gate accepts them and stops searching.

    Attributes:
        entities: Where names are found (``EnglishNames``: capitalised runs and quoted titles).
        query: What such a step searches for: ``"entity"``, the first name it states that no kept passage backs
            (a bridge entity read off a kept passage: "... was directed by Z" searches "Z", which ``AnchorQueries``
            after it may prefix with a question entity still lacking a passage, or with the question's words);
            ``"step"``, the step itself with its low-confidence words masked (the paper's query).
        backing: What backs a name: ``"page"``, a kept passage about it (its title names it), so that a name the
            model read off a passage ("directed by Z") but that has no passage of its own is searched for (dates
            are left out); ``"mention"``, a kept passage that contains its words.
    """

    name: ClassVar[str] = "claim-check"
    decision: ClassVar[tuple[Decision, ...]] = ("when to retrieve", "what to search", "which passage")
    order: ClassVar[float] = 20
    entities: EntityFinder = ENGLISH_NAMES
    query: ClaimQuery = "entity"
    backing: Backing = "page"

    def __post_init__(self) -> None:
        check_finder(self)
        check_choice("query", self.query, ClaimQuery, "the default")
        check_choice("backing", self.backing, Backing, "the default")

    def reads(self) -> Reads:
        return Reads(greedy_step=True)

    def read_step(self, state: QuestionState, text: str, output: SelfAwareOutput) -> GateReason | None:
        if self.unbacked(self.entities.names(text), state.docs):
            return GateReason.UNSUPPORTED_CLAIM
        return None

    def search_query(self, state: QuestionState, query: str) -> str:
        step = state.trace[-1] if state.trace else None
        if self.query == "step" or step is None or step.reason != GateReason.UNSUPPORTED_CLAIM:
            return query
        missing = self.unbacked(self.entities.names(step.pseudo_generation), state.docs)
        return missing[0] if missing else query

    def narrow_candidates(
        self, state: QuestionState, new: list[Passage], text: str, focus: Sequence[str]
    ) -> list[Passage]:
        wanted = list(focus) or self.unbacked(
            [*self.entities.names(text), *self.entities.names(state.question)], state.docs
        )
        backs = titled if self.backing == "page" else covers
        covering = [p for p in new if any(backs(p, e) for e in wanted)]
        return covering or new

    def unbacked(self, names: Sequence[str], passages: Sequence[Passage]) -> list[str]:
        """The ``names`` that no kept passage backs, in order."""
        if self.backing == "mention":
            return uncovered(names, passages)
        return [n for n in names if not is_date(n) and not any(titled(p, n) for p in passages)]
