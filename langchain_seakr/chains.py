"""``SeaKRChain``: the whole SeaKR loop as a LangChain Runnable over any LangChain retriever.

It takes the place of a ``retriever | prompt | llm | parser`` RAG chain (same input, a question; same output, the
answer string) and adds what that chain cannot do: after the question's own search, search again for what the
model's next step names and no passage is about (the default rules), or, with the paper's rules, retrieve only when
the model is unsure, pick the passage that makes it surest, and choose between its own reasoning and the retrieved
knowledge.  Every model call and search
shows up in LangChain callbacks, and every decision is a custom event, so a tracer sees the whole trace.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Union

from langchain_core.callbacks import AsyncCallbackManagerForChainRun, CallbackManagerForChainRun
from langchain_core.callbacks.manager import CallbackManager
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from langchain_seakr._chain_io import SeaKRQuestion, SeaKRTraceOutput, output_pieces, question_of
from langchain_seakr._observer import LangChainSearch
from langchain_seakr._runs import ModelRunObserver
from langchain_seakr._seakr import SeaKRComponent
from langchain_seakr.retrievers import PassageIndexRetriever
from seakr_integrations.reasoning.events import QuestionAnswered, QuestionFailed
from seakr_integrations.reasoning.reasoner import question_error
from seakr_integrations.reasoning.trace import SeaKRResult

__all__ = ["SeaKRChain", "SeaKRQuestion", "SeaKRTraceOutput", "question_of"]


class SeaKRChain(SeaKRComponent, RunnableSerializable[Any, Any]):
    """SeaKR (self-aware retrieval, re-ranking and reasoning) over any LangChain retriever.

    Input: the question (a string, or a dict with ``question`` / ``input`` / ``query``).  Output: the answer string;
    with ``return_trace=True`` a dict with ``answer``, ``documents`` (the chosen passages as the retriever's own
    Documents), ``strategy`` and ``trace`` (the full decision trace as plain JSON).  ``get_input_schema()`` and
    ``get_output_schema()`` say the same.

    * ``batch`` answers its questions together: their model calls share back-end batches (one chain run each).
    * ``stream`` / ``astream`` yield what ``invoke`` returns, in pieces: the answer word by word (with
      ``return_trace=True``, dict chunks that add up to the output dict).  The answer exists only once the loop
      has finished; the decisions on the way are callbacks (below), e.g. ``astream_events(version="v2")``.
    * Callbacks: each self-aware call is a run of the chain's model (a ``ChatSeaKR`` reports chat model runs with
      its tokens; a ``SeaKRLLM`` or bare back-end completion runs), each search the retriever's own run, and each
      phase a custom event ``seakr_<kind>`` (so ``astream_events`` and tracers show every decision).
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

    _search: LangChainSearch | None = PrivateAttr(default=None)

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

    @property
    def InputType(self) -> Any:  # noqa: N802 - LangChain's name
        return Union[str, SeaKRQuestion]  # noqa: UP007 - a runtime type object for the schema

    @property
    def OutputType(self) -> Any:  # noqa: N802 - LangChain's name
        return SeaKRTraceOutput if self.return_trace else str

    # ------------------------------------------------------------------------------------------------ helpers
    def _loop(self) -> Any:
        """The core loop bound to the current retriever (a new binding when the retriever was replaced)."""
        search = self._search
        if search is None or search.retriever is not self.retriever:
            search = self._search = LangChainSearch(self.retriever)
        return self.seakr(search)

    def _observer(self, callbacks: CallbackManager | None, run_id: Any) -> ModelRunObserver:
        return ModelRunObserver(
            callbacks, run_id, self.model_name, self.llm, self.retriever, {"seakr_config": self.loop_config.to_dict()}
        )

    def _output(self, result: SeaKRResult, observer: ModelRunObserver) -> Any:
        if not self.return_trace:
            return result.answer
        documents: list[Document] = [observer.documents.get(p.id) or Document(p.text, id=p.id) for p in result.passages]
        return {"answer": result.answer, "documents": documents, "strategy": result.strategy, "trace": result.to_dict()}

    def _observer_of(self, run_manager: CallbackManagerForChainRun | None) -> ModelRunObserver:
        if run_manager is None:
            return self._observer(None, None)
        return self._observer(run_manager.get_child(), run_manager.run_id)

    def _answer(
        self, questions: list[str], observers: Sequence[ModelRunObserver]
    ) -> Iterator[tuple[int, SeaKRResult | Exception, ModelRunObserver]]:
        """Each question's result, or the exception it failed with (the others go on), as it finishes."""
        events = self._loop().iter_events(
            questions, max_in_flight=self.max_in_flight, observers=list(observers), return_exceptions=True
        )
        for event in events:
            if isinstance(event, QuestionAnswered):
                yield event.question_index, event.result, observers[event.question_index]
            elif isinstance(event, QuestionFailed):
                yield event.question_index, event.error, observers[event.question_index]

    def _answer_one(self, question: str, observer: ModelRunObserver) -> Any:
        """``invoke``'s output for one question (the question's error raised)."""
        ((_, result, _),) = list(self._answer([question], [observer]))
        if isinstance(result, Exception):
            raise result
        return self._output(result, observer)

    # ----------------------------------------------------------------------------------------------- Runnable
    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._call_with_config(self._invoke, input, config, run_type="chain", **kwargs)

    def _invoke(self, input: Any, run_manager: CallbackManagerForChainRun) -> Any:
        return self._answer_one(question_of(input), self._observer_of(run_manager))

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
        for i, value in enumerate(inputs):  # a bad input fails its own slot, named by its place in this batch
            try:
                error = question_error(i, question_of(value))
            except ValueError as exc:
                error = exc
            if error is None:
                valid.append(i)
            else:
                outputs[i] = error
        if valid:
            questions = [question_of(inputs[i]) for i in valid]
            observers = [self._observer_of(run_manager[i]) for i in valid]
            for j, result, observer in self._answer(questions, observers):
                # a failed question's exception stays in its place; LangChain raises it or returns it
                outputs[valid[j]] = result if isinstance(result, Exception) else self._output(result, observer)
        return outputs

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        """``invoke``'s output in pieces (see the class docstring); the run ends after the last piece."""
        yield from self._transform_stream_with_config(iter([input]), self._stream, config, run_type="chain", **kwargs)

    def _stream(self, inputs: Iterator[Any], run_manager: CallbackManagerForChainRun) -> Iterator[Any]:
        question = question_of(next(iter(inputs)))
        yield from output_pieces(self._answer_one(question, self._observer_of(run_manager)))

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

    async def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> AsyncIterator[Any]:
        """``stream`` with the loop in a worker thread; the run starts and ends on the event loop (so
        ``astream_events`` sees ``on_chain_end`` after the last chunk) and each chunk is handed over as soon as it
        exists."""

        async def one() -> AsyncIterator[Any]:
            yield input

        async for chunk in self._atransform_stream_with_config(one(), self._astream, config, run_type="chain"):
            yield chunk

    async def _astream(
        self, inputs: AsyncIterator[Any], run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig
    ) -> AsyncIterator[Any]:
        question = question_of(await anext(aiter(inputs)))
        # the loop runs in a thread: it reports through a synchronous manager over the same handlers
        callbacks = CallbackManager.configure(inheritable_callbacks=run_manager.get_child())
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        cancelled = threading.Event()

        def produce() -> None:
            try:
                observer = self._observer(callbacks, run_manager.run_id)  # may load the model: not on the loop
                for chunk in output_pieces(self._answer_one(question, observer)):
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
