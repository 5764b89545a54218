"""``MiniLMEmbeddings``: LangChain embeddings from the all-MiniLM-L6-v2 model shipped on PyPI, offline.

Lets a LangChain vector store (e.g. ``InMemoryVectorStore``) run next to SeaKR without a model-hub download; the
embedder itself lives in the core (``seakr_integrations.embeddings``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from seakr_integrations.embeddings import shared_embedder
from seakr_integrations.keywords import check_keywords

__all__ = ["MiniLMEmbeddings"]


class MiniLMEmbeddings(Embeddings):
    """Unit-length sentence vectors (384 dimensions for all-MiniLM-L6-v2), computed on CPU.

    Args:
        model_dir: A sentence-transformers directory; ``None`` uses the bundled all-MiniLM-L6-v2.
    """

    def __init__(self, model_dir: str | Path | None = None, **kwargs: Any) -> None:
        check_keywords("MiniLMEmbeddings", kwargs, ["model_dir"])  # a mistyped keyword names model_dir
        self.embedder = shared_embedder(model_dir)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed(texts).tolist() if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_one(text).tolist()
