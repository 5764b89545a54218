"""SeaKR's reasoning loop (SPEC sections 5-7): when to retrieve, which passage to keep, how to answer.

Each question runs as a generator that yields the LM calls it needs next and receives their scored outputs, or a
search it needs and receives the passages.  One driver then serves any number of questions: it gathers the pending
calls of every question in flight into a single back-end batch, and the searches of a round into one
``search_many`` call when the retriever offers it (an Elasticsearch cluster answers them concurrently), so
``answer_many`` shares engine batches and search round trips across questions while each question's logic stays a
plain sequential reading of the paper's algorithm.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.calibration import check_calibrated
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import SamplingConfig
from seakr_integrations.reasoning.answer import ANSWER_PROMPT, extract_answer, has_answer, is_unknown
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.events import (
    AnswerChosen,
    Observer,
    PassagesReranked,
    PassagesRetrieved,
    QuestionAnswered,
    SeaKREvent,
    StepAssessed,
    StepFinished,
    snapshot,
)
from seakr_integrations.reasoning.exemplars import exemplars
from seakr_integrations.reasoning.prompts import PromptBuilder
from seakr_integrations.reasoning.query import BuiltQuery, build_query
from seakr_integrations.reasoning.trace import Assessment, CandidateTrace, FinalTrace, SeaKRResult, StepTrace
from seakr_integrations.retrieval.passage import Passage, Retriever
from seakr_integrations.uncertainty.estimate import Uncertainty, estimate
from seakr_integrations.uncertainty.prompt import probe_after, prompt_uncertainty

__all__ = ["RetrievalError", "SeaKR"]

Call = tuple[str, SamplingConfig]
Scored = tuple[SelfAwareOutput, Uncertainty]


@dataclass(frozen=True)
class _Search:
    """A program's request for a search; the driver sends back the passages (or throws the search's error in)."""

    query: str
    k: int


Request = list[Call] | _Search
Program = Generator[Request, Any, SeaKRResult]
_SENTENCES = re.compile(r"(?<=[.!?])\s+")


class RetrievalError(RuntimeError):
    """The retriever failed while answering a question (the message names the question and the query)."""


class _Question:
    """Mutable state of one question in flight; only the reasoner touches it."""

    def __init__(self, question: str, index: int = 0, observer: Observer | None = None) -> None:
        self.question = question
        self.index = index
        self.observer = observer or Observer()
        self.steps: list[str] = []
        self.docs: list[Passage] = []
        self.found: list[Passage] = []
        self.trace: list[StepTrace] = []
        self.notes: list[str] = []
        self.lm_calls = 0
        self.generated_tokens = 0
        self.searches = 0
        self.outbox: list[Any] = []

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def emit(self, event: SeaKREvent) -> SeaKREvent:
        """Hand ``event`` to the observer and queue it for the driver to yield."""
        self.observer.on_event(event)
        self.outbox.append(event)
        return event


class SeaKR:
    """Self-aware knowledge retrieval over any self-aware back-end and any retriever.

    Args:
        backend: The LM (``HFBackend``, ``VLLMBackend`` or any ``SelfAwareBackend``).
        retriever: Anything with ``search(query, k) -> list[Passage]`` (e.g. ``BM25Index``).  A retriever that
            also has ``search_many(queries, k, return_exceptions=True)`` (e.g. ``ElasticsearchRetriever``) gets
            the searches of each round of ``answer_many`` in one call, to run them concurrently; it returns one
            passage list or exception per query, in order.
        config: SeaKR's settings; the authors' defaults when omitted.

    Example:
        >>> seakr = SeaKR(HFBackend("smollm2"), BM25Index.open("index/"))  # doctest: +SKIP
        >>> result = seakr.answer("Who lived longer, Alejandro Jodorowsky or Philip Saville?")  # doctest: +SKIP
        >>> print(result.answer, result.strategy)  # doctest: +SKIP
    """

    reads_delta: ClassVar[bool] = True
    """Whether this loop's decisions read ``config.delta`` (the baselines built on the loop do not)."""

    def __init__(
        self, backend: SelfAwareBackend, retriever: Retriever | None = None, config: SeaKRConfig | None = None
    ) -> None:
        if not isinstance(backend, SelfAwareBackend):
            raise TypeError(
                f"backend must be a self-aware back-end (HFBackend, VLLMBackend or a SelfAwareBackend subclass) that "
                f"returns hidden states; got {type(backend).__name__}, which cannot measure SeaKR's uncertainty"
            )
        if retriever is not None and not callable(getattr(retriever, "search", None)):
            raise TypeError(
                f"retriever must have a search(query, k) method returning Passages, got {type(retriever).__name__}"
            )
        self.backend = backend
        self.retriever = retriever
        self.config = config or SeaKRConfig()
        cfg = self.config
        self.profile = (
            check_calibrated(backend.model_name, backend.resolve_layer(cfg.layer), cfg) if self.reads_delta else None
        )
        """The calibrated-delta profile for this model and these settings (``None``: none saved, a warning said so)."""
        tokenizer = backend.tokenizer
        use_chat = cfg.chat_template
        has_template = bool(getattr(tokenizer, "chat_template", None))
        if use_chat is None:
            use_chat = has_template
        elif use_chat and not has_template:
            raise ValueError(f"chat_template=True but {backend.model_name}'s tokenizer has no chat template")
        self.prompt = PromptBuilder(
            exemplars(cfg.style, cfg.num_exemplars),
            backend.chat_prompt if use_chat else None,
            answer_prefix=cfg.chat_answer_prefix,
        )
        self._decode: Callable[[list[int]], str] = lambda ids: tokenizer.decode(ids, skip_special_tokens=True)
        self._tokenize_text: Callable[[str], list[int]] = lambda text: list(
            tokenizer(text, add_special_tokens=False).input_ids
        )
        self._budget = backend.max_context - cfg.max_tokens - 1

    # ----------------------------------------------------------------------------------------------- public API
    def answer(self, question: str) -> SeaKRResult:
        """Answer one question; the result carries the full decision trace."""
        return self.answer_many([question])[0]

    def answer_many(self, questions: Sequence[str], *, max_in_flight: int = 32) -> list[SeaKRResult]:
        """Answer many questions, keeping up to ``max_in_flight`` in progress so their LM calls share batches.

        Returns the results in the order of ``questions``.
        """
        results: list[SeaKRResult | None] = [None] * len(questions)
        for i, result in self.iter_answers(questions, max_in_flight=max_in_flight):
            results[i] = result
        return results  # type: ignore[return-value]

    def iter_answers(self, questions: Iterable[str], *, max_in_flight: int = 32) -> Iterator[tuple[int, SeaKRResult]]:
        """Yield ``(index, result)`` as each question finishes (so a long run can save as it goes).

        Raises:
            ValueError: A question is empty or not a string (checked before any work starts), or
                ``max_in_flight`` < 1.
            RetrievalError: The retriever failed and ``on_retrieval_error`` is ``"raise"``.
        """
        for event in self.iter_events(questions, max_in_flight=max_in_flight):
            if isinstance(event, QuestionAnswered):
                yield event.question_index, event.result

    def iter_events(
        self,
        questions: Iterable[str],
        *,
        max_in_flight: int = 32,
        observers: Sequence[Observer | None] | None = None,
    ) -> Iterator[SeaKREvent]:
        """Answer the questions, yielding every phase of the loop as it completes (``StepAssessed``,
        ``PassagesRetrieved``, ``PassagesReranked``, ``StepFinished``, ``AnswerChosen``) and a
        ``QuestionAnswered`` with the result when a question is done.

        Args:
            questions: The questions.
            max_in_flight: How many questions run together (their LM calls share back-end batches).
            observers: One ``Observer`` (or ``None``) per question: hooks for its model calls, searches and events.

        Raises:
            ValueError: A question is empty or not a string (checked before any work starts), a wrong number of
                observers, or ``max_in_flight`` < 1.
            RetrievalError: The retriever failed and ``on_retrieval_error`` is ``"raise"``.
        """
        if self.retriever is None:
            raise ValueError("this SeaKR has no retriever: pass one to SeaKR(backend, retriever) to answer questions")
        states = self._states(questions, observers)
        for item in self._drive(((s, self._program(s)) for s in states), max_in_flight):
            if isinstance(item, SeaKREvent):
                yield item
            else:
                state, result = item
                event = QuestionAnswered(state.index, state.question, result)
                state.observer.on_event(event)
                yield event

    def assess(self, question: str, *, steps: Sequence[str] = (), passages: Sequence[Passage] = ()) -> Assessment:
        """SeaKR's uncertainty check alone: generate the next step (multi-hop) or the direct answer (single-hop)
        for ``question`` and decide, by the same rule as the loop, whether the model needs to retrieve.

        Args:
            question: The question (or query) to assess.
            steps: Reasoning steps already taken, if any.
            passages: Passages already in the context, if any.
        """
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
        """``assess`` for many questions in shared back-end batches; results in order."""
        states = self._states(questions, observers)
        for state in states:
            state.steps, state.docs = [s for s in steps if s.strip()], list(passages)
        return self._collect(states, self._assess, max_in_flight)

    def rerank(
        self,
        question: str,
        passages: Sequence[Passage],
        *,
        steps: Sequence[str] = (),
        context: Sequence[Passage] = (),
    ) -> list[CandidateTrace]:
        """SeaKR's self-aware re-ranking alone: try each passage in the prompt and order them by the uncertainty
        the model has after reading it (lowest first; an empty generation ranks last; ties keep the given order).

        In multi-hop mode a passage is scored by the next reasoning step written with it (after ``steps``, with
        ``context`` passages shown before it); in single-hop mode by the answer written from it alone.

        Returns:
            One ``CandidateTrace`` per passage, best first; ``rank`` is its 1-based position in ``passages`` and
            ``chosen`` marks the best.
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
        """``rerank`` for many ``(question, passages)`` pairs in shared back-end batches; results in order."""
        requests = list(requests)
        states = self._states([q for q, _ in requests], observers)
        for state, (_, found) in zip(states, requests, strict=True):
            bad = [type(p).__name__ for p in found if not isinstance(p, Passage)]
            if bad:
                raise TypeError(f"rerank takes Passage objects, got {bad[0]}")
            state.steps, state.docs = [s for s in steps if s.strip()], list(context)
            state.found = list(found)
        return self._collect(states, self._rerank_only, max_in_flight)

    # ------------------------------------------------------------------------------------------------- driver
    def _states(self, questions: Iterable[str], observers: Sequence[Observer | None] | None) -> list[_Question]:
        if isinstance(questions, str):
            raise ValueError("questions must be a list of strings; pass [question] for a single one")
        questions = list(questions)
        for i, q in enumerate(questions):
            if not isinstance(q, str) or not q.strip():
                raise ValueError(f"question {i} is empty (or not a string): pass the question text")
        if observers is None:
            observers = [None] * len(questions)
        elif len(observers) != len(questions):
            raise ValueError(f"{len(observers)} observers for {len(questions)} questions: pass one per question")
        return [
            _Question(q.strip(), i, o or Observer()) for i, (q, o) in enumerate(zip(questions, observers, strict=True))
        ]

    def _collect(self, states: list[_Question], program: Callable[[_Question], Generator], max_in_flight: int) -> list:
        results: list[Any] = [None] * len(states)
        for item in self._drive(((s, program(s)) for s in states), max_in_flight):
            if not isinstance(item, SeaKREvent):
                results[item[0].index] = item[1]
        return results

    def _drive(
        self, programs: Iterable[tuple[_Question, Generator]], max_in_flight: int
    ) -> Iterator[SeaKREvent | tuple[_Question, Any]]:
        """Run question programs together: every round gathers the pending LM calls of all programs in flight
        into one back-end batch.  Yields each program's events as they happen and ``(state, value)`` when it
        returns."""
        if not isinstance(max_in_flight, int) or max_in_flight < 1:
            raise ValueError(f"max_in_flight={max_in_flight!r}: must be an integer >= 1")
        waiting = iter(programs)
        active: dict[int, tuple[_Question, Generator, list[Call]]] = {}
        searching: dict[int, tuple[_Question, Generator, _Search]] = {}
        out: list[SeaKREvent | tuple[_Question, Any]] = []

        def advance(state: _Question, program: Generator, value: Any, error: Exception | None = None) -> None:
            state.outbox = out
            try:
                request = program.send(value) if error is None else program.throw(error)
            except StopIteration as done:
                out.append((state, done.value))
                return
            if isinstance(request, _Search):
                searching[state.index] = (state, program, request)
            else:
                active[state.index] = (state, program, request)

        try:
            exhausted = False
            while True:
                while not exhausted and len(active) + len(searching) < max_in_flight:
                    nxt = next(waiting, None)
                    if nxt is None:
                        exhausted = True
                        break
                    advance(nxt[0], nxt[1], None)
                    yield from out
                    out.clear()
                if searching:  # the searches of this round, together; their programs then go on to LM calls
                    pending = list(searching.values())
                    searching.clear()
                    found = self._search_all([(state, request) for state, _, request in pending])
                    for (state, program, _), result in zip(pending, found, strict=True):
                        if isinstance(result, Exception):
                            advance(state, program, None, result)
                        else:
                            advance(state, program, result)
                        yield from out
                        out.clear()
                    continue
                if not active:
                    if exhausted:
                        return
                    continue
                batch = list(active.values())
                calls = [c for _, _, mine in batch for c in mine]
                for state, _, mine in batch:
                    state.observer.on_lm_start([p for p, _ in mine])
                try:
                    scored = self._run(calls)
                except BaseException as exc:
                    for state, _, _ in batch:
                        state.observer.on_lm_error(exc)
                    raise
                at = 0
                for state, program, mine in batch:
                    part = scored[at : at + len(mine)]
                    at += len(mine)
                    del active[state.index]
                    state.generated_tokens += sum(o.generated_tokens() for o, _ in part)
                    state.observer.on_lm_end([o for o, _ in part], [u for _, u in part])
                    advance(state, program, part)
                    yield from out
                    out.clear()
        finally:
            for _, program, _ in [*active.values(), *searching.values()]:
                program.close()

    def _search_all(self, requests: list[tuple[_Question, _Search]]) -> list[list[Passage] | Exception]:
        """Run a round's searches: each question's passages, or the exception its search raised.

        Questions whose observer searches itself (an adapter routing the search through its framework's
        callbacks) are searched one by one through it.  The others go to the retriever together: in one
        ``search_many`` call when it has one, else one ``search`` each.
        """
        retriever = self.retriever
        results: list[Any] = [None] * len(requests)
        plain: list[int] = []
        for i, (state, request) in enumerate(requests):
            if type(state.observer).search is Observer.search:
                plain.append(i)
            else:
                results[i] = _attempt(state.observer.search, retriever, request.query, request.k)
        search_many = getattr(retriever, "search_many", None)
        if len(plain) < 2 or not callable(search_many):
            for i in plain:
                results[i] = _attempt(retriever.search, requests[i][1].query, requests[i][1].k)  # type: ignore[union-attr]
            return results
        queries = [requests[i][1].query for i in plain]
        many = _attempt(search_many, queries, self.config.n_candidates, return_exceptions=True)
        if not isinstance(many, Exception) and (not isinstance(many, list) or len(many) != len(plain)):
            many = TypeError(
                f"{type(retriever).__name__}.search_many returned {type(many).__name__}"
                f"{f' of {len(many)} results' if isinstance(many, list) else ''} for {len(plain)} queries; it must "
                "return one passage list (or exception) per query, in order"
            )
        for i, result in zip(plain, [many] * len(plain) if isinstance(many, Exception) else many, strict=True):
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result  # e.g. a cancellation: not a search failure to record
            results[i] = result
        return results

    # ------------------------------------------------------------------------------------------------ LM calls
    def _run(self, calls: list[Call]) -> list[Scored]:
        """One back-end call for the batch.  Identical (prompt, config) pairs are generated once: with seeded
        sampling they would return the same output (e.g. both final strategies when there are no steps and no
        passages, or one question asked twice)."""
        unique = list(dict.fromkeys(calls))
        outputs = self.backend.generate([p for p, _ in unique], [c for _, c in unique])
        cfg = self.config
        if cfg.estimator == "prompt":
            uncertainties = self.probe_uncertainties([p for p, _ in unique], outputs)
        else:
            uncertainties = [estimate(o, cfg.estimator, cfg.alpha) for o in outputs]
        scored = dict(zip(unique, zip(outputs, uncertainties, strict=True), strict=True))
        return [scored[call] for call in calls]

    PROBE_TOKENS: ClassVar[int] = 3
    """Tokens the prompt probe may generate ("Yes", "No" and what a tokenizer splits them into)."""

    def probe_uncertainties(self, prompts: list[str], outputs: list[SelfAwareOutput]) -> list[Uncertainty]:
        """The "prompt" estimator (the paper's Table 3): after each call, one batched probe asks the model whether it
        has sufficient knowledge, with the call's prompt and generation in front; ``1 - P(yes)`` of its greedy reply
        is the uncertainty.  The probe's few tokens are not counted in ``generated_tokens``; its calls are counted
        in ``lm_calls``."""
        cfg = self.config
        probes = [probe_after(p, o.greedy.text) for p, o in zip(prompts, outputs, strict=True)]
        fits = [self._fits(p, self.backend.max_context - self.PROBE_TOKENS) for p in probes]
        sampling = SamplingConfig(
            k=2, max_tokens=self.PROBE_TOKENS, stop=("\n",), seed=cfg.seed, layer=cfg.layer, source=cfg.source
        )
        sent = [p for p, ok in zip(probes, fits, strict=True) if ok]
        replies = iter(self.backend.generate(sent, sampling) if sent else [])
        result = []
        for ok in fits:
            if not ok:
                note = f"the probe does not fit {self.backend.model_name}'s context; the model counts as uncertain"
                result.append(Uncertainty(float("inf"), "prompt", num_samples=0, note=note))
                continue
            reply = next(replies).greedy
            result.append(Uncertainty(prompt_uncertainty(reply.text, reply.logprobs), "prompt", num_samples=0))
        return result

    def _fits(self, prompt: str, budget: int | None = None) -> bool:
        """Whether ``prompt`` has at most ``budget`` tokens (default: room left for a full continuation)."""
        budget = self._budget if budget is None else budget
        # Every token covers at least one byte, so a prompt with fewer bytes than the budget (plus room for the
        # special tokens the tokenizer adds) fits without tokenising it twice (the back-end tokenises it again).
        if len(prompt.encode("utf-8")) + 8 <= budget:
            return True
        return len(self.backend.tokenize(prompt)) <= budget

    def _prompt(self, state: _Question, steps: Sequence[str], passages: Sequence[Passage]) -> str:
        """The prompt, dropping the oldest passages while it does not fit the model's context."""
        shown = list(passages)
        while True:
            prompt = self.prompt(state.question, steps, [p.text for p in shown])
            if self._fits(prompt):
                return prompt
            if not shown:
                raise ValueError(
                    f"the prompt for question {state.question!r} does not fit {self.backend.model_name}'s context of "
                    f"{self.backend.max_context} tokens even without passages: lower num_exemplars "
                    f"(now {self.config.num_exemplars}) or max_tokens (now {self.config.max_tokens})"
                )
            dropped = shown.pop(0)
            state.note(f"passage {dropped.id} was left out of a prompt to fit the model's context")

    def _query(self, state: _Question, out: SelfAwareOutput, threshold: float) -> BuiltQuery:
        """The search query from a step's greedy text: words with a token below ``threshold`` masked (SPEC 6)."""
        return build_query(
            out.greedy,
            state.question,
            state.steps[-1] if state.steps else None,
            self._decode,
            self._tokenize_text,
            threshold=threshold,
            max_tokens=self.config.query_max_tokens,
            content_filter=self.config.content_filter,
        )

    @property
    def _lm_calls_per_call(self) -> int:
        return 2 if self.config.estimator == "prompt" else 1  # the prompt estimator adds its probe call

    def _call(self, state: _Question, steps: Sequence[str], passages: Sequence[Passage], *, sentence: bool) -> Call:
        state.lm_calls += self._lm_calls_per_call
        config = self.config.sampling(self.config.stops(has_steps=any(s.strip() for s in steps), one_sentence=sentence))
        return self._prompt(state, steps, passages), config

    # ----------------------------------------------------------------------------------------------- programs
    def _program(self, state: _Question) -> Program:
        if self.config.mode == "single_hop":
            return self._single_hop(state)
        return self._multi_hop(state)

    def _uncertain(self, text: str, u: Uncertainty) -> bool:
        """The self-aware retrieval gate (SPEC section 5): an empty step, or an uncertainty above delta (single-hop:
        not below it), calls for retrieval; ``config.retrieve`` can replace the gate by always or never."""
        if self.config.retrieve != "uncertain":
            return self.config.retrieve == "always"
        if not text.strip():
            return True
        if self.config.mode == "single_hop":
            return not u.value < self.config.delta
        return u.value > self.config.delta

    def _assess(self, state: _Question) -> Generator[list[Call], list[Scored], Assessment]:
        single = self.config.mode == "single_hop"
        ((out, u),) = yield [self._call(state, state.steps, state.docs, sentence=not single)]
        text = out.greedy.text.strip()
        return Assessment(state.question, text, u, self._uncertain(text, u), has_answer(text), out)

    def _search(self, state: _Question, step: StepTrace, query: str) -> Generator[_Search, Any, list[Passage] | None]:
        """Search results, or ``None`` when a tolerated error ended the search (recorded in ``step``).

        The driver runs the search (see :meth:`_search_all`) and sends the results back, or throws the search's
        exception in at the ``yield``, so it is handled here either way."""
        state.searches += 1
        try:
            results = yield _Search(query, self.config.n_candidates)
            bad = [type(p).__name__ for p in results if not isinstance(p, Passage)]
            if bad:
                raise TypeError(f"the retriever returned {bad[0]} objects; search() must return Passage objects")
            found = list(results)
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}"
            if self.config.on_retrieval_error == "raise":
                raise RetrievalError(
                    f"retrieval failed for question {state.question!r} (query {query!r}): {message}; pass "
                    "on_retrieval_error='answer_without' to answer without the passage"
                ) from exc
            step.error = message
            step.stop = "retrieval error"
            state.note(f"retrieval failed for query {query!r} ({message}); answered without it")
            state.emit(PassagesRetrieved(state.index, state.question, step.index, query, (), message))
            return None
        state.emit(PassagesRetrieved(state.index, state.question, step.index, query, tuple(found)))
        return found

    def _score_candidates(
        self, state: _Question, found: Sequence[Passage]
    ) -> Generator[list[Call], list[Scored], list[tuple[CandidateTrace, FinalTrace | None]]]:
        """Try each passage in the prompt, one batch for all (SPEC section 5): multi-hop scores the next step
        written with it after the chosen passages; single-hop the answer written from it alone.  An empty
        generation (or, single-hop, an unknown answer) ranks last."""
        ranked = list(enumerate(found, 1))
        if self.config.mode == "multi_hop":
            scored = yield [self._call(state, state.steps, [*state.docs, p], sentence=True) for _, p in ranked]
            return [
                (CandidateTrace(p, rank, o.greedy.text, u, u.value if o.greedy.text.strip() else float("inf")), None)
                for (rank, p), (o, u) in zip(ranked, scored, strict=True)
            ]
        calls = [self._call(state, [], [p], sentence=False) for _, p in ranked]
        scored = yield calls
        items = [(c[0], s, "passage", [p.id]) for c, s, (_, p) in zip(calls, scored, ranked, strict=True)]
        answers = yield from self._finalise(state, items)
        out = []
        for (rank, p), (o, _), final in zip(ranked, scored, answers, strict=True):
            value = final.uncertainty.value if o.greedy.text.strip() and not is_unknown(final.answer) else float("inf")
            out.append((CandidateTrace(p, rank, final.generation, final.uncertainty, value), final))
        return out

    @staticmethod
    def _best(candidates: Sequence[CandidateTrace]) -> int:
        """Index of the least uncertain candidate; ties keep the search order."""
        return min(range(len(candidates)), key=lambda i: (candidates[i].rank_value, i))

    def _rerank_only(self, state: _Question) -> Generator[list[Call], list[Scored], list[CandidateTrace]]:
        if not state.found:
            return []
        scored = yield from self._score_candidates(state, state.found)
        candidates = [c for c, _ in scored]
        candidates[self._best(candidates)].chosen = True
        return sorted(candidates, key=lambda c: (c.rank_value, c.rank))

    def _rerank(
        self, state: _Question, step: StepTrace, found: list[Passage]
    ) -> Generator[list[Call], list[Scored], None]:
        """Try each new passage in the prompt; keep the one whose step is least uncertain (SPEC section 5)."""
        chosen = {d.id for d in state.docs}
        new = [p for p in found if p.id not in chosen]
        if not self.config.rerank:
            new = new[:1]  # ablation: the search engine's first new passage, no self-aware choice
        if not new:
            step.stop = "no new passages"
            return
        scored = yield from self._score_candidates(state, new)
        # rank = position in the search results, counting the passages skipped as already chosen
        positions = {p.id: rank for rank, p in enumerate(found, 1)}
        step.candidates = [c for c, _ in scored]
        for c in step.candidates:
            c.rank = positions[c.passage.id]
        winner = step.candidates[self._best(step.candidates)]
        winner.chosen = True
        state.docs.append(winner.passage)
        state.steps.append(winner.generation.strip())
        step.chosen = winner.passage.id
        step.accepted = winner.generation.strip()
        state.emit(PassagesReranked(state.index, state.question, step.index, tuple(step.candidates), step.chosen))

    def _round(self, state: _Question, searched: set[str]) -> Generator[Request, Any, StepTrace]:
        """One round of the multi-hop loop; sets ``step.stop`` when the loop must end."""
        cfg = self.config
        ((out, u),) = yield [self._call(state, state.steps, state.docs, sentence=True)]
        text = out.greedy.text.strip()
        step = StepTrace(len(state.trace), out.greedy.text, u, "accept")
        state.trace.append(step)
        if has_answer(text):  # checked before the uncertainty gate
            step.decision, step.accepted, step.stop = "answer", text, "answer found"
            state.steps.append(text)
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
            return step
        if not self._uncertain(text, u):
            step.accepted = text
            state.steps.append(text)
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
        else:
            step.decision = "retrieve"
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
            query = self._query(state, out, cfg.mask_threshold)
            step.query, step.masked_words = query.text, list(query.masked)
            if query.text in searched:
                step.stop = "repeated query"
                return step
            searched.add(query.text)
            found = yield from self._search(state, step, query.text)
            if found is None:
                return step
            yield from self._rerank(state, step, found)
            if step.stop:
                return step
            if has_answer(state.steps[-1]):
                step.stop = "answer found"
                return step
        if len(state.steps) >= cfg.max_steps:
            step.stop = "step limit"
        elif len(state.docs) >= cfg.max_docs:
            step.stop = "passage limit"
        return step

    def _multi_hop(self, state: _Question) -> Program:
        searched: set[str] = set()
        while True:
            step = yield from self._round(state, searched)
            state.emit(StepFinished(state.index, state.question, snapshot(step)))
            if step.stop:
                break
        finals = yield from self._final_multi_hop(state)
        if self.config.final_strategy == "choose":
            winner = _choose(finals["rationales"], finals["knowledge"])
        else:
            winner = finals[self.config.final_strategy]
        return self._result(state, winner, finals, state.trace[-1].stop or "step limit")

    def _final_multi_hop(self, state: _Question) -> Generator[list[Call], list[Scored], dict[str, FinalTrace]]:
        """(a) reason from the rationales, (b) reason from the chosen passages; both scored in one batch (only the
        one ``config.final_strategy`` names, when it names one)."""
        rationale = list(state.steps)
        if rationale and has_answer(rationale[-1]):
            kept = [s for s in _SENTENCES.split(rationale[-1]) if not has_answer(s)]
            rationale[-1] = " ".join(kept)
        rationale = [s for s in rationale if s.strip()]
        as_passages = [Passage(f"step {i}", "", s) for i, s in enumerate(rationale, 1)]
        contexts = {"rationales": as_passages, "knowledge": state.docs}
        wanted = [s for s in contexts if self.config.final_strategy in ("choose", s)]
        calls = [self._call(state, [], contexts[s], sentence=False) for s in wanted]
        scored = yield calls
        finals = yield from self._finalise(
            state,
            [(c[0], o, s, [p.id for p in contexts[s]]) for c, o, s in zip(calls, scored, wanted, strict=True)],
        )
        return {f.strategy: f for f in finals}

    def _finalise(
        self, state: _Question, items: list[tuple[str, Scored, str, list[str]]]
    ) -> Generator[list[Call], list[Scored], list[FinalTrace]]:
        """Final candidates; one that states no answer gets " So the answer is" appended and is generated again
        (its uncertainty is then that call's, SPEC section 5)."""
        finals, forced = [], []
        for i, (prompt, (out, u), strategy, context) in enumerate(items):
            answer = extract_answer(out.greedy.text)
            finals.append(FinalTrace(strategy, answer, out.greedy.text.strip(), u, False, context))  # type: ignore[arg-type]
            if answer is None:
                again = prompt + out.greedy.text.rstrip() + ANSWER_PROMPT.rstrip()
                if self._fits(again):
                    forced.append((i, again))
                else:
                    state.note(f"no answer from {strategy} and no room left in the context to ask for one")
        if forced:
            stops = self.config.stops(has_steps=True, one_sentence=False)
            state.lm_calls += len(forced) * self._lm_calls_per_call
            scored = yield [(p, self.config.sampling(stops)) for _, p in forced]
            for (i, _), (out, u) in zip(forced, scored, strict=True):
                old = finals[i]
                text = ANSWER_PROMPT.rstrip() + out.greedy.text
                generation = (old.generation + text).strip()
                finals[i] = FinalTrace(old.strategy, extract_answer(text), generation, u, True, old.context)
        return finals

    def _single_hop(self, state: _Question) -> Program:
        """Simple QA: answer directly when certain; else try each retrieved passage alone, keep the least
        uncertain answer (SPEC section 5, last paragraph)."""
        direct_call = self._call(state, [], [], sentence=False)
        ((out, u),) = yield [direct_call]
        (direct,) = yield from self._finalise(state, [(direct_call[0], (out, u), "direct", [])])
        step = StepTrace(0, out.greedy.text, direct.uncertainty, "accept")
        state.trace.append(step)
        finals = {"direct": direct}
        winner = direct
        stop_reason = "certain without retrieval"
        if self._uncertain(out.greedy.text, direct.uncertainty):
            step.decision, step.query = "retrieve", state.question
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
            found = yield from self._search(state, step, state.question)
            stop_reason = step.stop or "answered from passages"
            if found:
                scored = yield from self._score_candidates(state, found)
                step.candidates = [c for c, _ in scored]
                best = self._best(step.candidates)
                step.candidates[best].chosen = True
                step.chosen = step.candidates[best].passage.id
                state.docs.append(step.candidates[best].passage)
                winner = finals["passage"] = scored[best][1]  # type: ignore[assignment]
                state.emit(
                    PassagesReranked(state.index, state.question, step.index, tuple(step.candidates), step.chosen)
                )
            elif found is not None:
                step.stop = stop_reason = "no passages found"
        else:
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
        state.emit(StepFinished(state.index, state.question, snapshot(step)))
        return self._result(state, winner, finals, stop_reason)

    def _result(self, state: _Question, winner: FinalTrace, finals: dict[str, FinalTrace], stop: str) -> SeaKRResult:
        state.emit(AnswerChosen(state.index, state.question, dict(finals), winner.strategy, winner.answer or ""))
        return SeaKRResult(
            question=state.question,
            answer=winner.answer or "",
            strategy=winner.strategy,
            finals=finals,
            steps=state.trace,
            passages=list(state.docs),
            stop_reason=stop,
            notes=state.notes,
            lm_calls=state.lm_calls,
            generated_tokens=state.generated_tokens,
            searches=state.searches,
            config=self.config.to_dict(),
        )


def _attempt(search: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``search(*args, **kwargs)``, or the exception it raised (for the program to handle at its ``yield``)."""
    try:
        return search(*args, **kwargs)
    except Exception as exc:
        return exc


def _choose(rationales: FinalTrace, knowledge: FinalTrace) -> FinalTrace:
    """The less uncertain of the two; a missing or "unknown" answer loses; a tie goes to knowledge."""
    bad_r, bad_k = is_unknown(rationales.answer), is_unknown(knowledge.answer)
    if bad_r != bad_k:
        return knowledge if bad_r else rationales
    if bad_r:
        return knowledge
    return rationales if rationales.uncertainty.value < knowledge.uncertainty.value else knowledge
