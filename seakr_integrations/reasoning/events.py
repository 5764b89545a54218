"""What the reasoning loop reports while it runs (for streaming), and the hooks a framework adapter plugs into it.

Events are snapshots: a consumer may hold them while the loop goes on.  Each phase has one core event class, and
the adapters derive its names (:func:`langchain_event_name`, :func:`llamaindex_event_name`):

=================  ==========================  ===========================  =========================================
core event         ``kind``                    LangChain custom event       LlamaIndex event
=================  ==========================  ===========================  =========================================
StepAssessed       ``step_assessed``           ``seakr_step_assessed``      ``StepAssessedEvent`` (workflow)
PassagesRetrieved  ``passages_retrieved``      ``seakr_passages_retrieved`` ``PassagesRetrievedEvent`` (workflow)
PassagesReranked   ``passages_reranked``       ``seakr_passages_reranked``  ``PassagesRerankedEvent`` (workflow)
StepFinished       ``step_finished``           ``seakr_step_finished``      ``StepFinishedEvent`` (workflow)
AnswerChosen       ``answer_chosen``           ``seakr_answer_chosen``      ``AnswerChosenEvent`` (workflow)
KnowledgeGathered  ``knowledge_gathered``      ``seakr_knowledge_gathered`` ``KnowledgeGatheredEvent`` (agent tool)
QuestionAnswered   ``question_answered``       ``seakr_question_answered``  ``QuestionAnsweredEvent`` (workflow stop)
QuestionFailed     ``question_failed``         ``seakr_question_failed``    ``QuestionFailedEvent`` (workflow)
GateDecided        ``gate_decided``            ``seakr_gate_decided``       ``GateDecidedEvent`` (instrumentation)
=================  ==========================  ===========================  =========================================

``EVENT_TYPES`` lists the core classes.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from seakr_integrations.reasoning.decisions import FinalChoice, GateDecision
from seakr_integrations.reasoning.gathered import GatheredKnowledge
from seakr_integrations.reasoning.jsonform import _plain
from seakr_integrations.reasoning.records import CandidateTrace, FinalTrace, StepTrace
from seakr_integrations.reasoning.trace import SeaKRResult
from seakr_integrations.retrieval.passage import Passage, Retriever

if TYPE_CHECKING:
    from seakr_integrations.outputs import SelfAwareOutput
    from seakr_integrations.uncertainty.estimate import Uncertainty


def snapshot(step: StepTrace) -> StepTrace:
    """A copy of ``step`` that later rounds of the loop cannot change."""
    copied = copy.copy(step)
    copied.masked_words = list(step.masked_words)
    copied.candidates = [copy.copy(c) for c in step.candidates]
    return copied


@dataclass(frozen=True)
class SeaKREvent:
    """Base of every event: which question (its position in the batch, and its text) it belongs to.

    ``kind`` is the class name in snake_case (``StepAssessed`` -> ``"step_assessed"``), set for every subclass.
    """

    kind: ClassVar[str] = "event"
    question_index: int
    question: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.kind = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON form with the event's ``kind``."""
        return _plain({"kind": self.kind, **{name: getattr(self, name) for name in self.__dataclass_fields__}})


@dataclass(frozen=True)
class StepAssessed(SeaKREvent):
    """The uncertainty check: a pseudo-generation was scored and the gate decided (``step.decision``)."""

    step: StepTrace


@dataclass(frozen=True)
class PassagesRetrieved(SeaKREvent):
    """A search ran for ``query`` and returned ``passages`` (best first; empty when it failed, see ``error``)."""

    step_index: int
    query: str
    passages: tuple[Passage, ...]
    error: str | None = None


@dataclass(frozen=True)
class PassagesReranked(SeaKREvent):
    """The self-aware re-ranking of one round: each new passage's uncertainty and the id of the one kept."""

    step_index: int
    candidates: tuple[CandidateTrace, ...]
    chosen_passage_id: str | None


@dataclass(frozen=True)
class StepFinished(SeaKREvent):
    """One round of reasoning is complete: what was appended to the chain and whether the loop stops."""

    step: StepTrace


@dataclass(frozen=True)
class AnswerChosen(SeaKREvent):
    """The final self-aware reasoning: every final candidate and the strategy that won."""

    finals: dict[str, FinalTrace]
    strategy: str
    answer: str

    @property
    def choice(self) -> FinalChoice:
        """The decision as the core's record (what adapters put in metadata)."""
        return FinalChoice.from_finals(self.finals, self.strategy, self.answer)


@dataclass(frozen=True)
class KnowledgeGathered(SeaKREvent):
    """The loop ended without its own answer (``SeaKR.gather``: another model answers): the passages kept and the
    trace of how."""

    gathered: GatheredKnowledge


@dataclass(frozen=True)
class QuestionAnswered(SeaKREvent):
    """The question is done; ``result`` holds the answer and the whole trace."""

    result: SeaKRResult = field(repr=False)


@dataclass(frozen=True)
class QuestionFailed(SeaKREvent):
    """The question failed with ``error``; the other questions of the batch went on."""

    error: Exception = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "question_index": self.question_index,
            "question": self.question,
            "error": f"{type(self.error).__name__}: {self.error}",
        }


@dataclass(frozen=True)
class GateDecided(SeaKREvent):
    """The self-aware retrieval gate decided for one query, on its own (the adapters' gated retrievers)."""

    decision: GateDecision


EVENT_TYPES: tuple[type[SeaKREvent], ...] = (
    StepAssessed,
    PassagesRetrieved,
    PassagesReranked,
    StepFinished,
    AnswerChosen,
    KnowledgeGathered,
    QuestionAnswered,
    QuestionFailed,
    GateDecided,
)
"""Every core event, in the order the loop emits them (the gate's stands alone)."""


def langchain_event_name(event: type[SeaKREvent] | SeaKREvent) -> str:
    """The LangChain custom event name of a core event: ``seakr_<kind>``."""
    return f"seakr_{event.kind}"


def llamaindex_event_name(event: type[SeaKREvent] | SeaKREvent) -> str:
    """The LlamaIndex event class name of a core event: ``<core class name>Event``."""
    cls = event if isinstance(event, type) else type(event)
    return f"{cls.__name__}Event"


class Observer:
    """Per-question hooks into the loop; every method is optional (the defaults do nothing / search plainly).

    One observer serves one question, so an adapter can attach that question's calls and searches to its run in
    the framework (a LangChain run manager, a LlamaIndex span) even in a batch.  Hooks run on the driver thread,
    except ``search``, on a search thread (with the driver thread's context variables); an exception raised in a
    hook fails its own question only.
    """

    def on_event(self, event: SeaKREvent) -> None:
        """A phase of the loop completed (see the event classes)."""

    def on_lm_start(self, prompts: Sequence[str]) -> None:
        """This question's prompts are about to be generated (possibly in a batch with other questions')."""

    def on_lm_end(self, outputs: Sequence[SelfAwareOutput], uncertainties: Sequence[Uncertainty]) -> None:
        """The prompts of the last ``on_lm_start`` were generated and scored, in the same order."""

    def on_lm_error(self, error: BaseException) -> None:
        """The back-end call that held this question's prompts failed with ``error`` (it is raised after)."""

    def search(self, retriever: Retriever, query: str, k: int) -> list[Passage]:
        """Run the search; override to route it through a framework (callbacks, spans)."""
        return retriever.search(query, k)
