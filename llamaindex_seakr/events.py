"""Typed workflow events for each phase of the SeaKR loop, streamed by ``SeaKRWorkflow``.

A SeaKR answer takes seconds to minutes and its value lies in the decisions along the way.  These events make each
decision visible while it happens (``handler.stream_events()``), in LlamaIndex's own types: nodes are
``NodeWithScore``, and every event also carries the core event's strict-JSON form in ``data`` for logging.

Each class is named after its core event (``seakr_integrations.reasoning.events``) plus ``Event``:
``StepAssessed`` -> ``StepAssessedEvent`` and so on (the table is in the core module's docstring).
"""

from __future__ import annotations

from typing import Any, Literal

from llama_index.core.schema import NodeWithScore
from llama_index.core.workflow import Event, StartEvent, StopEvent

from seakr_integrations.reasoning.records import StopReason

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
