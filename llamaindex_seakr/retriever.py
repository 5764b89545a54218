"""``UncertaintyGatedRetriever``: retrieve only when the model is unsure, SeaKR's self-aware retrieval gate.

Retrieval costs latency and can distract a model that already knows the answer.  SeaKR's gate asks the model to
write its next step and measures how consistent its k samples are; only an uncertain (or empty) step triggers a
search.  This retriever puts that gate (``SeaKR.assess``, the loop's own rule) in front of any LlamaIndex
retriever, records every decision and tags the nodes with it, so a query engine built on it retrieves adaptively.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import asdict, dataclass
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.schema import NodeWithScore, QueryBundle

from llamaindex_seakr.llm import SeaKRLLM, as_seakr_llm
from llamaindex_seakr.nodes import annotate, as_llama_retriever, plain_uncertainty
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.reasoner import RetrievalError, SeaKR
from seakr_integrations.reasoning.trace import Assessment

__all__ = ["GATE_METADATA_KEYS", "GateDecision", "UncertaintyGateEvent", "UncertaintyGatedRetriever"]

dispatcher = get_dispatcher(__name__)

GATE_METADATA_KEYS = ("seakr_retrieve", "seakr_uncertainty", "seakr_gate_reason", "seakr_delta")
"""Metadata keys the gate adds to every node it returns."""


@dataclass(frozen=True)
class GateDecision:
    """What the gate decided for one query, and why.

    Attributes:
        query: The query.
        retrieve: Whether the wrapped retriever was called.
        reason: Why, in words (uncertain / confident / empty step / always_retrieve).
        uncertainty: The model's uncertainty (higher = less sure; ``inf`` when it could not be measured).
        delta: The threshold it was compared with.
        generation: What the model wrote when assessed (its next step, or its direct answer in single-hop mode).
        states_answer: Whether that generation already states an answer.
        num_nodes: Nodes returned.
    """

    query: str
    retrieve: bool
    reason: str
    uncertainty: float
    delta: float
    generation: str
    states_answer: bool
    num_nodes: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["uncertainty"] = self.uncertainty if math.isfinite(self.uncertainty) else None
        return data


class UncertaintyGateEvent(BaseEvent):
    """Instrumentation event of one gate decision (dispatched for retrievals and skips alike).

    Args:
        query (str): The query.
        retrieve (bool): Whether the wrapped retriever was called.
        reason (str): Why.
        uncertainty (Optional[float]): The uncertainty (``None`` when not finite).
        delta (float): The threshold.
        generation (str): What the model wrote when assessed.
        num_nodes (int): Nodes returned.
    """

    query: str
    retrieve: bool
    reason: str
    uncertainty: float | None
    delta: float
    generation: str
    num_nodes: int

    @classmethod
    def class_name(cls) -> str:
        return "UncertaintyGateEvent"


class UncertaintyGatedRetriever(BaseRetriever):
    """Any LlamaIndex retriever, called only when the model is uncertain about the query.

    For each query the model writes its next reasoning step (multi-hop mode) or its direct answer (single-hop
    mode) with k samples; the gate retrieves when that step is empty or its uncertainty is above ``delta``
    (single-hop: not below), exactly as the SeaKR loop does.  Every returned node gets ``seakr_retrieve``,
    ``seakr_uncertainty``, ``seakr_gate_reason`` and ``seakr_delta`` in its metadata (copies: the wrapped
    retriever's nodes are not modified; the keys are hidden from the LLM and the embedder).  When the gate skips,
    the result is ``[]``; ``last_decision`` and an ``UncertaintyGateEvent`` (instrumentation) say why.

    Args:
        retriever: The LlamaIndex retriever to gate (or a core retriever such as ``BM25Index``).
        llm: The self-aware model that judges (``SeaKRLLM``, or a ``SelfAwareBackend``).
        config: SeaKR's settings (``delta``, ``mode``...); default: ``llm.seakr_config()``.
        always_retrieve: Retrieve whatever the uncertainty (nodes are still tagged with it), e.g. to log
            uncertainties before trusting the gate.
        **kwargs: ``BaseRetriever``'s (``callback_manager``, ``verbose``...).

    Raises:
        TypeError: ``llm`` is not self-aware, or ``retriever`` is not a retriever (at construction).

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
        **kwargs: Any,
    ) -> None:
        self.llm = as_seakr_llm(llm, "UncertaintyGatedRetriever")
        self.retriever = as_llama_retriever(retriever, "UncertaintyGatedRetriever")
        if config is not None and not isinstance(config, SeaKRConfig):
            raise TypeError(f"config must be a SeaKRConfig, got {type(config).__name__}")
        self.config = config or self.llm.seakr_config()
        self.always_retrieve = bool(always_retrieve)
        self._seakr = SeaKR(self.llm.backend, None, self.config)
        self.last_decision: GateDecision | None = None
        """The decision for the latest query (with concurrent queries: whichever finished last)."""
        super().__init__(**kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "UncertaintyGatedRetriever"

    def _check(self, query_bundle: QueryBundle) -> str:
        query = query_bundle.query_str
        if not isinstance(query, str) or not query.strip():
            raise ValueError("the query is empty: the gate needs a question to assess")
        return query.strip()

    def _decide(self, assessment: Assessment) -> tuple[bool, str]:
        u, delta = assessment.uncertainty.value, self.config.delta
        shown = f"{u:.4g}" if math.isfinite(u) else "inf"
        if not assessment.generation.strip():
            reason = "the model wrote nothing (an empty step always retrieves)"
        elif assessment.retrieve:
            reason = f"uncertain: U={shown} " + ("is not below" if self.config.mode == "single_hop" else "exceeds")
            reason += f" delta={delta:g}"
        else:
            reason = f"confident: U={shown} " + ("is below" if self.config.mode == "single_hop" else "is at most")
            reason += f" delta={delta:g}"
        if self.always_retrieve:
            return True, f"always_retrieve=True ({reason})"
        return assessment.retrieve, reason

    def _finish(self, query: str, assessment: Assessment, nodes: list[NodeWithScore] | None) -> list[NodeWithScore]:
        retrieve, reason = self._decide(assessment)
        u = assessment.uncertainty
        meta = {
            "seakr_retrieve": retrieve,
            "seakr_uncertainty": plain_uncertainty(u),
            "seakr_gate_reason": reason,
            "seakr_delta": self.config.delta,
        }
        out = [annotate(n, meta) for n in nodes or []]
        decision = GateDecision(
            query,
            retrieve,
            reason,
            u.value,
            self.config.delta,
            assessment.generation,
            assessment.states_answer,
            len(out),
        )
        self.last_decision = decision
        dispatcher.event(
            UncertaintyGateEvent(
                query=query,
                retrieve=retrieve,
                reason=reason,
                uncertainty=plain_uncertainty(u),
                delta=self.config.delta,
                generation=assessment.generation,
                num_nodes=len(out),
            )
        )
        return out

    def _wrapped_failed(self, query: str, exc: Exception) -> RetrievalError:
        return RetrievalError(
            f"the gated retriever {type(self.retriever).__name__} failed for query {query!r} "
            f"(the model was uncertain, so it had to search): {type(exc).__name__}: {exc}"
        )

    def assess(self, query: str) -> Assessment:
        """The gate's measurement alone (no retrieval): what the model writes for ``query`` and how sure it is."""
        return self._seakr.assess(query)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = self._check(query_bundle)
        assessment = self._seakr.assess(query)
        nodes = None
        if self._decide(assessment)[0]:
            try:
                nodes = self.retriever.retrieve(query_bundle)
            except Exception as exc:
                raise self._wrapped_failed(query, exc) from exc
        return self._finish(query, assessment, nodes)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = self._check(query_bundle)
        assessment = await asyncio.to_thread(self._seakr.assess, query)
        nodes = None
        if self._decide(assessment)[0]:
            try:
                nodes = await self.retriever.aretrieve(query_bundle)
            except Exception as exc:
                raise self._wrapped_failed(query, exc) from exc
        return self._finish(query, assessment, nodes)
