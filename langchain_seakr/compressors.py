"""``SelfAwareReranker``: re-rank documents by how sure the model is after reading each one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.callbacks.manager import CallbackManager
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict, field_validator, model_validator

from langchain_seakr._conversions import to_passage
from langchain_seakr._observer import LangChainObserver
from langchain_seakr._seakr import SeaKRComponent
from seakr_integrations.reasoning.decisions import CandidateScore
from seakr_integrations.setting_conflicts import SEARCH_SETTINGS, searches_nothing

__all__ = ["SelfAwareReranker"]


class SelfAwareReranker(SeaKRComponent, BaseDocumentCompressor):
    """Orders documents by the uncertainty the model has after reading each (SeaKR's self-aware re-ranking) and
    keeps the ``top_n`` least uncertain.

    Each document is put in the prompt alone (after the question) and the model writes the next reasoning step
    (single-hop mode: the answer); all documents are scored in one batched call.  Metadata gets the score's keys
    (``CandidateScore.to_metadata()``, the same as LlamaIndex's ``SelfAwareReranker`` puts on its nodes):
    ``seakr_uncertainty`` (the uncertainty after reading it), ``seakr_search_rank`` (its position in the input),
    ``seakr_chosen`` (the least uncertain) and ``seakr_generation`` (what the model wrote), and
    ``relevance_score`` = minus the uncertainty (higher = better, as other LangChain re-rankers).  A document the
    model wrote nothing with is unscorable: it ranks last, with ``seakr_uncertainty`` and ``relevance_score``
    ``None``.

    Example:
        ```python
        from langchain_core.runnables import RunnableLambda, RunnablePassthrough

        reranker = SelfAwareReranker(llm=ChatSeaKR(), top_n=2)
        retriever = vectorstore.as_retriever(search_kwargs={"k": 6})
        reranked = {"docs": retriever, "query": RunnablePassthrough()} | RunnableLambda(
            lambda x: reranker.compress_documents(x["docs"], x["query"])
        )
        reranked.invoke("Who directed Santa Sangre?")  # the 2 documents the model is surest after
        ```

    LangChain's ``ContextualCompressionRetriever(base_compressor=reranker, base_retriever=...)`` takes it too; LangChain
    v1 moved that class to ``langchain-classic`` (``pip install langchain-classic``), outside this package's install.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    top_n: int = 3
    """How many documents to keep."""

    @model_validator(mode="before")
    @classmethod
    def _searches_nothing(cls, data: Any) -> Any:
        given = sorted(set(data) & SEARCH_SETTINGS) if isinstance(data, dict) else []
        if given:
            raise searches_nothing(
                "SelfAwareReranker (it re-ranks the documents it is given)",
                given[0],
                "the component that searches (SeaKRChain, UncertaintyGatedRetriever, SeaKRMiddleware)",
            )
        return data

    @field_validator("top_n")
    @classmethod
    def _positive(cls, value: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"top_n={value!r}: the number of documents to keep must be an integer >= 1")
        return value

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """The ``top_n`` documents, least uncertain first.

        Raises:
            ValueError: Empty query.
            TypeError: An item is not a Document.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("the query is empty: the re-ranker needs the question the documents should answer")
        if not documents:
            return []
        passages = [to_passage(d, r) for r, d in enumerate(documents, 1)]
        manager = CallbackManager.configure(callbacks) if callbacks is not None else None
        observer = LangChainObserver(manager, None, self.model_name) if manager is not None else None
        (ranked,) = self.seakr().rerank_many([(query, passages)], observers=[observer])
        out = []
        for c in ranked[: self.top_n]:
            doc = documents[c.rank - 1]
            score = CandidateScore.from_candidate(c)
            metadata = {**doc.metadata, **score.to_metadata(), "relevance_score": score.relevance}
            out.append(Document(page_content=doc.page_content, id=doc.id, metadata=metadata))
        return out
