"""How a question's program talks to the model and to the search engine: the plumbing under every algorithm,
shared once so that SeaKR and the baselines differ in their strategy alone.  Methods that need the model or the
retriever are sub-programs, used with ``yield from`` (``docs/design/reasoning.md``).
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from dataclasses import replace
from typing import Any, Literal

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.scored import probe_calls, probe_uncertainty, prompt_fits
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import SamplingConfig, max_tokens_too_large
from seakr_integrations.quoting import quoted
from seakr_integrations.reasoning.answer import ANSWER_PROMPT, extract_answer, has_answer
from seakr_integrations.reasoning.choices import choice_needs_samples
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.events import PassagesRetrieved
from seakr_integrations.reasoning.exemplars import exemplars
from seakr_integrations.reasoning.prompts import PromptBuilder
from seakr_integrations.reasoning.query import BuiltQuery, build_query
from seakr_integrations.reasoning.records import FinalTrace, StepTrace
from seakr_integrations.reasoning.rules.base import FinalReading
from seakr_integrations.reasoning.state import Call, Generate, QuestionState, Scored, Search
from seakr_integrations.retrieval.passage import Passage
from seakr_integrations.uncertainty.estimate import Uncertainty, estimate
from seakr_integrations.uncertainty.registry import REGISTRY

RetrievalErrorPolicy = Literal["raise", "answer_without"]
"""What a failed search does: ``"raise"`` (the error names the question) or ``"answer_without"`` (answer with what
was gathered so far and record the failure in the trace)."""

DEFAULT_SEARCH_TIMEOUT = 120.0
"""Seconds one search may take by default before it fails with a ``TimeoutError``."""

NOT_MEASURED = Uncertainty(math.nan, "none", 0, note="not measured: nothing reads this call's uncertainty")
"""The uncertainty of a call made without samples (``measured=False``)."""


class RetrievalError(RuntimeError):
    """The retriever failed while answering a question (the message names the question and the query)."""


class ModelCalls:
    """Prompts, LM calls and searches for the programs of one back-end (its tokenizer and context length shape the
    prompts) and one configuration.

    Args:
        search_timeout: Seconds one search may take before it fails with a ``TimeoutError`` (handled by
            ``on_retrieval_error``); ``None`` waits for ever.  A hung search is abandoned, not killed.
        on_retrieval_error: What a failed search does (``RetrievalErrorPolicy``).

    Raises:
        ValueError: ``config.chat_template=True`` for a tokenizer without a chat template, a ``max_tokens`` that
            leaves no room for a prompt in the model's context, or a bad search setting.
    """

    def __init__(
        self,
        backend: SelfAwareBackend,
        config: SeaKRConfig,
        *,
        search_timeout: float | None = DEFAULT_SEARCH_TIMEOUT,
        on_retrieval_error: RetrievalErrorPolicy = "raise",
    ) -> None:
        self.backend = backend
        self.config = config
        self.search_timeout, self.on_retrieval_error = check_search_settings(search_timeout, on_retrieval_error)
        self.rules = config.rule_set
        """The decision rules the final answers consult (``AnswerAlone``)."""
        self.reads_state = self.rules.reads().greedy_vector
        """Whether reasoning steps read the greedy step's hidden state (``StateProbe``)."""
        self.screen_estimator = self.rules.reads().screen
        """The greedy-only estimator whose reading every call records (``TokenCascade``'s), if any."""
        use_chat = backend.uses_chat_template(config.chat_template)
        self.builder = PromptBuilder(
            exemplars(config.style, config.num_exemplars), backend.chat_prompt if use_chat else None
        )
        self._budget = backend.max_context - config.max_tokens - 1
        if self._budget < 1:
            raise ValueError(max_tokens_too_large(config.max_tokens, backend.model_name, backend.max_context))

    def fits(self, prompt: str, budget: int | None = None) -> bool:
        """Whether ``prompt`` has at most ``budget`` tokens (default: room left for a full continuation)."""
        return prompt_fits(self.backend, prompt, self._budget if budget is None else budget)

    def prompt(self, state: QuestionState, steps: Sequence[str], passages: Sequence[Passage]) -> str:
        """The prompt, dropping the oldest passages while it does not fit the model's context."""
        shown = list(passages)
        while True:
            prompt = self.builder(state.question, steps, [p.text for p in shown])
            if self.fits(prompt):
                return prompt
            if not shown:
                raise ValueError(self._too_long(state, prompt))
            dropped = shown.pop(0)
            state.note(f"passage {dropped.id} was left out of a prompt to fit the model's context")

    def _too_long(self, state: QuestionState, prompt: str) -> str:
        """Why a prompt without passages does not fit, with advice that matches the settings in effect."""
        question_tokens = len(self.backend.tokenize(state.question))
        advice = []
        if question_tokens > self._budget // 2:
            advice.append(f"shorten the question (it alone is {question_tokens:,} tokens)")
        if self.config.num_exemplars > 0:
            advice.append(f"lower num_exemplars (now {self.config.num_exemplars})")
        if self.config.max_tokens > 1:
            advice.append(f"lower max_tokens (now {self.config.max_tokens})")
        if not advice:
            advice.append("use a model with a longer context")
        return (
            f"the prompt for question {quoted(state.question)} does not fit {self.backend.model_name}'s context of "
            f"{self.backend.max_context} tokens even without passages (room for {self._budget:,} prompt tokens "
            f"after max_tokens): {', or '.join(advice)}"
        )

    def call(
        self,
        state: QuestionState,
        steps: Sequence[str],
        passages: Sequence[Passage],
        *,
        sentence: bool,
        measured: bool = True,
    ) -> Call:
        """The LM call for the next step (``sentence``: one reasoning sentence) or a whole answer; ``measured=False``
        asks for the greedy continuation alone (no samples, no read-out, no uncertainty)."""
        stops = self.config.stops(has_steps=any(s.strip() for s in steps), one_sentence=sentence)
        sampling = self.config.call_sampling(stops)
        if sentence and self.reads_state:  # a reasoning step's hidden state, for a probe on it
            sampling = sampling.with_(greedy_vector=True)
        return self.prompt(state, steps, passages), sampling if measured else sampling.with_(k=0)

    def run(self, state: QuestionState, calls: Sequence[Call]) -> Generator[Generate, Any, list[Scored]]:
        """Generate ``calls`` and score each output (a call with ``k=0`` is not scored); counts and reports them."""
        state.lm_calls += len(calls)
        state.observer.on_lm_start([p for p, _ in calls])
        try:
            outputs: list[SelfAwareOutput] = yield Generate(tuple(calls))
            state.generated_tokens += sum(o.generated_tokens() for o in outputs)
            uncertainties = yield from self._score(state, calls, outputs)
        except Exception as error:
            state.observer.on_lm_error(error)
            raise
        state.observer.on_lm_end(outputs, uncertainties)
        return list(zip(outputs, uncertainties, strict=True))

    def _score(
        self, state: QuestionState, calls: Sequence[Call], outputs: list[SelfAwareOutput]
    ) -> Generator[Generate, Any, list[Uncertainty]]:
        measured = [i for i, (_, c) in enumerate(calls) if c.k > 0]
        scores = [NOT_MEASURED] * len(calls)
        if "probe" not in REGISTRY[self.config.estimator].needs:
            for i in measured:
                scores[i] = estimate(outputs[i], self.config.estimator, self.config.alpha)
            return scores
        prompts, measured_outputs = [calls[i][0] for i in measured], [outputs[i] for i in measured]
        probes = probe_calls(self.backend, prompts, measured_outputs, self.config.call_sampling())
        sent = [(i, probe) for i, probe in zip(measured, probes, strict=True) if probe is not None]
        replies = (yield Generate(tuple(p for _, p in sent))) if sent else []
        state.lm_calls += len(sent)
        for i in measured:  # a probe that does not fit the context counts as uncertain
            scores[i] = probe_uncertainty(self.backend, None)
        for (i, _), reply in zip(sent, replies, strict=True):
            scores[i] = probe_uncertainty(self.backend, reply)
        return scores

    def final_answers(
        self,
        state: QuestionState,
        items: list[tuple[str, Scored, str, list[str]]],
        *,
        reading: FinalReading = "sampled",
    ) -> Generator[Generate, Any, list[FinalTrace]]:
        """Final candidates from ``(prompt, scored, strategy, context ids)``; one that states no answer gets " So the
        answer is" appended and is generated again (its uncertainty is then that call's, SPEC section 5), unless a
        rule reads its answer (``AnswerAlone``; not from a generation cut short).
        ``reading``: ``"sampled"``, from the calls' samples (the call asking again is sampled too); ``"deciding"``
        (two answers), each answer's own call sampled afterwards, only when the choice depends on it
        (``SampleFinalsWhenTheyDiffer``); ``"none"``, not read."""
        finals, forced = [], []
        answer_calls = [(prompt, self._final_sampling(has_steps=False)) for prompt, *_ in items]
        for i, (prompt, (out, u), strategy, context) in enumerate(items):
            answer = extract_answer(out.greedy.text)
            if answer is None and not has_answer(out.greedy.text) and out.greedy.finish_reason != "length":
                answer = self.rules.answer_of(state, out.greedy.text)
            finals.append(FinalTrace(strategy, answer, out.greedy.text.strip(), u, False, context, self.screen(out)))  # type: ignore[arg-type]
            if answer is None:
                again = prompt + out.greedy.text.rstrip() + ANSWER_PROMPT.rstrip()
                if self.fits(again):
                    forced.append((i, again))
                    answer_calls[i] = (again, self._final_sampling(has_steps=True))
                else:
                    state.note(f"no answer from {strategy} and no room left in the context to ask for one")
        if forced:
            sampled = reading == "sampled"
            again_calls = [(p, answer_calls[i][1] if sampled else answer_calls[i][1].with_(k=0)) for i, p in forced]
            scored = yield from self.run(state, again_calls)
            for (i, _), (out, u) in zip(forced, scored, strict=True):
                old = finals[i]
                text = ANSWER_PROMPT.rstrip() + out.greedy.text
                generation = (old.generation + text).strip()
                finals[i] = FinalTrace(
                    old.strategy,
                    extract_answer(text),
                    generation,
                    u,
                    True,
                    old.context,
                    self.screen(out),
                )
        if reading == "deciding" and len(finals) == 2:
            if not choice_needs_samples(finals[0].answer, finals[1].answer):
                state.note("the final answers agree (or one is unknown), so neither was sampled")
                return finals
            scored = yield from self.run(state, answer_calls)
            finals = [replace(f, uncertainty=u) for f, (_, u) in zip(finals, scored, strict=True)]
        return finals

    def given_answer(self, state: QuestionState, winner: FinalTrace, finals: dict[str, FinalTrace]) -> FinalTrace:
        """The answer step every method shares once it has chosen its final answer: the rules' answer format
        (``AnswerWithOption``), so that SeaKR and the baselines are compared on retrieval and reasoning alone."""
        return self.rules.final_answer(state, winner, finals)

    def _final_sampling(self, *, has_steps: bool) -> SamplingConfig:
        """A final answer's call settings (``has_steps``: the call that asks again with " So the answer is")."""
        return self.config.call_sampling(self.config.stops(has_steps=has_steps, one_sentence=False))

    def screen(self, output: SelfAwareOutput) -> Uncertainty | None:
        """The rules' greedy-only estimator's reading of a call's greedy continuation (``None`` when none is set)."""
        name = self.screen_estimator
        return None if name is None else estimate(output, name, self.config.alpha)

    def query(self, state: QuestionState, out: SelfAwareOutput, threshold: float) -> BuiltQuery:
        """The search query from a step's greedy text: words with a token below ``threshold`` masked (SPEC 6)."""
        tokenizer = self.backend.tokenizer
        return build_query(
            out.greedy,
            state.question,
            state.steps[-1] if state.steps else None,
            lambda ids: tokenizer.decode(ids, skip_special_tokens=True),
            lambda text: list(tokenizer(text, add_special_tokens=False).input_ids),
            threshold=threshold,
            keep_words=self.rules.content_words,
        )

    def search(self, state: QuestionState, step: StepTrace, query: str) -> Generator[Search, Any, list[Passage] | None]:
        """Search results, or ``None`` when a tolerated error ended the search (recorded in ``step``).  The driver
        sends back the results or throws the search's exception in at the ``yield``; both are handled here."""
        state.searches += 1
        try:
            results = yield Search(query, self.config.n_candidates, self.search_timeout)
            bad = [type(p).__name__ for p in results if not isinstance(p, Passage)]
            if bad:
                raise TypeError(f"the retriever returned {bad[0]} objects; search() must return Passage objects")
            found = list(results)
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}"
            if self.on_retrieval_error == "raise":
                raise RetrievalError(
                    f"retrieval failed for question {quoted(state.question)} (query {quoted(query)}): {message}; pass "
                    "on_retrieval_error='answer_without' to answer without the passage"
                ) from exc
            step.error = message
            step.stop = "retrieval error"
            state.note(f"retrieval failed for query {quoted(query)} ({message}); answered without it")
            state.emit(PassagesRetrieved(state.index, state.question, step.index, query, (), message))
            return None
        state.emit(PassagesRetrieved(state.index, state.question, step.index, query, tuple(found)))
        return found


def check_search_settings(
    search_timeout: object, on_retrieval_error: object
) -> tuple[float | None, RetrievalErrorPolicy]:
    """The search settings, validated: seconds > 0 or ``None``, and a known error policy."""
    from seakr_integrations.params import check_choice, check_seconds

    if search_timeout is not None:
        search_timeout = check_seconds("search_timeout", search_timeout, ", or None to wait for ever")
    check_choice("on_retrieval_error", on_retrieval_error, RetrievalErrorPolicy)
    return search_timeout, on_retrieval_error  # type: ignore[return-value]
