"""Typed workflow events for each phase of the SeaKR loop, streamed by ``SeaKRWorkflow``.

A SeaKR answer takes seconds to minutes and its value lies in the decisions along the way.  These events make each
decision visible while it happens (``handler.stream_events()``), in LlamaIndex's own types: nodes are
``NodeWithScore``, and every event also carries the core event's strict-JSON form in ``data`` for logging.

Each class is named after its core event (``seakr_integrations.reasoning.events``) plus ``Event``:
``StepAssessed`` -> ``StepAssessedEvent`` and so on (the table is in the core module's docstring); ``phase_event``
makes one from the other, for the workflow and the agent tool alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from llama_index.core.schema import NodeWithScore
from llama_index.core.workflow import Event, StartEvent, StopEvent

from llamaindex_seakr.nodes import annotate, plain_uncertainty
from seakr_integrations.reasoning.decisions import CandidateScore
from seakr_integrations.reasoning.events import (
    EVENT_TYPES,
    AnswerChosen,
    GateDecided,
    KnowledgeGathered,
    PassagesReranked,
    PassagesRetrieved,
    QuestionAnswered,
    SeaKREvent,
    StepAssessed,
    StepFinished,
)
from seakr_integrations.reasoning.records import StopReason

if TYPE_CHECKING:
    from llamaindex_seakr.observer import NodeTracker

__all__ = [
    "AnswerChosenEvent",
    "KnowledgeGatheredEvent",
    "PassagesRerankedEvent",
    "PassagesRetrievedEvent",
    "QuestionAnsweredEvent",
    "QuestionFailedEvent",
    "SeaKRPhase",
    "SeaKRQuestionEvent",
    "StepAssessedEvent",
    "StepFinishedEvent",
    "phase_event",
]


class SeaKRQuestionEvent(StartEvent):
    """Starts a run: ``workflow.run(question="...")``."""

    question: str = ""


class SeaKRPhase(Event):
    """Base of the phase events: the question and the core event's JSON form (``data``)."""

    question: str
    data: dict[str, Any]


class StepAssessedEvent(SeaKRPhase):
    """The uncertainty check (core ``StepAssessed``): the model wrote ``generation`` with uncertainty
    ``uncertainty`` (``None`` when not finite) and the gate decided: ``"answer"`` (it stated the answer),
    ``"accept"`` or ``"retrieve"``."""

    step_index: int
    generation: str
    uncertainty: float | None
    decision: Literal["answer", "accept", "retrieve"]


class PassagesRetrievedEvent(SeaKRPhase):
    """A search for ``query`` returned ``nodes`` (core ``PassagesRetrieved``; the retriever's own nodes, best
    first); ``error`` when it failed and the configuration let the answer go on without it."""

    step_index: int
    query: str
    nodes: list[NodeWithScore]
    error: str | None = None


class PassagesRerankedEvent(SeaKRPhase):
    """The self-aware re-ranking (core ``PassagesReranked``): ``nodes`` ordered by the uncertainty after reading
    each (score = ``-U``, ``None`` when unscorable; metadata ``CandidateScore.to_metadata()``), and the id of the
    one kept (``chosen_passage_id``)."""

    step_index: int
    nodes: list[NodeWithScore]
    chosen_passage_id: str | None


class StepFinishedEvent(SeaKRPhase):
    """A round of reasoning is done (core ``StepFinished``): ``accepted`` was appended to the chain; ``stop`` says
    why the loop ends, if it does."""

    step_index: int
    decision: Literal["answer", "accept", "retrieve"]
    accepted: str | None
    stop: StopReason | None


class AnswerChosenEvent(SeaKRPhase):
    """The final self-aware reasoning (core ``AnswerChosen``): every final candidate (``candidates``, by
    strategy), each one's uncertainty (``uncertainties``, ``None`` when not finite) and the winner."""

    answer: str
    strategy: str
    candidates: dict[str, Any]
    uncertainties: dict[str, float | None] = {}


class KnowledgeGatheredEvent(SeaKRPhase):
    """SeaKR's loop ended without its own answer, for an agent's model to answer from (core ``KnowledgeGathered``;
    the agent tool of ``seakr_agent_tool``): the nodes kept, in order, the steps the loop accepted (``rationale``),
    why it stopped, and its cost (``lm_calls``, ``searches``)."""

    nodes: list[NodeWithScore]
    rationale: list[str]
    stop: StopReason
    lm_calls: int
    searches: int


class QuestionFailedEvent(SeaKRPhase):
    """The question failed (core ``QuestionFailed``); the run raises the error right after this event."""

    error: str


class QuestionAnsweredEvent(StopEvent):
    """The run's result (core ``QuestionAnswered``; ``await handler`` returns this event): the answer, the chosen
    nodes and the trace (``SeaKRResult.to_dict()``; ``SeaKRResult.from_dict`` reads it back)."""

    answer: str
    strategy: str
    source_nodes: list[NodeWithScore]
    trace: dict[str, Any]


_PHASES = tuple(t for t in EVENT_TYPES if t not in (QuestionAnswered, GateDecided))
"""The core events that have a phase event (``QuestionAnswered`` is the run's result, and the stand-alone gate's
``GateDecided`` no step of a run)."""


def phase_event(event: SeaKREvent, tracker: NodeTracker) -> SeaKRPhase | None:
    """The phase event for a core event (its passages as the retriever's own nodes, ``tracker.node``), or ``None``
    for an event that is no phase."""
    if not isinstance(event, _PHASES):
        return None
    common = {"question": event.question, "data": event.to_dict()}
    if isinstance(event, StepAssessed):
        s = event.step
        return StepAssessedEvent(
            **common,
            step_index=s.index,
            generation=s.pseudo_generation.strip(),
            uncertainty=plain_uncertainty(s.uncertainty),
            decision=s.decision,
        )
    if isinstance(event, PassagesRetrieved):
        return PassagesRetrievedEvent(
            **common,
            step_index=event.step_index,
            query=event.query,
            nodes=[tracker.node(p) for p in event.passages],
            error=event.error,
        )
    if isinstance(event, PassagesReranked):
        ranked = sorted(event.candidates, key=lambda c: (c.rank_value, c.rank))
        nodes = []
        for c in ranked:
            score = CandidateScore.from_candidate(c)
            nodes.append(annotate(tracker.node(c.passage), score.to_metadata(), score=score.relevance))
        return PassagesRerankedEvent(
            **common, step_index=event.step_index, nodes=nodes, chosen_passage_id=event.chosen_passage_id
        )
    if isinstance(event, StepFinished):
        s = event.step
        return StepFinishedEvent(**common, step_index=s.index, decision=s.decision, accepted=s.accepted, stop=s.stop)
    if isinstance(event, AnswerChosen):
        return AnswerChosenEvent(
            **common,
            answer=event.answer,
            strategy=event.strategy,
            candidates=common["data"]["finals"],
            uncertainties=event.choice.to_metadata()["seakr_final_uncertainties"],
        )
    if isinstance(event, KnowledgeGathered):
        g = event.gathered
        return KnowledgeGatheredEvent(
            **common,
            nodes=[tracker.node(p) for p in g.passages],
            rationale=g.rationale,
            stop=g.stop_reason,
            lm_calls=g.lm_calls,
            searches=g.searches,
        )
    return QuestionFailedEvent(**common, error=common["data"]["error"])
