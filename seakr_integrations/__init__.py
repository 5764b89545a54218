"""SeaKR (Self-aware Knowledge Retrieval): adaptive RAG driven by the LLM's internal-state uncertainty.

The framework-free core: self-aware LM back-ends (``backends``), uncertainty estimators (``uncertainty``),
retrievers (``retrieval``), the SeaKR loop and its trace (``reasoning``), packaged models (``models``).
LangChain and LlamaIndex adapters live in ``langchain_seakr`` and ``llamaindex_seakr``.
"""

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.outputs import Continuation, SelfAwareOutput
from seakr_integrations.params import SamplingConfig
from seakr_integrations.reasoning import RetrievalError, SeaKR, SeaKRConfig, SeaKRResult
from seakr_integrations.retrieval import BM25Index, Passage, Retriever
from seakr_integrations.uncertainty import Uncertainty, eigenscore, estimate

__all__ = [
    "BM25Index",
    "Continuation",
    "Passage",
    "RetrievalError",
    "Retriever",
    "SamplingConfig",
    "SeaKR",
    "SeaKRConfig",
    "SeaKRResult",
    "SelfAwareBackend",
    "SelfAwareOutput",
    "Uncertainty",
    "eigenscore",
    "estimate",
]
__version__ = "0.1.0"
