"""The agent state ``SeaKRMiddleware`` adds to a LangChain v1 agent: the gate's decision for the current turn and
the passage it kept.

Both are plain JSON (a ``GateDecision.to_dict()`` and documents as dicts), so a checkpointer stores them as it
stores messages, and a caller reads the decision from ``agent.invoke(...)["seakr_decision"]`` without importing
anything from seakr.
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
        seakr_decision: The gate's decision for the turn's question, ``GateDecision.to_dict()`` (``reason``,
            ``explanation``, ``uncertainty``, ``delta``, ``num_documents``...); ``GateDecision.from_dict`` reads it
            back.
        seakr_passages: The passage kept for the turn (empty when the model was sure or nothing was found), as
            ``document_to_state`` writes it; its metadata has the gate's and the re-ranking's keys.
        seakr_turn: The id of the human message the decision is for (so the gate runs once per turn, not before
            every model call of it).
    """

    seakr_decision: NotRequired[dict[str, Any] | None]
    seakr_passages: NotRequired[list[dict[str, Any]]]
    seakr_turn: NotRequired[Annotated[str | None, PrivateStateAttr]]


def document_to_state(doc: Document) -> dict[str, Any]:
    """A document as the state holds it: its id, text and metadata (JSON, as checkpointers store state)."""
    return {"id": doc.id, "page_content": doc.page_content, "metadata": dict(doc.metadata)}


def document_from_state(data: dict[str, Any]) -> Document:
    """The document ``document_to_state`` wrote."""
    return Document(page_content=data["page_content"], id=data.get("id"), metadata=dict(data.get("metadata") or {}))
