"""``SeaKRWorkflow``: the SeaKR loop as a LlamaIndex Workflow that streams each phase as a typed event.

The loop stays in the core (``SeaKR.iter_events``, the same code as ``SeaKR.answer``); the workflow runs it in a
worker thread and translates each core event into a workflow event the moment it happens: the uncertainty check,
the search, the self-aware re-ranking, the reasoning step and the final choice.  Runs are independent, so many run
concurrently; their model calls meet in one ``ConcurrentBackend`` that batches them together.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.workflow import Context, Workflow, step

from llamaindex_seakr._seakr import SeaKRComponent, checked_question, loop_inputs, run_question
from llamaindex_seakr.events import QuestionAnsweredEvent, SeaKRQuestionEvent
from llamaindex_seakr.llm import SeaKRLLM
from seakr_integrations.keywords import accepted_keywords, check_keywords
from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT, RetrievalErrorPolicy
from seakr_integrations.reasoning.config import SETTING_NAMES, SeaKRConfig
from seakr_integrations.reasoning.events import QuestionAnswered

__all__ = ["SeaKRWorkflow"]


class SeaKRWorkflow(SeaKRComponent, Workflow):
    """SeaKR over any LlamaIndex retriever, as a workflow whose phases stream as events.

    ``handler = workflow.run(question="...")``; ``async for ev in handler.stream_events()`` yields, in order,
    ``StepAssessedEvent``, ``PassagesRetrievedEvent``, ``PassagesRerankedEvent``, ``StepFinishedEvent`` (per
    round of the loop) and ``AnswerChosenEvent`` (or ``QuestionFailedEvent`` before the run raises); ``await
    handler`` returns a ``QuestionAnsweredEvent`` with the
    ``answer``, the chosen ``source_nodes`` and the whole ``trace``.  Each run is one question; start several runs
    to answer several questions at once (their model calls share back-end batches).

    Args:
        retriever: Any LlamaIndex retriever, or a core retriever such as ``BM25Index``.
        llm: The self-aware model (``SeaKRLLM``, or a ``SelfAwareBackend``).
        config: SeaKR's settings: the loop samples as ``llm`` does, except where ``config`` changes a setting from
            its default (``SeaKRLLM.loop_config``).
        search_timeout: Seconds one search may take before it fails like any retrieval error (``None``: no limit).
        on_retrieval_error: ``"raise"`` (the default), or ``"answer_without"``: a failing retriever becomes a note
            in the trace instead of an error.
        timeout: Seconds a run may take (``None``: no limit; SeaKR answers take seconds to minutes).
        **kwargs: ``Workflow``'s (``verbose``, ``num_concurrent_runs``...).

    Raises:
        TypeError: ``llm`` is not self-aware, ``retriever`` is not a retriever, or an unknown keyword (the error
            names the nearest one), at construction.
        ValueError: From a run: an empty question.  ``RetrievalError``: the retriever failed.
    """

    def __init__(
        self,
        retriever: Any,
        llm: SeaKRLLM | Any,
        config: SeaKRConfig | None = None,
        *,
        search_timeout: float | None = DEFAULT_SEARCH_TIMEOUT,
        on_retrieval_error: RetrievalErrorPolicy = "raise",
        timeout: float | None = None,
        **kwargs: Any,
    ) -> None:
        check_keywords("SeaKRWorkflow", kwargs, accepted_keywords(type(self)), config_settings=SETTING_NAMES)
        self.llm, self.retriever, self._seakr_loop = loop_inputs(
            "SeaKRWorkflow", llm, retriever, config, search_timeout, on_retrieval_error
        )
        super().__init__(timeout=timeout, **kwargs)

    @step
    async def answer(self, ctx: Context, ev: SeaKRQuestionEvent) -> QuestionAnsweredEvent:
        """Run the SeaKR loop for the question in a worker thread, streaming each phase as it completes."""
        question = checked_question(ev.question, "the question is empty: run the workflow with question='...'")
        answered, tracker = await run_question(
            lambda questions, observers: self.seakr.iter_events(questions, observers=observers),
            question,
            QuestionAnswered,
            ctx,
            thread_name="seakr-workflow",
        )
        result = answered.result
        return QuestionAnsweredEvent(
            answer=result.answer,
            strategy=result.strategy,
            source_nodes=tracker.source_nodes(result),
            trace=result.to_dict(),
        )
