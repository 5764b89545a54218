"""Retrieval: the passage record, the :class:`Retriever` protocol, corpus reading and the embedded BM25 index.

The reasoning loop depends only on :class:`Retriever` (``search(query, k) -> list[Passage]``); the tantivy-backed
:class:`BM25Index` is the default implementation, built once from a JSONL corpus with :meth:`BM25Index.build` or
``seakr index``.
"""

from seakr_integrations.retrieval.bm25 import BM25Index
from seakr_integrations.retrieval.corpus import iter_passages, read_corpus, validate_passage
from seakr_integrations.retrieval.passage import Passage, Retriever

__all__ = ["BM25Index", "Passage", "Retriever", "iter_passages", "read_corpus", "validate_passage"]
