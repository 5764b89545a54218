"""``SeaKRQueryEngine``: the whole SeaKR loop as a LlamaIndex query engine over any retriever.

A standard retrieve-then-synthesise engine retrieves once, always.  SeaKR reasons step by step: by default it keeps
the question's own search, then searches for what a step names that no passage is about and answers from the
passages; with the paper's rules it searches only when a step is uncertain, keeps the passage that leaves the model
least uncertain, and answers from its rationales or the passages, whichever it is surer of.  This engine runs the
core loop unchanged with the user's LlamaIndex retriever as its search engine and returns a normal ``Response``:
the answer, the nodes SeaKR chose as ``source_nodes`` and the full decision trace in ``metadata["trace"]``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import Response
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.tools import QueryEngineTool

from llamaindex_seakr._seakr import ComponentLoop, SeaKRComponent, checked_question, loop_inputs
from llamaindex_seakr.llm import SeaKRLLM
from llamaindex_seakr.observer import NodeTracker
from seakr_integrations.keywords import accepted_keywords, check_keywords
from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT, RetrievalErrorPolicy
from seakr_integrations.reasoning.config import SETTING_NAMES, SeaKRConfig
from seakr_integrations.reasoning.events import QuestionAnswered
from seakr_integrations.reasoning.trace import SeaKRResult

__all__ = ["QUERY_TOOL_DESCRIPTION", "SeaKRQueryEngine"]

QUERY_TOOL_DESCRIPTION = (
    "Answers a factual question from the knowledge base, searching as many times as it takes: it reasons step by "
    "step, searches whenever it is unsure or a step names something no passage covers yet, and answers from the "
    "passages it kept. Call it with the user's whole question."
)
"""What an agent's model reads about ``SeaKRQueryEngine.as_tool()`` (its ``description=`` replaces it)."""


class SeaKRQueryEngine(SeaKRComponent, CustomQueryEngine):
    """SeaKR (self-aware retrieval, re-ranking and reasoning) over any LlamaIndex retriever.

    ``query(q)`` returns a ``Response`` whose ``response`` is SeaKR's answer, whose ``source_nodes`` are the nodes
    SeaKR chose (the retriever's own nodes, copied, in the order chosen, with ``seakr_step`` and
    ``seakr_uncertainty`` in metadata), and whose ``metadata`` holds ``"trace"`` (``SeaKRResult.to_dict()``: every
    step, uncertainty, query and candidate), ``"strategy"`` and ``"stop_reason"``.  ``aquery`` runs the loop in a
    worker thread; ``query_many`` answers several questions with shared back-end batches.

    Args:
        retriever: Any LlamaIndex retriever (its top-k should be >= ``config.n_candidates``), or a core retriever
            such as ``BM25Index``.
        llm: The self-aware model (``SeaKRLLM``, or a ``SelfAwareBackend``).
        config: SeaKR's settings: the loop samples as ``llm`` does, except where ``config`` changes a setting from
            its default (``SeaKRLLM.loop_config``).
        search_timeout: Seconds one search may take before it fails like any retrieval error (``None``: no limit).
        on_retrieval_error: ``"raise"`` (the default), or ``"answer_without"``: a failing retriever becomes a note
            in the trace instead of an error.

    Raises:
        TypeError: ``llm`` is not self-aware, ``retriever`` is not a retriever, or an unknown keyword (the error
            names the nearest one, or the ``SeaKRConfig`` setting it belongs to), at construction.

    Example:
        >>> engine = SeaKRQueryEngine(index.as_retriever(similarity_top_k=3), SeaKRLLM(backend="hf"))  # doctest: +SKIP
        >>> response = engine.query("Who lived longer, Alejandro Jodorowsky or Philip Saville?")  # doctest: +SKIP
        >>> response.response, response.metadata["trace"]["steps"]  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    retriever: BaseRetriever = Field(description="The LlamaIndex retriever SeaKR searches with.")
    llm: SeaKRLLM = Field(description="The self-aware model.", exclude=True)

    _seakr_loop: ComponentLoop = PrivateAttr()

    def __init__(
        self,
        retriever: Any,
        llm: SeaKRLLM | Any,
        config: SeaKRConfig | None = None,
        *,
        search_timeout: float | None = DEFAULT_SEARCH_TIMEOUT,
        on_retrieval_error: RetrievalErrorPolicy = "raise",
        **kwargs: Any,
    ) -> None:
        check_keywords("SeaKRQueryEngine", kwargs, accepted_keywords(type(self)), config_settings=SETTING_NAMES)
        llm, retriever, loop = loop_inputs(
            "SeaKRQueryEngine", llm, retriever, config, search_timeout, on_retrieval_error
        )
        super().__init__(retriever=retriever, llm=llm, **kwargs)
        self._seakr_loop = loop

    @classmethod
    def class_name(cls) -> str:
        return "SeaKRQueryEngine"

    def as_tool(
        self, name: str = "seakr_answer", description: str = QUERY_TOOL_DESCRIPTION, *, return_direct: bool = False
    ) -> QueryEngineTool:
        """This engine as an agent's tool: the agent asks SeaKR a question and reads its answer (the tool output's
        ``raw_output`` is the ``Response``, with the chosen nodes and the trace); ``return_direct=True`` makes
        SeaKR's answer the agent's (LlamaIndex's own setting: for an agent model too small to write a reply from a
        tool's output)."""
        return QueryEngineTool.from_defaults(self, name=name, description=description, return_direct=return_direct)

    def query_many(self, questions: Sequence[str], *, max_in_flight: int = 32) -> list[Response]:
        """Answer many questions, their model calls sharing back-end batches; responses in order.

        Raises:
            ValueError: A question is empty (checked before any work starts).
            RetrievalError: The retriever failed (with ``on_retrieval_error="raise"``, the default).
        """
        if isinstance(questions, str):
            raise ValueError("query_many takes a list of questions; use query() for one")
        questions = [_check(q) for q in questions]
        trackers = [NodeTracker() for _ in questions]
        responses: list[Response | None] = [None] * len(questions)
        for event in self.seakr.iter_events(questions, max_in_flight=max_in_flight, observers=trackers):
            if isinstance(event, QuestionAnswered):
                i = event.question_index
                responses[i] = _response(event.result, trackers[i])
        return responses  # type: ignore[return-value]

    def custom_query(self, query_str: str) -> Response:
        """Answer one question with the SeaKR loop (blocking)."""
        return self.query_many([query_str])[0]

    async def acustom_query(self, query_str: str) -> Response:
        """``custom_query`` in a worker thread: the event loop keeps running while the model works."""
        _check(query_str)
        return await asyncio.to_thread(self.custom_query, query_str)


def _check(question: Any) -> str:
    return checked_question(question, "the query is empty: SeaKRQueryEngine needs a question")


def _response(result: SeaKRResult, tracker: NodeTracker) -> Response:
    return Response(
        response=result.answer,
        source_nodes=tracker.source_nodes(result),
        metadata={"trace": result.to_dict(), "strategy": result.strategy, "stop_reason": result.stop_reason},
    )
