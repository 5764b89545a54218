"""``SeaKRChain``: the whole SeaKR loop as a LangChain Runnable over any LangChain retriever.

It takes the place of a ``retriever | prompt | llm | parser`` RAG chain (same input, a question; same output, the
answer string) and adds what that chain cannot do: retrieve only when the model is unsure, pick the passage that
makes it surest, and choose between its own reasoning and the retrieved knowledge.  Every model call and search
shows up in LangChain callbacks, and every decision is a custom event, so a tracer sees the whole trace.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForChainRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, field_validator

from langchain_seakr._observer import LangChainObserver, LangChainSearch
from langchain_seakr._seakr import SeaKRComponent
from langchain_seakr.retrievers import PassageIndexRetriever
from seakr_integrations.reasoning.events import QuestionAnswered, QuestionFailed
from seakr_integrations.reasoning.trace import SeaKRResult

__all__ = ["SeaKRChain"]

_QUESTION_KEYS = ("question", "input", "query")


def question_of(value: Any) -> str:
    """The question in a chain input: a string, or a dict with a ``question``, ``input`` or ``query`` key.

    Raises:
        ValueError: No question, or an empty one.
    """
    if isinstance(value, dict):
        key = next((k for k in _QUESTION_KEYS if k in value), None)
        if key is None:
            raise ValueError(
                f"SeaKRChain got a dict without a question: give it a string, or a dict with one of the keys "
                f"{list(_QUESTION_KEYS)} (got keys {sorted(value)})"
            )
        value = value[key]
    if not isinstance(value, str):
        raise ValueError(f"SeaKRChain takes the question as a string, got {type(value).__name__}")
    if not value.strip():
        raise ValueError("the question is empty: pass the question text")
    return value.strip()


class SeaKRChain(SeaKRComponent, RunnableSerializable[Any, Any]):
    """SeaKR (self-aware retrieval, re-ranking and reasoning) over any LangChain retriever.

    Input: the question (a string, or a dict with ``question`` / ``input`` / ``query``).  Output: the answer string;
    with ``return_trace=True`` a dict with ``answer``, ``documents`` (the chosen passages as the retriever's own
    Documents), ``strategy`` and ``trace`` (the full decision trace as plain JSON).

    * ``batch`` answers its questions together: their model calls share back-end batches (one chain run each).
    * ``stream`` yields the decision trace as it happens (one dict per phase: ``assessed``, ``retrieved``,
      ``reranked``, ``step``, ``final``) and ends with ``{"kind": "answered", ...}`` holding the output above.
    * Callbacks: each self-aware call is an LLM run, each search the retriever's own run, each phase a custom event
      ``seakr_<kind>`` (so ``astream_events`` and tracers show every decision).
    * ``ainvoke`` / ``abatch`` / ``astream`` run the model in a worker thread: the event loop is never blocked.

    Example:
        ```python
        from langchain_seakr import ChatSeaKR, PassageIndexRetriever, SeaKRChain

        chain = SeaKRChain(retriever=PassageIndexRetriever.demo(), llm=ChatSeaKR())
        chain.invoke("Who lived longer, Alejandro Jodorowsky or Philip Saville?")
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    retriever: Any = Field(exclude=True)
    """A LangChain ``BaseRetriever`` (vector store, BM25, Elasticsearch...) or a core index with ``search``."""
    return_trace: bool = False
    """Return a dict with the documents and the trace instead of the answer string."""
    max_in_flight: int = 32
    """How many questions of one ``batch`` run together."""

    @field_validator("retriever")
    @classmethod
    def _retriever(cls, value: Any) -> BaseRetriever:
        if isinstance(value, BaseRetriever):
            return value
        if callable(getattr(value, "search", None)):
            return PassageIndexRetriever(index=value)
        raise TypeError(
            f"retriever must be a LangChain BaseRetriever or have search(query, k) -> Passages, got "
            f"{type(value).__name__}"
        )

    @field_validator("max_in_flight")
    @classmethod
    def _in_flight(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"max_in_flight={value}: must be >= 1")
        return value

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return False

    # ------------------------------------------------------------------------------------------------ helpers
    def _observer(self, run_manager: CallbackManagerForChainRun | None) -> LangChainObserver:
        callbacks = run_manager.get_child() if run_manager is not None else None
        return LangChainObserver(
            callbacks,
            run_manager.run_id if run_manager is not None else None,
            self.model_name,
            self.retriever,
            {"seakr_config": self.config.to_dict()},
        )

    def _output(self, result: SeaKRResult, observer: LangChainObserver) -> Any:
        if not self.return_trace:
            return result.answer
        documents: list[Document] = [observer.documents.get(p.id) or Document(p.text, id=p.id) for p in result.passages]
        return {"answer": result.answer, "documents": documents, "strategy": result.strategy, "trace": result.to_dict()}

    def _answer(
        self, questions: list[str], run_managers: Sequence[CallbackManagerForChainRun | None]
    ) -> Iterator[tuple[int, SeaKRResult | Exception, LangChainObserver]]:
        """Each question's result, or the exception it failed with (the others go on), as it finishes."""
        observers = [self._observer(rm) for rm in run_managers]
        seakr = self.seakr(LangChainSearch(self.retriever))
        events = seakr.iter_events(
            questions, max_in_flight=self.max_in_flight, observers=observers, return_exceptions=True
        )
        for event in events:
            if isinstance(event, QuestionAnswered):
                yield event.question_index, event.result, observers[event.question_index]
            elif isinstance(event, QuestionFailed):
                yield event.question_index, event.error, observers[event.question_index]

    # ----------------------------------------------------------------------------------------------- Runnable
    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._call_with_config(self._invoke, input, config, run_type="chain", **kwargs)

    def _invoke(self, input: Any, run_manager: CallbackManagerForChainRun) -> Any:
        ((_, result, observer),) = list(self._answer([question_of(input)], [run_manager]))
        if isinstance(result, Exception):
            raise result
        return self._output(result, observer)

    def batch(
        self,
        inputs: list[Any],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        if not inputs:
            return []
        return self._batch_with_config(
            self._batch, inputs, config, return_exceptions=return_exceptions, run_type="chain", **kwargs
        )

    def _batch(self, inputs: list[Any], run_manager: list[CallbackManagerForChainRun]) -> list[Any]:
        outputs: list[Any] = [None] * len(inputs)
        valid: list[int] = []
        for i, value in enumerate(inputs):
            try:
                question_of(value)
                valid.append(i)
            except ValueError as exc:
                outputs[i] = exc
        if valid:
            questions = [question_of(inputs[i]) for i in valid]
            for j, result, observer in self._answer(questions, [run_manager[i] for i in valid]):
                # a failed question's exception stays in its place; LangChain raises it or returns it
                outputs[valid[j]] = result if isinstance(result, Exception) else self._output(result, observer)
        return outputs

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[dict[str, Any]]:
        yield from self._transform_stream_with_config(iter([input]), self._stream, config, run_type="chain", **kwargs)

    def _stream(self, inputs: Iterator[Any], run_manager: CallbackManagerForChainRun) -> Iterator[dict[str, Any]]:
        question = question_of(next(iter(inputs)))
        observer = self._observer(run_manager)
        seakr = self.seakr(LangChainSearch(self.retriever))
        for event in seakr.iter_events([question], observers=[observer]):
            if isinstance(event, QuestionAnswered):
                output = self._output(event.result, observer)
                yield {"kind": "answered", **(output if isinstance(output, dict) else {"answer": output})}
            else:
                yield event.to_dict()

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await run_in_executor(config, self.invoke, input, config, **kwargs)

    async def abatch(
        self,
        inputs: list[Any],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        first = config[0] if isinstance(config, list) and config else config
        return await run_in_executor(
            first, lambda: self.batch(inputs, config, return_exceptions=return_exceptions, **kwargs)
        )

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        """``stream`` on a worker thread; each chunk is handed to the event loop as soon as it exists."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        cancelled = threading.Event()

        def produce() -> None:
            try:
                for chunk in self.stream(input, config, **kwargs):
                    if cancelled.is_set():
                        return
                    loop.call_soon_threadsafe(queue.put_nowait, ("chunk", chunk))
            except BaseException as exc:  # handed to the consumer, raised there
                loop.call_soon_threadsafe(queue.put_nowait, ("error", exc))
            else:
                loop.call_soon_threadsafe(queue.put_nowait, ("done", None))

        worker = asyncio.ensure_future(run_in_executor(config, produce))
        try:
            while True:
                kind, value = await queue.get()
                if kind == "chunk":
                    yield value
                elif kind == "error":
                    raise value
                else:
                    break
        finally:
            cancelled.set()
            await worker
