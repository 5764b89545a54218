"""Route one question's model calls, searches and decisions into a LangChain run.

The core drives many questions through shared back-end batches; this observer is attached to one question, so its
LLM runs, retriever runs and trace events appear under that question's chain (or retriever) run in any callback
handler or tracer, exactly as if the question had been answered alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.callbacks.manager import CallbackManager
from langchain_core.documents import Document
from langchain_core.outputs import LLMResult
from langchain_core.retrievers import BaseRetriever

from langchain_seakr._conversions import document_id, llm_token_usage, output_generations, to_passage
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.reasoning.events import Observer, SeaKREvent, langchain_event_name
from seakr_integrations.retrieval.passage import Passage, Retriever
from seakr_integrations.uncertainty.estimate import Uncertainty

__all__ = ["LangChainObserver", "LangChainSearch", "checked_documents", "emit_event", "search_documents"]


def emit_event(callbacks: CallbackManager | Any, event: SeaKREvent, run_id: Any) -> None:
    """Send a core event to the callbacks as the custom event ``seakr_<kind>`` (``seakr_step_assessed``...), with
    its strict-JSON form as data."""
    callbacks.on_custom_event(langchain_event_name(event), event.to_dict(), run_id=run_id)


def search_documents(retriever: BaseRetriever, query: str, k: int, callbacks: Any = None) -> list[Document]:
    """At most ``k`` documents from a LangChain retriever (``k`` is passed on to retrievers that accept it).

    Raises:
        TypeError: The retriever returned something other than a list of Documents.
    """
    docs = retriever.invoke(query, config={"callbacks": callbacks} if callbacks is not None else None, k=k)
    return checked_documents(retriever.get_name(), docs)[:k]


def checked_documents(name: str, docs: Any) -> list[Document]:
    """``docs`` when it is a list of Documents, else a ``TypeError`` saying what the retriever ``name`` returned
    and what it must return."""
    if not isinstance(docs, list):
        raise TypeError(
            f"{name} returned {type(docs).__name__}; a retriever must return a list of Documents (an empty list when "
            "nothing matches)"
        )
    bad = [type(d).__name__ for d in docs if not isinstance(d, Document)]
    if bad:
        raise TypeError(f"{name} returned {bad[0]} objects; a retriever must return a list of Documents")
    return docs


class LangChainSearch:
    """A LangChain retriever seen through the core's ``Retriever`` protocol (documents become passages)."""

    def __init__(self, retriever: BaseRetriever) -> None:
        self.retriever = retriever

    def search(self, query: str, k: int = 3) -> list[Passage]:
        return [to_passage(d, r) for r, d in enumerate(search_documents(self.retriever, query, k), 1)]


class LangChainObserver(Observer):
    """Callbacks for one question: LLM runs per self-aware call, the retriever's own runs, and each trace event
    as a custom event named ``seakr_<kind>`` (``seakr_step_assessed``, ``seakr_passages_retrieved``, ...; see
    :func:`emit_event`)."""

    def __init__(
        self,
        callbacks: CallbackManager | None,
        parent_run_id: Any,
        model_name: str,
        retriever: BaseRetriever | None = None,
        invocation_params: dict[str, Any] | None = None,
    ) -> None:
        self.callbacks = callbacks
        self.parent_run_id = parent_run_id
        self.model_name = model_name
        self.retriever = retriever
        self.invocation_params = invocation_params or {}
        self.documents: dict[str, Document] = {}
        """Every document the searches returned, by the id its passage got."""
        self.events: list[SeaKREvent] = []
        self._runs: list[CallbackManagerForLLMRun] = []

    def on_event(self, event: SeaKREvent) -> None:
        self.events.append(event)
        if self.callbacks is not None:
            emit_event(self.callbacks, event, self.parent_run_id)

    def on_lm_start(self, prompts: Sequence[str]) -> None:
        if self.callbacks is None:
            return
        serialized = {"lc": 1, "type": "not_implemented", "id": ["langchain_seakr", "SeaKRLLM"], "name": "SeaKRLLM"}
        self._runs = self.callbacks.on_llm_start(
            serialized, list(prompts), invocation_params={"model": self.model_name, **self.invocation_params}
        )

    def on_lm_end(self, outputs: Sequence[SelfAwareOutput], uncertainties: Sequence[Uncertainty]) -> None:
        if not self._runs:  # no callbacks configured
            return
        for run, output, u in zip(self._runs, outputs, uncertainties, strict=True):
            token_usage = llm_token_usage(output)
            run.on_llm_end(
                LLMResult(
                    generations=[output_generations(output, u, self.model_name)],
                    llm_output={"token_usage": token_usage, "model_name": self.model_name},
                )
            )
        self._runs = []

    def on_lm_error(self, error: BaseException) -> None:
        for run in self._runs:
            run.on_llm_error(error)
        self._runs = []

    def search(self, retriever: Retriever, query: str, k: int) -> list[Passage]:
        if self.retriever is None:
            return retriever.search(query, k)
        docs = search_documents(self.retriever, query, k, self.callbacks)
        passages = [to_passage(d, r) for r, d in enumerate(docs, 1)]
        for doc in docs:
            self.documents.setdefault(document_id(doc), doc)
        return passages
