"""The public face of SeaKR and its baselines: answer one question, many, or stream their decisions.

It checks the input, runs one program per question on the streaming driver and hands back results, errors and
events; what a program decides is in ``seakr_loop`` and ``baselines`` (``docs/design/reasoning.md``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.openai_plain import check_estimators
from seakr_integrations.backends.scored import probe_scores
from seakr_integrations.config_resolution import ResolvedConfig, resolve_config
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.quoting import quoted
from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT, ModelCalls, RetrievalErrorPolicy
from seakr_integrations.reasoning.calls import RetrievalError as RetrievalError
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.driver import Answered, Driver, Failed
from seakr_integrations.reasoning.events import Observer, QuestionAnswered, QuestionFailed, SeaKREvent
from seakr_integrations.reasoning.gathering import Gathering
from seakr_integrations.reasoning.query import BuiltQuery, has_words
from seakr_integrations.reasoning.records import Assessment, CandidateTrace
from seakr_integrations.reasoning.seakr_loop import SeaKRLoop
from seakr_integrations.reasoning.state import Program, QuestionState
from seakr_integrations.reasoning.trace import SeaKRResult
from seakr_integrations.retrieval.passage import Passage, Retriever
from seakr_integrations.uncertainty.estimate import Uncertainty
from seakr_integrations.uncertainty.prompt import PROBE_TOKENS


def question_error(index: int, question: object) -> ValueError | None:
    """Why question ``index`` (its place in the caller's batch) cannot be answered: empty, not a string, or no word
    to search for; ``None`` when it can.  A batch reports this error in that question's place alone."""
    if not isinstance(question, str) or not question.strip():
        return ValueError(f"question {index} is empty (or not a string): pass the question text")
    if not has_words(question):
        return ValueError(
            f"question {index} ({quoted(question)}) has no words, so nothing could be searched for: pass the "
            "question text"
        )
    return None


def _check_parts(backend: object, retriever: object) -> None:
    """A ``TypeError`` that says what is expected, before anything is asked of ``backend`` or ``retriever``."""
    if not isinstance(backend, SelfAwareBackend):
        raise TypeError(
            f"backend must be a self-aware back-end (HFBackend, VLLMBackend or a SelfAwareBackend subclass) that "
            f"returns hidden states; got {type(backend).__name__}, which cannot measure SeaKR's uncertainty"
        )
    if retriever is not None and not callable(getattr(retriever, "search", None)):
        raise TypeError(
            f"retriever must have a search(query, k) method returning Passages, got {type(retriever).__name__}"
        )


class Reasoner(ABC):
    """A way of answering questions over a self-aware back-end and a retriever (SeaKR, or a baseline); subclasses
    give the program that answers one question (:meth:`program`), everything else is shared.

    Args:
        backend: The LM (``HFBackend``, ``VLLMBackend`` or any ``SelfAwareBackend``).
        retriever: Anything with ``search(query, k) -> list[Passage]`` (e.g. ``BM25Index``) that allows concurrent
            calls, as searches run on several threads (the built-in and LangChain/LlamaIndex retrievers do).
        config: The settings; ``SeaKRConfig()`` when omitted.
        search_timeout: Seconds one search may take before it fails with a ``TimeoutError`` (handled by
            ``on_retrieval_error``); ``None`` waits for ever.  How long to wait, not what is computed: results files
            and calibration profiles do not record it.
        on_retrieval_error: ``"raise"`` (the error names the question) or ``"answer_without"`` (answer with what was
            gathered so far and record the failure in the trace).
    """

    def __init__(
        self,
        backend: SelfAwareBackend,
        retriever: Retriever | None = None,
        config: SeaKRConfig | None = None,
        *,
        search_timeout: float | None = DEFAULT_SEARCH_TIMEOUT,
        on_retrieval_error: RetrievalErrorPolicy = "raise",
    ) -> None:
        _check_parts(backend, retriever)
        self.backend = backend
        self.retriever = retriever
        self.config = config or SeaKRConfig()
        self.calls = ModelCalls(
            backend, self.config, search_timeout=search_timeout, on_retrieval_error=on_retrieval_error
        )

    @abstractmethod
    def program(self, state: QuestionState) -> Program:
        """The program that answers ``state.question`` and returns its ``SeaKRResult``."""

    def answer(self, question: str) -> SeaKRResult:
        """Answer one question; the result carries the full decision trace."""
        return self.answer_many([question])[0]

    def answer_many(
        self, questions: Sequence[str], *, max_in_flight: int = 32, return_exceptions: bool = False
    ) -> list[SeaKRResult | Exception]:
        """Answer many questions at once; the results in the order of ``questions``.

        Args:
            max_in_flight: Questions in progress at once (their calls share the engine's batches).
            return_exceptions: Put a failed (or empty, word-less) question's exception in its place, as LangChain's
                ``batch`` does.  Otherwise such a question is refused before any work starts, and the first other
                failure (in question order) is raised once all have finished, every result in its ``results``.
        """
        if not return_exceptions:
            self._states(questions, None)  # refuses an unanswerable question before any work starts
        results: list[Any] = [None] * len(questions)
        for i, result in self.iter_answers(questions, max_in_flight=max_in_flight):
            results[i] = result
        if not return_exceptions:
            failed = next((r for r in results if isinstance(r, Exception)), None)
            if failed is not None:
                failed.results = results  # type: ignore[attr-defined]
                failed.add_note("the other questions' results are in this exception's .results")
                raise failed
        return results

    def iter_answers(
        self, questions: Iterable[str], *, max_in_flight: int = 32
    ) -> Iterator[tuple[int, SeaKRResult | Exception]]:
        """Yield ``(index, result)`` as each question finishes (a long run can save as it goes); a question that
        failed or cannot be answered (empty, not a string, no words) yields its exception instead.

        Raises:
            ValueError: ``questions`` is a single string, or ``max_in_flight`` < 1.
        """
        for event in self.iter_events(questions, max_in_flight=max_in_flight, return_exceptions=True):
            if isinstance(event, QuestionAnswered):
                yield event.question_index, event.result
            elif isinstance(event, QuestionFailed):
                yield event.question_index, event.error

    def iter_events(
        self,
        questions: Iterable[str],
        *,
        max_in_flight: int = 32,
        observers: Sequence[Observer | None] | None = None,
        return_exceptions: bool = False,
    ) -> Iterator[SeaKREvent]:
        """Answer the questions, yielding every phase of the loop as it completes (``StepAssessed``,
        ``PassagesRetrieved``, ``PassagesReranked``, ``StepFinished``, ``AnswerChosen``), then per question a
        ``QuestionAnswered`` with its result or a ``QuestionFailed`` with its error.

        Args:
            max_in_flight: How many questions run together (their LM calls share the engine's batches).
            observers: One ``Observer`` (or ``None``) per question: hooks for its model calls, searches and events.
            return_exceptions: Report failures only as ``QuestionFailed`` events; otherwise as in :meth:`answer_many`.

        Raises:
            ValueError: A question is empty, not a string or has no words (without ``return_exceptions``; checked
                before any work starts), a wrong number of observers, or ``max_in_flight`` < 1.
            RetrievalError: The retriever failed and ``on_retrieval_error`` is ``"raise"``.
        """
        if self.retriever is None:
            raise ValueError("this SeaKR has no retriever: pass one to SeaKR(backend, retriever) to answer questions")
        states, refused = self._states(questions, observers, refuse=not return_exceptions)
        driver = Driver(self.backend, self.retriever, max_in_flight)
        first: Exception | None = None
        for state, error in refused:  # each in its own place; the others are answered
            failed = QuestionFailed(state.index, state.question, error)
            state.observer.on_event(failed)
            yield failed
        for item in driver.run((s, self.program(s)) for s in states):
            if isinstance(item, Answered):
                event: SeaKREvent = QuestionAnswered(item.state.index, item.state.question, item.value)
            elif isinstance(item, Failed):
                event = QuestionFailed(item.state.index, item.state.question, item.error)
                first = first or item.error
            else:
                yield item
                continue
            item.state.observer.on_event(event)
            yield event
        if first is not None and not return_exceptions:
            raise first

    @staticmethod
    def _states(
        questions: Iterable[str], observers: Sequence[Observer | None] | None, refuse: bool = True
    ) -> tuple[list[QuestionState], list[tuple[QuestionState, ValueError]]]:
        """The states to answer, and those refused with their errors (``refuse``: raise the first instead)."""
        if isinstance(questions, str):
            raise ValueError("questions must be a list of strings; pass [question] for a single one")
        questions = list(questions)
        errors = {i: e for i, q in enumerate(questions) if (e := question_error(i, q)) is not None}
        if errors and refuse:
            raise errors[min(errors)]
        if observers is None:
            observers = [None] * len(questions)
        elif len(observers) != len(questions):
            raise ValueError(f"{len(observers)} observers for {len(questions)} questions: pass one per question")
        states: list[QuestionState] = []
        refused: list[tuple[QuestionState, ValueError]] = []
        for i, (q, o) in enumerate(zip(questions, observers, strict=True)):
            if i in errors:
                refused.append((QuestionState(q if isinstance(q, str) else repr(q), i, o), errors[i]))
            else:
                states.append(QuestionState(q.strip(), i, o))
        return states, refused

    def _run_all(
        self, states: list[QuestionState], program: Callable[[QuestionState], Program], max_in_flight: int
    ) -> list[Any]:
        """Run ``program`` for every state on the driver; the values in order (the first failure raised at the end)."""
        results: list[Any] = [None] * len(states)
        failed: Exception | None = None
        for item in Driver(self.backend, self.retriever, max_in_flight).run((s, program(s)) for s in states):
            if isinstance(item, Answered):
                results[item.state.index] = item.value
            elif isinstance(item, Failed):
                failed = failed or item.error
        if failed is not None:
            raise failed
        return results


class SeaKR(Reasoner, Gathering):
    """Self-aware knowledge retrieval over any self-aware back-end and any retriever: answer (``Reasoner``),
    gather the passages without answering (``Gathering``: ``gather``, ``gather_many``, ``gather_events``), or run
    one of the loop's decisions alone (``assess``, ``search_query``, ``rerank``).

    Args:
        backend, retriever, search_timeout, on_retrieval_error: As for :class:`Reasoner`.
        config: SeaKR's settings (the defaults when omitted), resolved here by ``resolve_config`` (``delta=None``:
            the calibrated delta and its cascade band), or that function's result for this back-end (reads no file).

    Attributes:
        config: The settings that run (delta and cascade band resolved).
        requested_config: The config as given.
        profile: The calibration profile ``config`` came from (``None``: none exists, a warning said so).

    Raises:
        ValueError: An estimator of ``config`` that the back-end cannot feed (EigenScore, the default, on a plain
            OpenAI-compatible server: the message says which estimator to pass or which server to start), or a
            resolved config made for another model.

    Example:
        >>> seakr = SeaKR(HFBackend("smollm2"), BM25Index.open("index/"))  # doctest: +SKIP
        >>> result = seakr.answer("Who lived longer, Alejandro Jodorowsky or Philip Saville?")  # doctest: +SKIP
        >>> print(result.answer, result.strategy)  # doctest: +SKIP
    """

    PROBE_TOKENS: ClassVar[int] = PROBE_TOKENS

    def __init__(
        self,
        backend: SelfAwareBackend,
        retriever: Retriever | None = None,
        config: SeaKRConfig | ResolvedConfig | None = None,
        *,
        search_timeout: float | None = DEFAULT_SEARCH_TIMEOUT,
        on_retrieval_error: RetrievalErrorPolicy = "raise",
    ) -> None:
        _check_parts(backend, retriever)
        given = config.requested if isinstance(config, ResolvedConfig) else config or SeaKRConfig()
        screen = given.rule_set.reads().screen
        check_estimators(backend, [("estimator", given.estimator), ("token-cascade estimator", screen)])
        if not isinstance(config, ResolvedConfig):
            config = resolve_config(backend, given)
        elif config.model != backend.model_name:
            raise ValueError(
                f"this config was resolved for {config.model}, not {backend.model_name}: pass "
                "resolve_config(backend, config) for the back-end that runs"
            )
        super().__init__(
            backend, retriever, config.config, search_timeout=search_timeout, on_retrieval_error=on_retrieval_error
        )
        self.requested_config = given
        self.profile = config.profile
        self.loop = SeaKRLoop(self.config, self.calls)
        """SeaKR's decisions (the algorithm of SPEC section 5)."""

    def program(self, state: QuestionState) -> Program:
        return self.loop.program(state)

    def assess(self, question: str, *, steps: Sequence[str] = (), passages: Sequence[Passage] = ()) -> Assessment:
        """SeaKR's uncertainty check alone: generate the next step (multi-hop) or the direct answer (single-hop)
        for ``question`` (or a query), after the reasoning ``steps`` and with the ``passages`` already in the
        context, and decide, by the same rule as the loop, whether the model needs to retrieve."""
        return self.assess_many([question], steps=steps, passages=passages)[0]

    def assess_many(
        self,
        questions: Sequence[str],
        *,
        steps: Sequence[str] = (),
        passages: Sequence[Passage] = (),
        observers: Sequence[Observer | None] | None = None,
        max_in_flight: int = 32,
    ) -> list[Assessment]:
        """``assess`` for many questions, their calls sharing the engine; results in order."""
        states, _ = self._states(questions, observers)
        for state in states:
            state.steps, state.docs = [s for s in steps if s.strip()], list(passages)
        return self._run_all(states, self.loop.assess, max_in_flight)

    def search_query(
        self, assessment: Assessment, *, steps: Sequence[str] = (), passages: Sequence[Passage] = ()
    ) -> BuiltQuery:
        """The query the loop would search for after ``assessment`` (an uncertain check from :meth:`assess`, with
        the same ``steps`` and ``passages``): the step's low-confidence words masked, kept on the question
        (multi-hop); the question itself (single-hop, as the loop searches).  What a stand-alone gate that retrieves
        on its own (an agent middleware) should search for."""
        state = QuestionState(assessment.question.strip())
        state.steps, state.docs = [s for s in steps if s.strip()], list(passages)
        if self.config.mode == "single_hop":
            return BuiltQuery(state.question, (), False)
        return self.loop.search_query(state, assessment.output)

    def rerank(
        self,
        question: str,
        passages: Sequence[Passage],
        *,
        steps: Sequence[str] = (),
        context: Sequence[Passage] = (),
    ) -> list[CandidateTrace]:
        """SeaKR's self-aware re-ranking alone: order the passages by the model's uncertainty after reading each
        (lowest first; an empty generation ranks last; ties keep the given order).  A passage is scored by the next
        step written with it after ``steps`` and the ``context`` passages (multi-hop), or by the answer written from
        it alone (single-hop).

        Returns:
            One ``CandidateTrace`` per passage, best first (``rank``: its 1-based position in ``passages``).
        """
        return self.rerank_many([(question, passages)], steps=steps, context=context)[0]

    def rerank_many(
        self,
        requests: Sequence[tuple[str, Sequence[Passage]]],
        *,
        steps: Sequence[str] = (),
        context: Sequence[Passage] = (),
        observers: Sequence[Observer | None] | None = None,
        max_in_flight: int = 32,
    ) -> list[list[CandidateTrace]]:
        """``rerank`` for many ``(question, passages)`` pairs, their calls sharing the engine; results in order."""
        requests = list(requests)
        states, _ = self._states([q for q, _ in requests], observers)
        for state, (_, found) in zip(states, requests, strict=True):
            bad = [type(p).__name__ for p in found if not isinstance(p, Passage)]
            if bad:
                raise TypeError(f"rerank takes Passage objects, got {bad[0]}")
            state.steps, state.docs = [s for s in steps if s.strip()], list(context)
            state.found = list(found)
        return self._run_all(states, self.loop.rerank_only, max_in_flight)

    def probe_uncertainties(self, prompts: list[str], outputs: list[SelfAwareOutput]) -> list[Uncertainty]:
        """The "prompt" estimator's uncertainty of finished calls: one batched probe asks the model, after each
        call's prompt and generation, whether it has sufficient knowledge (``1 - P(yes)`` of its greedy reply)."""
        return probe_scores(self.backend, prompts, outputs, self.config.call_sampling())
