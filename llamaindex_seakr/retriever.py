"""``UncertaintyGatedRetriever``: retrieve only when the model is unsure, SeaKR's self-aware retrieval gate.

Retrieval costs latency and can distract a model that already knows the answer.  SeaKR's gate asks the model to
write its next step and measures how consistent its k samples are; only an uncertain (or empty) step triggers a
search.  This retriever puts that gate (``SeaKR.assess``, the loop's own rule) in front of any LlamaIndex
retriever, records every decision and tags the nodes with it, so a query engine built on it retrieves adaptively.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.schema import NodeWithScore, QueryBundle

from llamaindex_seakr._seakr import ComponentLoop, SeaKRComponent, as_seakr_llm, checked_question
from llamaindex_seakr.llm import SeaKRLLM
from llamaindex_seakr.nodes import annotate, as_llama_retriever, checked_nodes, explained_retrieval
from seakr_integrations.keywords import accepted_keywords, check_keywords
from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT, RetrievalErrorPolicy, check_search_settings
from seakr_integrations.reasoning.config import SETTING_NAMES, SeaKRConfig
from seakr_integrations.reasoning.decisions import GATE_METADATA_KEYS, GateDecision
from seakr_integrations.reasoning.events import GateDecided
from seakr_integrations.reasoning.gate_search import agate_search, gate_search
from seakr_integrations.reasoning.records import Assessment
from seakr_integrations.setting_conflicts import gate_never_searches

__all__ = ["GATE_METADATA_KEYS", "GateDecidedEvent", "GateDecision", "UncertaintyGatedRetriever"]

dispatcher = get_dispatcher(__name__)


class GateDecidedEvent(BaseEvent):
    """Instrumentation event of one gate decision (core ``GateDecided``; dispatched for retrievals and skips alike).

    Args:
        query (str): The query.
        retrieve (bool): Whether the wrapped retriever was called.
        reason (str): Why (a ``GateReason`` value: ``uncertain``, ``confident``, ``empty_generation``,
            ``always_retrieve``, ``never_retrieve``).
        explanation (str): The reason in words, with the numbers compared.
        uncertainty (Optional[float]): The uncertainty (``None`` when not finite).
        delta (float): The threshold.
        generation (str): What the model wrote when assessed.
        num_documents (int): Nodes returned.
        data (dict): The core event's strict-JSON form.
    """

    query: str
    retrieve: bool
    reason: str
    explanation: str
    uncertainty: float | None
    delta: float
    generation: str
    num_documents: int
    data: dict[str, Any]

    @classmethod
    def class_name(cls) -> str:
        return "GateDecidedEvent"


class UncertaintyGatedRetriever(SeaKRComponent, BaseRetriever):
    """Any LlamaIndex retriever, called only when the model is uncertain about the query.

    For each query the model writes its next reasoning step (multi-hop mode) or its direct answer (single-hop
    mode) with k samples; the gate retrieves when that step is empty or its uncertainty is above ``delta``
    (single-hop: not below), exactly as the SeaKR loop does.  Every returned node gets the decision's metadata
    (``GateDecision.to_metadata()``: ``seakr_gate_retrieve``, ``seakr_gate_reason``, ``seakr_gate_uncertainty``,
    ``seakr_gate_delta``, the same as LangChain's gated retriever puts on its documents) on copies: the wrapped
    retriever's nodes are not modified, and the keys are hidden from the LLM and the embedder.  When the gate skips,
    the result is ``[]``; ``last_decision`` and a ``GateDecidedEvent`` (instrumentation) say why.

    Args:
        retriever: The LlamaIndex retriever to gate (or a core retriever such as ``BM25Index``).
        llm: The self-aware model that judges (``SeaKRLLM``, or a ``SelfAwareBackend``).
        config: SeaKR's settings (``delta``, ``mode``...): the gate samples as ``llm`` does, except where
            ``config`` changes a setting from its default (``SeaKRLLM.loop_config``).
        always_retrieve: Retrieve whatever the uncertainty; the uncertainty is still measured and recorded
            (reason ``always_retrieve``), e.g. to log uncertainties before trusting the gate.
        search_timeout: Seconds the wrapped retriever may take before the search fails like any retrieval error
            (``None``: no limit); as for ``SeaKRQueryEngine``.
        on_retrieval_error: ``"raise"`` (the default: a ``RetrievalError`` naming the retriever and the query), or
            ``"answer_without"``: the gate returns ``[]`` and ``last_decision.error`` says why.
        **kwargs: ``BaseRetriever``'s (``callback_manager``, ``verbose``...).

    Raises:
        TypeError: ``llm`` is not self-aware, ``retriever`` is not a retriever, or an unknown keyword (the error
            names the nearest one), at construction.
        ValueError: ``config.retrieve='never'`` (the retriever would never be called), or a bad search setting.

    Example:
        >>> gated = UncertaintyGatedRetriever(index.as_retriever(), SeaKRLLM(backend="hf"))  # doctest: +SKIP
        >>> gated.retrieve("Who wrote Hamlet?")  # doctest: +SKIP
        >>> gated.last_decision.reason  # doctest: +SKIP
    """

    def __init__(
        self,
        retriever: Any,
        llm: SeaKRLLM | Any,
        config: SeaKRConfig | None = None,
        *,
        always_retrieve: bool = False,
        search_timeout: float | None = DEFAULT_SEARCH_TIMEOUT,
        on_retrieval_error: RetrievalErrorPolicy = "raise",
        **kwargs: Any,
    ) -> None:
        check_keywords(
            "UncertaintyGatedRetriever", kwargs, accepted_keywords(type(self)), config_settings=SETTING_NAMES
        )
        self.llm = as_seakr_llm(llm, "UncertaintyGatedRetriever")
        self.retriever = as_llama_retriever(retriever, "UncertaintyGatedRetriever")
        self._seakr_loop = ComponentLoop(config)  # the gate's loop never searches: it calls the retriever itself
        conflict = gate_never_searches("UncertaintyGatedRetriever", config.retrieve) if config is not None else None
        if conflict:
            raise ValueError(conflict)
        self.always_retrieve = bool(always_retrieve)
        self.search_timeout, self.on_retrieval_error = check_search_settings(search_timeout, on_retrieval_error)
        self.last_decision: GateDecision | None = None
        """The decision for the latest query (with concurrent queries: whichever finished last)."""
        super().__init__(**kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "UncertaintyGatedRetriever"

    def decide(self, query: str) -> GateDecision:
        """Run the gate for ``query`` and return its decision with the nodes behind it (``documents``), as
        LangChain's gated retriever's ``decide`` does; also ``last_decision``.

        Raises:
            ValueError: Empty query.
            RetrievalError: The wrapped retriever failed, returned no list of ``NodeWithScore`` or took longer than
                ``search_timeout`` while the model was uncertain (``on_retrieval_error="raise"``, the default; with
                ``"answer_without"`` the decision has no nodes and its ``error`` says why).
        """
        self._retrieve(QueryBundle(query_str=query))
        assert self.last_decision is not None
        return self.last_decision

    def _check(self, query_bundle: QueryBundle) -> str:
        return checked_question(query_bundle.query_str, "the query is empty: the gate needs a question to assess")

    def _decide(self, assessment: Assessment) -> GateDecision:
        return GateDecision.from_assessment(assessment, self.seakr.config, always_retrieve=self.always_retrieve)

    def _finish(
        self, decision: GateDecision, nodes: list[NodeWithScore] | None, error: str | None = None
    ) -> list[NodeWithScore]:
        metadata = decision.to_metadata()
        out = [annotate(n, metadata) for n in nodes or []]
        decision = decision.with_documents(out, error)
        self.last_decision = decision
        data = GateDecided(0, decision.query, decision).to_dict()
        dispatcher.event(
            GateDecidedEvent(
                query=decision.query,
                retrieve=decision.retrieve,
                reason=decision.reason.value,
                explanation=decision.explanation,
                uncertainty=metadata["seakr_gate_uncertainty"],
                delta=decision.delta,
                generation=decision.generation,
                num_documents=len(out),
                data=data,
            )
        )
        return out

    def _nodes(self, query_bundle: QueryBundle) -> Any:
        with explained_retrieval(type(self.retriever).__name__):
            return self.retriever.retrieve(query_bundle)

    async def _anodes(self, query_bundle: QueryBundle) -> Any:
        with explained_retrieval(type(self.retriever).__name__):
            return await self.retriever.aretrieve(query_bundle)

    @property
    def _search_settings(self) -> dict[str, Any]:
        """How the wrapped retriever is searched: within ``search_timeout``, its nodes checked, a failure as
        ``on_retrieval_error`` says."""
        name = type(self.retriever).__name__
        return {
            "what": f"the gated retriever {name}",
            "search_timeout": self.search_timeout,
            "on_retrieval_error": self.on_retrieval_error,
            "why": " (the model was uncertain, so it had to search)",
            "check": lambda nodes: checked_nodes(name, nodes),
        }

    def assess(self, query: str) -> Assessment:
        """The gate's measurement alone (no retrieval): what the model writes for ``query`` and how sure it is."""
        return self.seakr.assess(query)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = self._check(query_bundle)
        decision = self._decide(self.seakr.assess(query))
        nodes, error = None, None
        if decision.retrieve:
            nodes, error = gate_search(lambda: self._nodes(query_bundle), query, **self._search_settings)
        return self._finish(decision, nodes, error)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = self._check(query_bundle)
        decision = self._decide(await asyncio.to_thread(self.seakr.assess, query))
        nodes, error = None, None
        if decision.retrieve:
            nodes, error = await agate_search(self._anodes(query_bundle), query, **self._search_settings)
        return self._finish(decision, nodes, error)
