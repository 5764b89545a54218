"""SeaKR (self-aware knowledge retrieval) for LlamaIndex.

Thin adapters over the framework-free core (``seakr_integrations``): they translate types and reuse the core's
logic, so the gate, the re-ranking and the loop decide exactly as ``SeaKR.answer`` does.

* ``SeaKRLLM``: a self-aware back-end as a ``CustomLLM``; uncertainty and samples in ``additional_kwargs``.
* ``UncertaintyGatedRetriever``: any retriever, called only when the model is uncertain.
* ``SelfAwareRerank``: a node post-processor ordering nodes by the uncertainty after reading each.
* ``SeaKRQueryEngine``: the whole loop over any retriever; trace in ``Response.metadata["trace"]``.
* ``SeaKRWorkflow``: the loop as a workflow streaming each phase as a typed event.
* ``PassageRetriever`` (the embedded BM25 index as a LlamaIndex retriever), ``MiniLMEmbedding`` (offline embedder).
"""

from llamaindex_seakr.embedding import MiniLMEmbedding
from llamaindex_seakr.events import (
    FinalAnswerEvent,
    PassagesRerankedEvent,
    PassagesRetrievedEvent,
    ReasoningStepEvent,
    SeaKRPhase,
    SeaKRQuestionEvent,
    SeaKRResultEvent,
    UncertaintyCheckEvent,
)
from llamaindex_seakr.llm import SeaKRLLM
from llamaindex_seakr.nodes import NodeSearch, PassageRetriever, node_to_passage, passage_to_node
from llamaindex_seakr.observer import SeaKRPhaseEvent
from llamaindex_seakr.query_engine import SeaKRQueryEngine
from llamaindex_seakr.rerank import SelfAwareRerank
from llamaindex_seakr.retriever import GateDecision, UncertaintyGatedRetriever, UncertaintyGateEvent
from llamaindex_seakr.workflow import SeaKRWorkflow
from seakr_integrations.backends.concurrent import ConcurrentBackend, concurrent_backend

__all__ = [
    "ConcurrentBackend",
    "FinalAnswerEvent",
    "GateDecision",
    "MiniLMEmbedding",
    "NodeSearch",
    "PassageRetriever",
    "PassagesRerankedEvent",
    "PassagesRetrievedEvent",
    "ReasoningStepEvent",
    "SeaKRLLM",
    "SeaKRPhase",
    "SeaKRPhaseEvent",
    "SeaKRQueryEngine",
    "SeaKRQuestionEvent",
    "SeaKRResultEvent",
    "SeaKRWorkflow",
    "SelfAwareRerank",
    "UncertaintyCheckEvent",
    "UncertaintyGateEvent",
    "UncertaintyGatedRetriever",
    "concurrent_backend",
    "node_to_passage",
    "passage_to_node",
]
