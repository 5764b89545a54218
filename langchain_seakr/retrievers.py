"""LangChain retrievers: the core's passage indexes as a retriever, and the self-aware retrieval gate."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, field_validator

from langchain_seakr._conversions import uncertainty_info
from langchain_seakr._observer import LangChainObserver, search_documents
from langchain_seakr._seakr import SeaKRComponent
from seakr_integrations.reasoning.reasoner import RetrievalError
from seakr_integrations.reasoning.trace import Assessment

__all__ = ["GateDecision", "PassageIndexRetriever", "UncertaintyGatedRetriever"]


def _check_k(value: int | None) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"k={value!r}: the number of documents to return must be an integer >= 1")
    return value


class PassageIndexRetriever(BaseRetriever):
    """Any core passage index (the embedded ``BM25Index``, or anything with ``search(query, k)`` returning
    ``Passage`` objects) as a LangChain retriever.

    Documents carry ``id`` (the passage id), ``metadata["title"]`` and ``metadata["score"]`` (the engine's score).

    Example:
        ```python
        from langchain_seakr import PassageIndexRetriever

        retriever = PassageIndexRetriever.demo(k=3)  # the bundled HotpotQA/2Wiki passages, BM25
        docs = retriever.invoke("Alejandro Jodorowsky film director")
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any = Field(exclude=True)
    """The core retriever (e.g. ``BM25Index.open(path)``)."""
    k: int = 3
    """Documents returned per query (``invoke(query, k=...)`` overrides it)."""

    @field_validator("k")
    @classmethod
    def _valid_k(cls, value: int) -> int:
        return _check_k(value)  # type: ignore[return-value]

    @field_validator("index")
    @classmethod
    def _searchable(cls, value: Any) -> Any:
        if not callable(getattr(value, "search", None)):
            raise ValueError(
                f"index must have a search(query, k) method returning Passages (e.g. BM25Index), got "
                f"{type(value).__name__}"
            )
        return value

    @classmethod
    def from_path(cls, path: str | Path, **kwargs: Any) -> PassageIndexRetriever:
        """A retriever over the BM25 index built at ``path`` by ``seakr index CORPUS --out PATH``."""
        from seakr_integrations.retrieval.bm25 import BM25Index

        return cls(index=BM25Index.open(path), **kwargs)

    @classmethod
    def demo(cls, **kwargs: Any) -> PassageIndexRetriever:
        """A retriever over the bundled demo corpus (built into the user cache on first use)."""
        from seakr_integrations.demo import demo_index

        return cls(index=demo_index(progress=False), **kwargs)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = _check_k(k) or self.k
        return [
            Document(page_content=p.text, id=p.id, metadata={"id": p.id, "title": p.title, "score": p.score})
            for p in self.index.search(query, k)
        ]


@dataclass(frozen=True)
class GateDecision:
    """What the gate decided for one query.

    Attributes:
        documents: The documents returned (empty when retrieval was skipped).
        retrieved: Whether the wrapped retriever was called.
        reason: Why, in words.
        assessment: SeaKR's uncertainty check (the generation, its uncertainty, the decision); ``None`` when the
            gate is configured to always retrieve.
    """

    documents: list[Document]
    retrieved: bool
    reason: str
    assessment: Assessment | None = field(default=None, repr=False)


class UncertaintyGatedRetriever(SeaKRComponent, BaseRetriever):
    """Wraps any LangChain retriever and retrieves only when the model is uncertain about the query.

    The gate is SeaKR's self-aware retrieval decision (the same rule as the full loop): the model writes the next
    reasoning step (single-hop mode: the answer) for the query, its uncertainty is measured from the k samples'
    hidden states, and the wrapped retriever runs only when it exceeds ``config.delta``.  Each returned document's
    metadata gets ``seakr_uncertainty`` and ``seakr_gate``; when the gate skips, the result is an empty list and
    the reason goes to the callbacks (custom event ``seakr_gate``, visible in ``astream_events``); ``decide()``
    returns it directly.

    Example:
        ```python
        gated = UncertaintyGatedRetriever(retriever=vectorstore.as_retriever(), llm=ChatSeaKR())
        docs = gated.invoke("Who directed Santa Sangre?")  # [] when the model is sure of its own answer
        ```
    """

    retriever: BaseRetriever
    """The retriever to gate."""
    k: int | None = None
    """Documents to return (passed to the wrapped retriever); ``None`` keeps the wrapped retriever's own count."""
    always_retrieve: bool = False
    """Skip the uncertainty check and always retrieve (still one LangChain retriever; for baselines and tests)."""

    @field_validator("k")
    @classmethod
    def _valid_k(cls, value: int | None) -> int | None:
        return _check_k(value)

    def decide(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun | None = None, k: int | None = None
    ) -> GateDecision:
        """Run the gate for ``query`` and return the documents with the decision behind them.

        Raises:
            ValueError: Empty query or ``k`` < 1.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("the query is empty: the gate needs a question to assess")
        k = _check_k(k) or self.k
        callbacks = run_manager.get_child() if run_manager is not None else None
        assessment = None
        if self.always_retrieve:
            retrieve, reason = True, "always_retrieve is set"
        else:
            observer = LangChainObserver(callbacks, run_manager.run_id if run_manager else None, self.model_name)
            (assessment,) = self.seakr().assess_many([query], observers=[observer])
            u = assessment.uncertainty
            retrieve = assessment.retrieve
            shown = f"{u.value:.3f}" if u.is_finite else "inf"
            reason = (
                f"uncertainty {shown} > delta {self.config.delta}: the model is unsure, so it retrieves"
                if retrieve and assessment.generation
                else "the model wrote nothing, so it retrieves"
                if retrieve
                else f"uncertainty {shown} <= delta {self.config.delta}: the model is sure, so retrieval is skipped"
            )
        if callbacks is not None:
            data = {"query": query, "retrieve": retrieve, "reason": reason}
            if assessment is not None:
                data["assessment"] = assessment.to_dict()
            callbacks.on_custom_event("seakr_gate", data, run_id=run_manager.run_id)
        if not retrieve:
            return GateDecision([], False, reason, assessment)
        try:
            docs = search_documents(self.retriever, query, k, callbacks) if k else self._all(query, callbacks)
        except Exception as exc:
            raise RetrievalError(
                f"the wrapped retriever {type(self.retriever).__name__} failed for query {query!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        gate = {"retrieved": True, "reason": reason}
        if assessment is not None:
            gate["generation"] = assessment.generation
        out = [
            Document(
                page_content=d.page_content,
                id=d.id,
                metadata={
                    **d.metadata,
                    "seakr_uncertainty": uncertainty_info(assessment.uncertainty) if assessment else None,
                    "seakr_gate": gate,
                },
            )
            for d in docs
        ]
        return GateDecision(out, True, reason, assessment)

    def _all(self, query: str, callbacks: Any) -> list[Document]:
        docs = self.retriever.invoke(query, config={"callbacks": callbacks} if callbacks is not None else None)
        if not isinstance(docs, list):
            raise TypeError(f"{type(self.retriever).__name__} returned {type(docs).__name__}, not a list")
        return docs

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return self.decide(query, run_manager=run_manager, k=k).documents
