"""LangChain retrievers: the core's passage indexes as a retriever, and the self-aware retrieval gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from langchain_seakr._keywords import KnownKeywords
from langchain_seakr._observer import LangChainObserver, checked_documents, emit_event, search_documents
from langchain_seakr._seakr import SeaKRComponent
from seakr_integrations.reasoning.decisions import GateDecision
from seakr_integrations.reasoning.events import GateDecided
from seakr_integrations.reasoning.gate_search import gate_search
from seakr_integrations.setting_conflicts import gate_never_searches

__all__ = ["GateDecision", "PassageIndexRetriever", "UncertaintyGatedRetriever"]


def _check_k(value: int | None) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"k={value!r}: the number of documents to return must be an integer >= 1")
    return value


class PassageIndexRetriever(KnownKeywords, BaseRetriever):
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

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

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
    ``astream_events``); ``decide()`` returns it directly.  The search keeps ``search_timeout`` and
    ``on_retrieval_error`` as ``SeaKRChain`` does; ``config.retrieve="never"`` is refused (the retriever would never
    run).

    Example:
        ```python
        gated = UncertaintyGatedRetriever(retriever=vectorstore.as_retriever(), llm=ChatSeaKR())
        docs = gated.invoke("Who directed Santa Sangre?")  # [] when the model is sure of its own answer
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

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

    @model_validator(mode="after")
    def _searches(self) -> UncertaintyGatedRetriever:
        conflict = gate_never_searches(type(self).__name__, self.config.retrieve)
        if conflict:
            raise ValueError(conflict)
        return self

    def decide(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun | None = None, k: int | None = None
    ) -> GateDecision:
        """Run the gate for ``query`` and return the documents with the decision behind them.  The wrapped
        retriever gets ``search_timeout`` seconds; a failure raises, or with ``on_retrieval_error="answer_without"``
        the gate returns no documents and ``decision.error`` says why.

        Raises:
            ValueError: Empty query or ``k`` < 1.
            RetrievalError: The wrapped retriever failed, returned no list of Documents or took longer than
                ``search_timeout`` (``on_retrieval_error="raise"``, the default).
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
        error = None
        if decision.retrieve:
            found, error = gate_search(
                lambda: search_documents(self.retriever, query, k, callbacks) if k else self._all(query, callbacks),
                query,
                what=f"the wrapped retriever {self.retriever.get_name()}",
                search_timeout=self.search_timeout,
                on_retrieval_error=self.on_retrieval_error,
            )
            metadata = decision.to_metadata()
            docs = [Document(page_content=d.page_content, id=d.id, metadata={**d.metadata, **metadata}) for d in found]
        decision = decision.with_documents(docs, error)
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
        return checked_documents(self.retriever.get_name(), docs)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return self.decide(query, run_manager=run_manager, k=k).documents
