"""SeaKR (self-aware knowledge retrieval) for LlamaIndex.

Thin adapters over the framework-free core (``seakr_integrations``): they translate types and reuse the core's
logic, so the gate, the re-ranking and the loop decide exactly as ``SeaKR.answer`` does.

* ``SeaKRLLM``: a self-aware back-end as a ``CustomLLM``; uncertainty and samples in ``additional_kwargs``.
* ``UncertaintyGatedRetriever``: any retriever, called only when the model is uncertain.
* ``SelfAwareReranker``: a node post-processor ordering nodes by the uncertainty after reading each.
* ``SeaKRQueryEngine``: the whole loop over any retriever; trace in ``Response.metadata["trace"]``.
* ``SeaKRWorkflow``: the loop as a workflow streaming each phase as a typed event.
* ``seakr_search_tool``: the loop's retrieval as an agent's tool (``FunctionAgent``, ``ReActAgent``,
  ``AgentWorkflow``), its phases streamed with the agent's events; ``SeaKRQueryEngine.as_tool()``: SeaKR's answer
  as a ``QueryEngineTool``.
* ``PassageRetriever`` (the embedded BM25 index as a LlamaIndex retriever), ``MiniLMEmbedding`` (offline embedder).

Exported with them: the events a workflow streams or the instrumentation dispatches, and the gate's
``GateDecision``; the node conversions (``llamaindex_seakr.nodes``) and the core's ``ConcurrentBackend``
(``seakr_integrations.backends.concurrent``) are imported from their modules.
"""

from llamaindex_seakr.agent_tool import seakr_search_tool
from llamaindex_seakr.embedding import MiniLMEmbedding
from llamaindex_seakr.events import (
    AnswerChosenEvent,
    KnowledgeGatheredEvent,
    PassagesRerankedEvent,
    PassagesRetrievedEvent,
    QuestionAnsweredEvent,
    QuestionFailedEvent,
    SeaKRPhase,
    SeaKRQuestionEvent,
    StepAssessedEvent,
    StepFinishedEvent,
)
from llamaindex_seakr.llm import SeaKRLLM
from llamaindex_seakr.nodes import PassageRetriever
from llamaindex_seakr.observer import SeaKRPhaseEvent
from llamaindex_seakr.query_engine import SeaKRQueryEngine
from llamaindex_seakr.rerank import SelfAwareReranker
from llamaindex_seakr.retriever import GateDecidedEvent, GateDecision, UncertaintyGatedRetriever
from llamaindex_seakr.workflow import SeaKRWorkflow
from seakr_integrations import __version__
from seakr_integrations.reasoning.config import SeaKRConfig

__all__ = [
    "AnswerChosenEvent",
    "GateDecidedEvent",
    "GateDecision",
    "KnowledgeGatheredEvent",
    "MiniLMEmbedding",
    "PassageRetriever",
    "PassagesRerankedEvent",
    "PassagesRetrievedEvent",
    "QuestionAnsweredEvent",
    "QuestionFailedEvent",
    "SeaKRConfig",
    "SeaKRLLM",
    "SeaKRPhase",
    "SeaKRPhaseEvent",
    "SeaKRQueryEngine",
    "SeaKRQuestionEvent",
    "SeaKRWorkflow",
    "SelfAwareReranker",
    "StepAssessedEvent",
    "StepFinishedEvent",
    "UncertaintyGatedRetriever",
    "__version__",
    "seakr_search_tool",
]
