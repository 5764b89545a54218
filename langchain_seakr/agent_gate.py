"""``AgentGate``: SeaKR's gate, masked query and re-ranking for one agent turn, with the agent's settings.

An agent has no SeaKR loop around it: the agent's model answers, and SeaKR only decides whether the turn needs a
passage and which one.  Each of those decisions is the core's (``SeaKR.assess``, ``SeaKR.search_query``,
``SeaKR.rerank``, ``GateDecision``); this class holds the settings ``SeaKRMiddleware`` and ``seakr_gate_tool`` share
and translates between the core and LangChain: documents, tool output, callbacks.
"""

from __future__ import annotations

from langchain_core.callbacks.manager import CallbackManager
from langchain_core.documents import Document
from langchain_core.messages import ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool
from pydantic import field_validator, model_validator

from langchain_seakr._conversions import to_passage
from langchain_seakr._observer import LangChainObserver, emit_event, search_documents
from langchain_seakr._seakr import SeaKRComponent
from langchain_seakr._template import check_template
from seakr_integrations.reasoning.decisions import CandidateScore, GateDecision
from seakr_integrations.reasoning.events import GateDecided, PassagesReranked, PassagesRetrieved
from seakr_integrations.reasoning.gate_search import gate_search
from seakr_integrations.setting_conflicts import gate_never_searches

__all__ = ["DEFAULT_CONTEXT_TEMPLATE", "AgentGate", "tool_documents"]

DEFAULT_CONTEXT_TEMPLATE = "Use this passage if it helps to answer the user's question:\n{passages}"
"""How the kept passage is shown to the agent's model (appended to its system message)."""


