"""SeaKR (Self-aware Knowledge Retrieval): adaptive RAG driven by the LLM's internal-state uncertainty.

The framework-free core (LangChain and LlamaIndex adapters: ``langchain_seakr``, ``llamaindex_seakr``).  It exports
what the quick start writes and gets back; everything else comes from the module that defines it.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version
from typing import Any

from seakr_integrations.reasoning import RetrievalError, SeaKR, SeaKRConfig, SeaKRResult
from seakr_integrations.retrieval import Passage
from seakr_integrations.uncertainty import Uncertainty

__all__ = ["BM25Index", "Passage", "RetrievalError", "SeaKR", "SeaKRConfig", "SeaKRResult", "Uncertainty"]
try:  # the installed distribution's version: one number, kept in pyproject.toml
    __version__ = _version("seakr-integrations")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str) -> Any:
    """``BM25Index`` on first use: tantivy is the ``bm25`` extra, absent from a light client install."""
    if name == "BM25Index":
        from seakr_integrations.retrieval.bm25 import BM25Index

        return BM25Index
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
