"""``SeaKRWorkflow``: the SeaKR loop as a LlamaIndex Workflow that streams each phase as a typed event.

The loop stays in the core (``SeaKR.iter_events``, the same code as ``SeaKR.answer``); the workflow runs it in a
worker thread and translates each core event into a workflow event the moment it happens: the uncertainty check,
the search, the self-aware re-ranking, the reasoning step and the final choice.  Runs are independent, so many run
concurrently; their model calls meet in one ``ConcurrentBackend`` that batches them together.
"""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

from llama_index.core.workflow import Context, Workflow, step

from llamaindex_seakr.events import (
    AnswerChosenEvent,
    KnowledgeGatheredEvent,
    PassagesRerankedEvent,
    PassagesRetrievedEvent,
    QuestionAnsweredEvent,
    QuestionFailedEvent,
    SeaKRPhase,
    SeaKRQuestionEvent,
    StepAssessedEvent,
    StepFinishedEvent,
)
from llamaindex_seakr.llm import SeaKRLLM, as_seakr_llm
from llamaindex_seakr.nodes import NodeSearch, annotate, as_llama_retriever, plain_uncertainty
from llamaindex_seakr.observer import NodeTracker
from llamaindex_seakr.threads import iterate_in_thread
from seakr_integrations.keywords import accepted_keywords, check_keywords
from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT, RetrievalErrorPolicy, check_search_settings
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.decisions import CandidateScore
from seakr_integrations.reasoning.events import (
    AnswerChosen,
    KnowledgeGathered,
    PassagesReranked,
    PassagesRetrieved,
    QuestionAnswered,
    QuestionFailed,
    SeaKREvent,
    StepAssessed,
    StepFinished,
)
from seakr_integrations.reasoning.reasoner import SeaKR
from seakr_integrations.reasoning.trace import SeaKRResult
from seakr_integrations.self_aware_model import LoopCache

__all__ = ["SeaKRWorkflow"]


class SeaKRWorkflow(Workflow):
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
        check_keywords("SeaKRWorkflow", kwargs, accepted_keywords(type(self)), config=True)
        self.llm = as_seakr_llm(llm, "SeaKRWorkflow")
        self.retriever = as_llama_retriever(retriever, "SeaKRWorkflow")
        if config is not None and not isinstance(config, SeaKRConfig):
            raise TypeError(f"config must be a SeaKRConfig, got {type(config).__name__}")
        self.given_config = config
        """The config as given (``config`` is what the loop runs with)."""
        self._search = NodeSearch(self.retriever)
        search_timeout, on_retrieval_error = check_search_settings(search_timeout, on_retrieval_error)
        self._search_settings = {"search_timeout": search_timeout, "on_retrieval_error": on_retrieval_error}
        self._loops = LoopCache()
        super().__init__(timeout=timeout, **kwargs)

    @property
    def config(self) -> SeaKRConfig:
        """The settings the loop runs with: the LLM's sampling, with the given config's changes on top."""
        return self.llm.loop_config(self.given_config)

    @property
    def seakr(self) -> SeaKR:
        """The core SeaKR object each run drives (built on first use, ``LoopCache``)."""
        return self._loops.get(self.llm.backend, self._search, self.config, **self._search_settings)

    @step
    async def answer(self, ctx: Context, ev: SeaKRQuestionEvent) -> QuestionAnsweredEvent:
        """Run the SeaKR loop for the question in a worker thread, streaming each phase as it completes."""
        question = ev.question
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question is empty: run the workflow with question='...'")
        question = question.strip()
        tracker = NodeTracker()
        result: SeaKRResult | None = None

        def events(stop: Any) -> Any:
            tracker.stop = stop
            return self.seakr.iter_events([question], observers=[tracker])

        # aclosing: if streaming fails, the loop's thread is told to stop at once, not when the generator is collected
        async with aclosing(iterate_in_thread(events, name="seakr-workflow")) as stream:
            async for core_event in stream:
                if isinstance(core_event, QuestionAnswered):
                    result = core_event.result
                    continue
                phase = self.translate(core_event, tracker)
                if phase is not None:
                    ctx.write_event_to_stream(phase)
        if result is None:  # pragma: no cover - iter_events always ends a question with QuestionAnswered
            raise RuntimeError(f"the SeaKR loop ended without an answer for {question!r}")
        return QuestionAnsweredEvent(
            answer=result.answer,
            strategy=result.strategy,
            source_nodes=tracker.source_nodes(result),
            trace=result.to_dict(),
        )

    @staticmethod
    def translate(event: SeaKREvent, tracker: NodeTracker) -> SeaKRPhase | None:
        """The workflow event for a core event (nodes mapped back to the retriever's own)."""
        common = {"question": event.question, "data": event.to_dict()}
        if isinstance(event, StepAssessed):
            s = event.step
            return StepAssessedEvent(
                **common,
                step_index=s.index,
                generation=s.pseudo_generation.strip(),
                uncertainty=plain_uncertainty(s.uncertainty),
                decision=s.decision,
            )
        if isinstance(event, PassagesRetrieved):
            return PassagesRetrievedEvent(
                **common,
                step_index=event.step_index,
                query=event.query,
                nodes=[tracker.node(p) for p in event.passages],
                error=event.error,
            )
        if isinstance(event, PassagesReranked):
            ranked = sorted(event.candidates, key=lambda c: (c.rank_value, c.rank))
            nodes = []
            for c in ranked:
                score = CandidateScore.from_candidate(c)
                nodes.append(annotate(tracker.node(c.passage), score.to_metadata(), score=score.relevance))
            return PassagesRerankedEvent(
                **common, step_index=event.step_index, nodes=nodes, chosen_passage_id=event.chosen_passage_id
            )
        if isinstance(event, StepFinished):
            s = event.step
            return StepFinishedEvent(
                **common, step_index=s.index, decision=s.decision, accepted=s.accepted, stop=s.stop
            )
        if isinstance(event, AnswerChosen):
            return AnswerChosenEvent(
                **common,
                answer=event.answer,
                strategy=event.strategy,
                candidates=common["data"]["finals"],
                uncertainties=event.choice.to_metadata()["seakr_final_uncertainties"],
            )
        if isinstance(event, KnowledgeGathered):
            g = event.gathered
            return KnowledgeGatheredEvent(
                **common,
                nodes=[tracker.node(p) for p in g.passages],
                rationale=g.rationale,
                stop=g.stop_reason,
                lm_calls=g.lm_calls,
                searches=g.searches,
            )
        if isinstance(event, QuestionFailed):
            return QuestionFailedEvent(**common, error=common["data"]["error"])
        return None