class AgentGate(SeaKRComponent):
    """The settings of ``SeaKRMiddleware`` (and ``seakr_gate_tool``), and the gate they run.

    ``llm`` (a ``ChatSeaKR``, ``SeaKRLLM``, ``SelfAwareBackend`` or ``None`` for the default model; a ``ChatSeaKR``
    with ``base_url=`` asks a ``seakr serve`` server) measures the uncertainty; ``config`` is SeaKR's settings
    (``delta``, ``n_candidates`` passages searched per query, ``mode``...), as for every SeaKR component.  The agent's
    own model may be any chat model: SeaKR judges the question with its self-aware model, which can be a small one
    next to a large agent model.
    """

    retriever: BaseRetriever | BaseTool | None = None
    """What runs SeaKR's query when the model is unsure: a LangChain retriever, or the agent's retriever tool (e.g.
    ``create_retriever_tool(...)``; one returning documents as its artifact, ``response_format=
    "content_and_artifact"``, gives one candidate per document, one returning text one candidate per blank-line
    separated block).  ``None``: the gate only decides (and skips retriever-tool calls when sure)."""
    retriever_tool: str | None = None
    """The name of the agent's retriever tool, whose calls ``skip_tool_when_sure`` skips; default: ``retriever``'s
    name when it is a tool."""
    skip_tool_when_sure: bool = True
    """When the model is sure, answer a retriever-tool call the model asked for with a note instead of searching.
    ``False``: only force retrieval when unsure, and leave the model's own tool calls alone."""
    context_template: str = DEFAULT_CONTEXT_TEMPLATE
    """How the kept passage reaches the agent's model: this text, with ``{passages}`` replaced by the passage
    (``title: text``), appended to the system message of every model call of the turn.  Other braces are written
    doubled (``{{`` and ``}}``); a template ``str.format`` cannot fill is refused here, naming them."""

    @field_validator("context_template")
    @classmethod
    def _has_slot(cls, value: str) -> str:
        return check_template(value)

    @model_validator(mode="after")
    def _consistent(self) -> AgentGate:
        if self.retriever_tool is not None and not self.skip_tool_when_sure:
            raise ValueError(
                f"retriever_tool={self.retriever_tool!r} names the tool whose calls are skipped when the model is "
                "sure, but skip_tool_when_sure=False skips none: drop retriever_tool, or set skip_tool_when_sure=True"
            )
        conflict = gate_never_searches(type(self).__name__, self.config.retrieve)
        if conflict and self.retriever is not None:
            raise ValueError(conflict)
        return self

    @property
    def tool_names(self) -> frozenset[str]:
        """The retriever-tool names whose calls the gate may skip."""
        if self.retriever_tool is not None:
            return frozenset({self.retriever_tool})
        if isinstance(self.retriever, BaseTool):
            return frozenset({self.retriever.name})
        return frozenset()

    def decide(self, question: str, *, callbacks: CallbackManager | None = None, retrieve: bool = True) -> GateDecision:
        """The gate for ``question``; when it says retrieve (and ``retrieve`` and a ``retriever``), SeaKR's masked
        query is searched and the passage after which the model is surest is kept (``decision.documents``, with the
        gate's and the re-ranking's metadata).  Events go to ``callbacks``: ``seakr_passages_retrieved``,
        ``seakr_passages_reranked``, then ``seakr_gate_decided``; the self-aware calls are LLM runs.

        The search gets ``search_timeout`` seconds; with ``on_retrieval_error="answer_without"`` a failed search
        keeps no passage and ``decision.error`` says why.

        Raises:
            ValueError: Empty question.
            RetrievalError: The retriever (tool) failed, returned nothing usable (``None``) or took longer than
                ``search_timeout`` (``on_retrieval_error="raise"``, the default); the message names it and the query.
        """
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question is empty: the gate needs the user's question to assess")
        run_id = callbacks.parent_run_id if callbacks is not None else None
        observer = LangChainObserver(callbacks, run_id, self.model_name)
        seakr = self.seakr()
        (assessment,) = seakr.assess_many([question], observers=[observer])
        decision = GateDecision.from_assessment(assessment, seakr.config)
        kept: list[Document] = []
        error = None
        if decision.retrieve and retrieve and self.retriever is not None:
            query = seakr.search_query(assessment).text
            found, error = gate_search(
                lambda: self._search(query, seakr.config.n_candidates, callbacks),
                query,
                what=f"the retriever {self.retriever.get_name()}",
                search_timeout=self.search_timeout,
                on_retrieval_error=self.on_retrieval_error,
                why=" (SeaKR's query: the model was unsure)",
            )
            passages = [to_passage(d, r) for r, d in enumerate(found, 1)]
            observer.on_event(PassagesRetrieved(0, question, 0, query, tuple(passages), error))
            if passages:
                (ranked,) = seakr.rerank_many([(question, passages)], observers=[observer])
                chosen = next(c for c in ranked if c.chosen)
                observer.on_event(PassagesReranked(0, question, 0, tuple(ranked), chosen.passage.id))
                doc = found[chosen.rank - 1]
                score = CandidateScore.from_candidate(chosen)
                metadata = {**doc.metadata, **decision.to_metadata(), **score.to_metadata()}
                kept = [Document(page_content=doc.page_content, id=doc.id, metadata=metadata)]
        decision = decision.with_documents(kept, error)
        if callbacks is not None:
            emit_event(callbacks, GateDecided(0, question, decision), run_id)
        return decision

    def _search(self, query: str, k: int, callbacks: CallbackManager | None) -> list[Document]:
        if isinstance(self.retriever, BaseRetriever):
            return search_documents(self.retriever, query, k, callbacks)
        return tool_documents(self.retriever, query, callbacks)[:k]  # type: ignore[arg-type]


def tool_documents(tool: BaseTool, query: str, callbacks: CallbackManager | None) -> list[Document]:
    """Call a retriever tool as the model would, with ``query`` as its one argument; its documents (the artifact),
    else its text cut at blank lines.

    Raises:
        TypeError: The tool returned ``None`` (LangChain writes it as the text ``null``).
    """
    args = list(tool.args) or ["query"]
    call = {"name": tool.name, "args": {args[0]: query}, "id": "seakr_query", "type": "tool_call"}
    out = tool.invoke(call, config={"callbacks": callbacks} if callbacks is not None else None)
    artifact = getattr(out, "artifact", None)
    if isinstance(artifact, list) and artifact and all(isinstance(d, Document) for d in artifact):
        return list(artifact)
    text = out.text if isinstance(out, ToolMessage) else str(out)
    if out is None or (isinstance(out, ToolMessage) and text.strip() == "null" and artifact is None):
        raise TypeError(
            f"the retriever tool {tool.name} returned None: it must return the passages as text (blank lines between "
            "them; an empty text when nothing matches), or with response_format='content_and_artifact' the text and "
            "the list of Documents"
        )
    return [Document(page_content=block.strip()) for block in text.split("\n\n") if block.strip()]
