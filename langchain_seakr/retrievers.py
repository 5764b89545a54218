"""LangChain retrievers: the core's passage indexes as a retriever, and the self-aware retrieval gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from langchain_seakr._observer import LangChainObserver, emit_event, search_documents
from langchain_seakr._seakr import SeaKRComponent
from seakr_integrations.reasoning.decisions import GateDecision
from seakr_integrations.reasoning.events import GateDecided
from seakr_integrations.reasoning.reasoner import RetrievalError

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


class UncertaintyGatedRetriever(SeaKRComponent, BaseRetriever):
    """Wraps any LangChain retriever and retrieves only when the model is uncertain about the query.

    The gate is SeaKR's self-aware retrieval decision (the same rule as the full loop): the model writes the next
    reasoning step (single-hop mode: the answer) for the query, its uncertainty is measured from the k samples'
    hidden states, and the wrapped retriever runs only when it exceeds ``config.delta``.  Each returned document's
    metadata gets the decision's keys (``GateDecision.to_metadata()``: ``seakr_gate_retrieve``,
    ``seakr_gate_reason``, ``seakr_gate_uncertainty``, ``seakr_gate_delta``, the same as LlamaIndex's gated
    retriever puts on its nodes); when the gate skips, the result is an empty list.  Every decision goes to the
    callbacks as the custom event ``seakr_gate_decided`` (``GateDecision.to_dict()``, visible in
    ``astream_events``); ``decide()`` returns it directly.

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
    """Retrieve whatever the uncertainty.  The uncertainty is still measured and recorded (reason
    ``always_retrieve``), so the gate's judgement can be logged before it is trusted."""

    _last_decision: GateDecision | None = PrivateAttr(default=None)

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
        run_id = run_manager.run_id if run_manager is not None else None
        observer = LangChainObserver(callbacks, run_id, self.model_name)
        seakr = self.seakr()
        (assessment,) = seakr.assess_many([query], observers=[observer])
        decision = GateDecision.from_assessment(assessment, seakr.config, always_retrieve=self.always_retrieve)
        docs: list[Document] = []
        if decision.retrieve:
            try:
                found = search_documents(self.retriever, query, k, callbacks) if k else self._all(query, callbacks)
            except Exception as exc:
                raise RetrievalError(
                    f"the wrapped retriever {type(self.retriever).__name__} failed for query {query!r}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            metadata = decision.to_metadata()
            docs = [Document(page_content=d.page_content, id=d.id, metadata={**d.metadata, **metadata}) for d in found]
        decision = decision.with_documents(docs)
        self._last_decision = decision
        if callbacks is not None:
            emit_event(callbacks, GateDecided(0, query, decision), run_id)
        return decision

    @property
    def last_decision(self) -> GateDecision | None:
        """The decision for the latest query (with concurrent queries: whichever finished last), as LlamaIndex's
        gate keeps it."""
        return self._last_decision

    def _all(self, query: str, callbacks: Any) -> list[Document]:
        docs = self.retriever.invoke(query, config={"callbacks": callbacks} if callbacks is not None else None)
        if not isinstance(docs, list):
            raise TypeError(f"{type(self.retriever).__name__} returned {type(docs).__name__}, not a list")
        return docs

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return self.decide(query, run_manager=run_manager, k=k).documents
