"""Retrieval: the passage record, the :class:`Retriever` protocol, corpus reading, the embedded BM25 index and the
Elasticsearch back-end.

The loop depends only on :class:`Retriever` (the back-ends: docs/design/core.md).  Exported: what a user builds or
searches with, and the errors a search or build can raise.
"""

from typing import Any

from seakr_integrations.retrieval.elasticsearch import ElasticsearchRetriever
from seakr_integrations.retrieval.es_errors import (
    AuthenticationError,
    ClusterUnreachableError,
    ElasticsearchBackendError,
    IncompleteIndexError,
    IndexNotFoundError,
    MappingError,
)
from seakr_integrations.retrieval.es_index import IndexBuild, build_elasticsearch_index
from seakr_integrations.retrieval.passage import Passage, Retriever

__all__ = [
    "AuthenticationError",
    "BM25Index",
    "ClusterUnreachableError",
    "ElasticsearchBackendError",
    "ElasticsearchRetriever",
    "IncompleteIndexError",
    "IndexBuild",
    "IndexNotFoundError",
    "MappingError",
    "Passage",
    "Retriever",
    "build_elasticsearch_index",
]


def __getattr__(name: str) -> Any:
    """``BM25Index`` on first use: tantivy is the ``bm25`` extra, absent from a light client install."""
    if name == "BM25Index":
        from seakr_integrations.retrieval.bm25 import BM25Index

        return BM25Index
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
