"""SeaKR (Self-aware Knowledge Retrieval): adaptive RAG driven by the LLM's internal-state uncertainty.

The framework-free core: self-aware LM back-ends (``backends``), uncertainty estimators (``uncertainty``),
retrievers (``retrieval``), the SeaKR loop and its trace (``reasoning``), packaged models (``models``).
LangChain and LlamaIndex adapters live in ``langchain_seakr`` and ``llamaindex_seakr``.

This package exports what the core's quick start writes (``SeaKR``, ``SeaKRConfig``, ``BM25Index``) and what it
gets back (``SeaKRResult``, ``Passage``, ``Uncertainty``, ``RetrievalError``); everything else is imported from
the subpackage or module that defines it, so each name has one place to come from.
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
