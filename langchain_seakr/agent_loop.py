"""``AgentLoop``: SeaKR's retrieval loop for one agent turn, with the agent's settings.

An agent's model answers its user; SeaKR decides what it reads first.  The loop is the core's (``SeaKR.gather``:
the steps, gate, query, re-ranking, rules and stops of ``SeaKRChain``, without the chain's own final answer), so a
two-hop question gets its second search: the loop writes a step, sees it names something no passage backs, and
searches again.  This class holds the settings ``SeaKRMiddleware`` runs it with and translates between the core and
LangChain: the retriever (or the agent's retriever tool), documents and callbacks.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.callbacks.manager import CallbackManager
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool
from pydantic import Field, PrivateAttr, field_validator, model_validator

from langchain_seakr._observer import LangChainSearch
from langchain_seakr._runs import ModelRunObserver
from langchain_seakr._seakr import SeaKRComponent
from langchain_seakr._template import check_template
from langchain_seakr.agent_gate import DEFAULT_CONTEXT_TEMPLATE, tool_documents
from seakr_integrations.reasoning.gathered import GatheredKnowledge
from seakr_integrations.setting_conflicts import gate_never_searches

__all__ = ["AgentLoop"]


class AgentLoop(SeaKRComponent):
    """The settings of ``SeaKRMiddleware`` (its default, the loop), and the loop they run.

    ``llm`` (a ``ChatSeaKR``, ``SeaKRLLM``, ``SelfAwareBackend`` or ``None`` for the default model; a ``ChatSeaKR``
    with ``base_url=`` asks a ``seakr serve`` server) writes the loop's steps and measures their uncertainty;
    ``config`` is SeaKR's settings and rules, as for ``SeaKRChain`` (``max_docs`` bounds the passages kept).  The
    agent's own model may be any chat model, and keeps its own tools.
    """

    retriever: Any = Field(exclude=True)
    """What the loop searches: a LangChain retriever, or the agent's retriever tool (``create_retriever_tool(...)``;
    one returning documents as its artifact, ``response_format="content_and_artifact"``, gives one candidate per
    document, one returning text one per blank-line separated block)."""
    context_template: str = DEFAULT_CONTEXT_TEMPLATE
    """How the kept passages reach the agent's model: this text, with ``{passages}`` replaced by them (``title:
    text``, blank lines between), appended to the system message of every model call of the turn."""

    _search: LangChainSearch | None = PrivateAttr(default=None)

    @field_validator("retriever")
    @classmethod
    def _searchable(cls, value: Any) -> BaseRetriever:
        if isinstance(value, BaseRetriever):
            return value
        if isinstance(value, BaseTool):
            return ToolRetriever(tool=value)
        raise TypeError(
            f"retriever must be a LangChain BaseRetriever or the agent's retriever tool (a BaseTool), got "
            f"{type(value).__name__}: SeaKR's loop searches it for every step it is unsure of"
        )

    @field_validator("context_template")
    @classmethod
    def _has_slot(cls, value: str) -> str:
        return check_template(value)

    @model_validator(mode="after")
    def _runs_the_loop(self) -> AgentLoop:
        conflict = gate_never_searches(type(self).__name__, self.config.retrieve)
        if conflict:
            raise ValueError(conflict)
        if self.config.mode != "multi_hop":
            raise ValueError(
                f"config.mode={self.config.mode!r}: the agent loop runs SeaKR's multi-hop loop; for one retrieval "
                "decision per turn use SeaKRMiddleware(one_shot=True, ...)"
            )
        return self

    @property
    def tool_names(self) -> frozenset[str]:
        """The loop leaves the agent's tool calls alone."""
        return frozenset()

    def gather(
        self, question: str, *, callbacks: CallbackManager | None = None
    ) -> tuple[GatheredKnowledge, list[Document]]:
        """SeaKR's loop for ``question``: the trace of what it decided, and the passages it kept as the retriever's
        own documents (metadata ``seakr_round``: the 1-based round that kept it).  Each self-aware call is a run of
        ``llm``, each search the retriever's own run, and each decision a custom event (``seakr_step_assessed``...,
        ending with ``seakr_knowledge_gathered``) on ``callbacks``.

        Raises:
            ValueError: Empty question.
            RetrievalError: A search failed (``on_retrieval_error="raise"``, the default) or took longer than
                ``search_timeout``; the message names the retriever and the query.
        """
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question is empty: the loop needs the user's question")
        run_id = callbacks.parent_run_id if callbacks is not None else None
        observer = ModelRunObserver(callbacks, run_id, self.model_name, self.llm, self.retriever)
        if self._search is None or self._search.retriever is not self.retriever:
            self._search = LangChainSearch(self.retriever)
        (gathered,) = self.seakr(self._search).gather_many([question], observers=[observer])
        kept_in = {s.chosen_passage_id: s.index + 1 for s in gathered.steps if s.chosen_passage_id}
        for s in gathered.steps:  # a question-first search keeps all its results
            for c in s.candidates:
                kept_in.setdefault(c.passage.id, s.index + 1)
        documents = []
        for p in gathered.passages:
            doc = observer.documents.get(p.id) or Document(p.text, id=p.id, metadata={"title": p.title})
            metadata = {**doc.metadata, "seakr_round": kept_in.get(p.id)}
            documents.append(Document(page_content=doc.page_content, id=doc.id, metadata=metadata))
        return gathered, documents


class ToolRetriever(BaseRetriever):
    """The agent's retriever tool as a retriever: called as the model would call it, with the query as its one
    argument; its documents (the artifact), else its text cut at blank lines."""

    tool: BaseTool

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        docs = tool_documents(self.tool, query, run_manager.get_child())
        return docs[:k] if k else docs

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        return name or self.tool.name
