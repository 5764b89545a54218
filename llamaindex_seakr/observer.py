"""The per-question hook that runs SeaKR's searches through a LlamaIndex retriever and remembers the nodes.

The core loop only knows passages.  This observer does each search with the LlamaIndex retriever (so its spans,
callbacks and instrumentation events fire as usual), keeps the map from passage id back to the node the retriever
returned, forwards every phase of the loop as an instrumentation event, and lets an async caller stop the question.
"""

from __future__ import annotations

import threading
from typing import Any

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.schema import NodeWithScore

from llamaindex_seakr.nodes import NodeSearch, annotate, passage_to_node
from seakr_integrations.reasoning.decisions import chosen_passage_metadata
from seakr_integrations.reasoning.events import Observer, QuestionAnswered, SeaKREvent
from seakr_integrations.reasoning.trace import SeaKRResult
from seakr_integrations.retrieval.passage import Passage, Retriever

__all__ = ["NodeTracker", "SeaKRPhaseEvent", "StopRequested"]

dispatcher = get_dispatcher(__name__)


class SeaKRPhaseEvent(BaseEvent):
    """Instrumentation event: one phase of the SeaKR loop completed (``kind`` as in the core's events:
    ``step_assessed``, ``passages_retrieved``, ``passages_reranked``, ``step_finished``, ``answer_chosen``,
    ``question_answered``, ``question_failed``; ``data`` its JSON form)."""

    kind: str
    question: str
    data: dict[str, Any]

    @classmethod
    def class_name(cls) -> str:
        return "SeaKRPhaseEvent"


class StopRequested(RuntimeError):
    """The question was stopped by its caller (e.g. a cancelled workflow run)."""


class NodeTracker(Observer):
    """One question's observer: searches through the LlamaIndex retriever and maps passages back to nodes.

    Args:
        stop: Set it to abort the question before its next model call (raises ``StopRequested`` in the loop).
        instrument: Dispatch a ``SeaKRPhaseEvent`` for each phase of the loop.
    """

    def __init__(self, stop: threading.Event | None = None, *, instrument: bool = True) -> None:
        self.nodes: dict[str, NodeWithScore] = {}
        self.stop = stop or threading.Event()
        self.instrument = instrument

    def search(self, retriever: Retriever, query: str, k: int) -> list[Passage]:
        if isinstance(retriever, NodeSearch):
            found = retriever.search_nodes(query, k)
            for passage, node in found:
                self.nodes.setdefault(passage.id, node)
            return [p for p, _ in found]
        return retriever.search(query, k)

    def node(self, passage: Passage) -> NodeWithScore:
        """The node the retriever returned for ``passage`` (a new ``TextNode`` if it came from elsewhere)."""
        return self.nodes.get(passage.id) or passage_to_node(passage)

    def on_lm_start(self, prompts: Any) -> None:
        if self.stop.is_set():
            raise StopRequested("the SeaKR question was stopped by its caller")

    def on_event(self, event: SeaKREvent) -> None:
        if self.instrument:
            dispatcher.event(SeaKRPhaseEvent(kind=event.kind, question=event.question, data=_summary(event)))

    def source_nodes(self, result: SeaKRResult) -> list[NodeWithScore]:
        """The chosen passages as the retriever's nodes (copies), in the order chosen, each with the round it was
        chosen in (``seakr_step``) and its re-ranking score (``CandidateScore.to_metadata()``: ``seakr_uncertainty``
        after reading it...); see ``chosen_passage_metadata``."""
        chosen = chosen_passage_metadata(result)
        return [annotate(self.node(p), chosen.get(p.id, {"seakr_step": None})) for p in result.passages]


def _summary(event: SeaKREvent) -> dict[str, Any]:
    """The event's JSON form; for the answered event only the outcome (the whole trace is the result's)."""
    if isinstance(event, QuestionAnswered):
        result = event.result
        return {
            "kind": event.kind,
            "question_index": event.question_index,
            "question": event.question,
            "answer": result.answer,
            "strategy": result.strategy,
            "stop_reason": result.stop_reason,
        }
    return event.to_dict()
