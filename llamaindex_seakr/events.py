"""Typed workflow events for each phase of the SeaKR loop, streamed by ``SeaKRWorkflow``.

A SeaKR answer takes seconds to minutes and its value lies in the decisions along the way.  These events make each
decision visible while it happens (``handler.stream_events()``), in LlamaIndex's own types: nodes are
``NodeWithScore``, and every event also carries the core event's strict-JSON form in ``data`` for logging.
"""

from __future__ import annotations

from typing import Any, Literal

from llama_index.core.schema import NodeWithScore
from llama_index.core.workflow import Event, StartEvent, StopEvent

__all__ = [
    "FinalAnswerEvent",
    "PassagesRerankedEvent",
    "PassagesRetrievedEvent",
    "ReasoningStepEvent",
    "SeaKRPhase",
    "SeaKRQuestionEvent",
    "SeaKRResultEvent",
    "UncertaintyCheckEvent",
]


class SeaKRQuestionEvent(StartEvent):
    """Starts a run: ``workflow.run(question="...")``."""

    question: str = ""


class SeaKRPhase(Event):
    """Base of the phase events: the question and the core event's JSON form (``data``)."""

    question: str
    data: dict[str, Any]


class UncertaintyCheckEvent(SeaKRPhase):
    """The uncertainty check: the model wrote ``generation`` with uncertainty ``uncertainty`` (``None`` when not
    finite) and the gate decided: ``"answer"`` (it stated the answer), ``"accept"`` or ``"retrieve"``."""

    step_index: int
    generation: str
    uncertainty: float | None
    decision: Literal["answer", "accept", "retrieve"]


class PassagesRetrievedEvent(SeaKRPhase):
    """A search for ``query`` returned ``nodes`` (the retriever's own nodes, best first); ``error`` when it failed
    and the configuration let the answer go on without it."""

    step_index: int
    query: str
    nodes: list[NodeWithScore]
    error: str | None = None


class PassagesRerankedEvent(SeaKRPhase):
    """The self-aware re-ranking: ``nodes`` ordered by the uncertainty after reading each (score = ``-U``,
    metadata ``seakr_uncertainty`` / ``seakr_generation``), and the id of the one kept (``chosen``)."""

    step_index: int
    nodes: list[NodeWithScore]
    chosen: str | None


class ReasoningStepEvent(SeaKRPhase):
    """A round of reasoning is done: ``accepted`` was appended to the chain; ``stop`` says why the loop ends, if
    it does."""

    step_index: int
    decision: Literal["answer", "accept", "retrieve"]
    accepted: str | None
    stop: str | None


class FinalAnswerEvent(SeaKRPhase):
    """The final self-aware reasoning: every final candidate (``candidates``, by strategy) and the winner."""

    answer: str
    strategy: str
    candidates: dict[str, Any]


class SeaKRResultEvent(StopEvent):
    """The run's result (``await handler`` returns this event): the answer, the chosen nodes and the trace."""

    answer: str
    strategy: str
    source_nodes: list[NodeWithScore]
    trace: dict[str, Any]
