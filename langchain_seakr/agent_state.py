"""The agent state ``SeaKRMiddleware`` adds to a LangChain v1 agent: what SeaKR's loop (or the one-shot gate)
decided for the current turn and the passages it kept.

All are plain JSON (a ``GatheredKnowledge.to_dict()``, a ``GateDecision.to_dict()`` and documents as dicts), so a
checkpointer stores them as it stores messages, and a caller reads them from ``agent.invoke(...)["seakr_gathered"]``
without importing anything from seakr.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentState
from langchain.agents.middleware.types import PrivateStateAttr, ResponseT
from langchain_core.documents import Document

__all__ = ["SeaKRAgentState", "document_from_state", "document_to_state"]


class SeaKRAgentState(AgentState[ResponseT]):
    """``AgentState`` with SeaKR's record of the current turn (a turn: one human message and the model and tool
    calls that answer it).

    Attributes:
        seakr_gathered: What the loop decided for the turn's question (``AgentLoop``),
            ``GatheredKnowledge.to_dict()``: every step (its uncertainty, gate decision, query, candidates and the one
            kept), the passages kept, why the loop stopped (``stop_reason``) and its cost (``lm_calls``,
            ``generated_tokens``, ``searches``); ``None`` with the one-shot gate.
        seakr_decision: The one-shot gate's decision for the turn's question (``AgentGate``; ``None`` with the
            loop), ``GateDecision.to_dict()`` (``reason``, ``explanation``, ``uncertainty``, ``delta``,
            ``num_documents``...); ``GateDecision.from_dict`` reads it back.
        seakr_passages: The passages kept for the turn (empty when nothing was needed or found), as
            ``document_to_state`` writes them (metadata: the loop's ``seakr_round``, or the gate's and the
            re-ranking's keys).
        seakr_turn: The id of the human message the record is for (so SeaKR runs once per turn, also when an
            invocation resumes).
    """

    seakr_gathered: NotRequired[dict[str, Any] | None]
    seakr_decision: NotRequired[dict[str, Any] | None]
    seakr_passages: NotRequired[list[dict[str, Any]]]
    seakr_turn: NotRequired[Annotated[str | None, PrivateStateAttr]]


def document_to_state(doc: Document) -> dict[str, Any]:
    """A document as the state holds it: its id, text and metadata (JSON, as checkpointers store state)."""
    return {"id": doc.id, "page_content": doc.page_content, "metadata": dict(doc.metadata)}


def document_from_state(data: dict[str, Any]) -> Document:
    """The document ``document_to_state`` wrote."""
    return Document(page_content=data["page_content"], id=data.get("id"), metadata=dict(data.get("metadata") or {}))
