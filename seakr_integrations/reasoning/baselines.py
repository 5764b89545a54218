"""The baselines SeaKR is compared with (CoT, single retrieval, IRCoT, FLARE), as programs on SeaKR's own driver
and plumbing, so a comparison measures the retrieval strategy alone.  None reads an uncertainty: every call is
greedy only (``docs/design/reasoning.md``).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any, ClassVar

from seakr_integrations.reasoning.answer import extract_answer, has_answer
from seakr_integrations.reasoning.calls import NOT_MEASURED
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.events import StepAssessed, StepFinished, snapshot
from seakr_integrations.reasoning.reasoner import Reasoner
from seakr_integrations.reasoning.records import FinalTrace, StepTrace, StopReason
from seakr_integrations.reasoning.state import Call, Program, QuestionState, Scored
from seakr_integrations.reasoning.trace import SeaKRResult
from seakr_integrations.retrieval.passage import Passage
from seakr_integrations.uncertainty.estimate import estimate
from seakr_integrations.uncertainty.record import Uncertainty

GREEDY_READING = "min_token_prob"
"""The free greedy signal of a closed-book chain (1 - its least likely token's probability), read without samples."""

FLARE_THRESHOLD = 0.4
"""FLARE's trigger: retrieve when a token of the look-ahead sentence has probability below this."""

PASSAGE_WINDOW = 5
"""Passages a baseline's prompt keeps, the newest (the paper's baselines: five); ``SeaKRConfig.max_docs`` is SeaKR's
own stopping rule and does not apply to them."""


class Baseline(Reasoner):
    """What the baselines share: unmeasured calls, accumulating passages, and a chain that ends in an answer."""

    name: ClassVar[str]

    def _step_call(self, state: QuestionState) -> Program:
        call = self.calls.call(state, state.steps, state.docs, sentence=True, measured=False)
        ((out, _),) = yield from self.calls.run(state, [call])
        return out

    def _add(self, state: QuestionState, found: list[Passage] | None) -> None:
        """Add the passages not in the prompt yet, keeping at most ``PASSAGE_WINDOW`` (the newest)."""
        seen = {d.id for d in state.docs}
        state.docs.extend(p for p in found or [] if p.id not in seen)
        del state.docs[: max(0, len(state.docs) - PASSAGE_WINDOW)]

    def _chain_answer(self, state: QuestionState) -> Program:
        """The answer the step-by-step chain stated; when it stated none, one more call from the chain asks for it."""
        last = state.trace[-1]
        stop = last.stop or "step limit"
        if state.steps and has_answer(state.steps[-1]):
            text = " ".join(s for s in state.steps if s)
            final = FinalTrace(
                "chain", extract_answer(state.steps[-1]), text, last.uncertainty, False, [d.id for d in state.docs]
            )
            return self._result(state, final, stop)
        return (yield from self._generated_answer(state, state.steps, stop))

    def _generated_answer(self, state: QuestionState, steps: list[str], stop: str) -> Program:
        call = self.calls.call(state, steps, state.docs, sentence=False, measured=False)
        (scored,) = yield from self.calls.run(state, [call])
        items = [(call[0], scored, "chain", [d.id for d in state.docs])]
        (final,) = yield from self.calls.final_answers(state, items, reading="none")
        return self._result(state, final, stop)

    def _result(self, state: QuestionState, final: FinalTrace, stop: str) -> SeaKRResult:
        finals = {final.strategy: final}
        return state.result(self.calls.given_answer(state, final, finals), finals, stop, self.config.to_dict())

    def _step(
        self,
        state: QuestionState,
        decision: str,
        out: Any,
        query: str | None = None,
        *,
        screen: Uncertainty | None = None,
        reason: GateReason | None = None,
    ) -> StepTrace:
        step = StepTrace(len(state.trace), out.greedy.text, NOT_MEASURED, decision, query)  # type: ignore[arg-type]
        step.screen, step.reason = screen, reason
        state.trace.append(step)
        state.emit(StepAssessed(state.index, state.question, snapshot(step)))
        return step

    def _accept(self, state: QuestionState, step: StepTrace, text: str) -> bool:
        """Append ``text`` to the chain; True when the chain should end (answer stated, empty step, step limit)."""
        step.accepted = text
        state.steps.append(text)
        if has_answer(text):
            step.stop = "answer found"
        elif not text:
            step.stop = "empty step"
        elif len(state.steps) >= self.config.max_steps:
            step.stop = "step limit"
        state.emit(StepFinished(state.index, state.question, snapshot(step)))
        return step.stop is not None

    def _question_search(self, state: QuestionState) -> Program:
        step = StepTrace(len(state.trace), "", NOT_MEASURED, "retrieve", state.question)
        state.trace.append(step)
        self._add(state, (yield from self.calls.search(state, step, state.question)))


class ChainOfThought(Baseline):
    """CoT without retrieval: the exemplars, the question, one generation of the whole reasoning chain.  Its step
    records the chain's free greedy reading (``GREEDY_READING``), which the token gate decides on and learns from."""

    name: ClassVar[str] = "cot"

    def program(self, state: QuestionState) -> Program:
        call, scored, reading = yield from self._closed_book(state)
        self._step(state, "accept", scored[0], screen=reading)
        return (yield from self._answer_of(state, call, scored, StopReason.NO_RETRIEVAL))

    def _closed_book(self, state: QuestionState) -> Generator[Any, Any, tuple[Call, Scored, Uncertainty]]:
        """The closed-book chain's call, its output and its greedy reading."""
        call = self.calls.call(state, [], [], sentence=False, measured=False)
        (scored,) = yield from self.calls.run(state, [call])
        return call, scored, estimate(scored[0], GREEDY_READING)

    def _answer_of(self, state: QuestionState, call: Call, scored: Scored, stop: str) -> Program:
        (final,) = yield from self.calls.final_answers(state, [(call[0], scored, "chain", [])], reading="none")
        return self._result(state, final, stop)


class TokenGate(ChainOfThought):
    """The single-pass gate the field measures adaptive retrieval against (Moskvoretskii et al., ACL 2025): one
    greedy chain of thought without retrieval, kept when its greedy reading is at most ``threshold``; above it, one
    search with the question and one chain over the passages, as single retrieval.  At most one search and two
    chains (each asked once more for its answer when it states none); no samples.  The threshold is fitted on
    training questions (``evaluation.token_gate``)."""

    name: ClassVar[str] = "token-gate"
    threshold: float = math.inf
    """Retrieve when the closed-book chain's ``GREEDY_READING`` is above it (set from the fit)."""

    def program(self, state: QuestionState) -> Program:
        call, scored, reading = yield from self._closed_book(state)
        unsure = reading.value > self.threshold
        reason = GateReason.UNSURE_FROM_TOKENS if unsure else GateReason.SURE_FROM_TOKENS
        self._step(state, "retrieve" if unsure else "accept", scored[0], screen=reading, reason=reason)
        if not unsure:
            return (yield from self._answer_of(state, call, scored, StopReason.NO_RETRIEVAL))
        yield from self._question_search(state)
        return (yield from self._generated_answer(state, [], StopReason.RETRIEVED_ONCE))


class SingleRetrieval(Baseline):
    """Retrieve once with the question (the top ``n_candidates``), then one chain of thought over the passages."""

    name: ClassVar[str] = "single-retrieval"

    def program(self, state: QuestionState) -> Program:
        yield from self._question_search(state)
        return (yield from self._generated_answer(state, [], "retrieved once"))


class IRCoT(Baseline):
    """Interleave retrieval with every reasoning sentence: query with the question, then with each new sentence."""

    name: ClassVar[str] = "ircot"

    def program(self, state: QuestionState) -> Program:
        yield from self._question_search(state)
        while True:
            out = yield from self._step_call(state)
            text = out.greedy.text.strip()
            step = self._step(state, "retrieve", out, text or None)
            if self._accept(state, step, text):
                break
            self._add(state, (yield from self.calls.search(state, step, text)))
        return (yield from self._chain_answer(state))


class FLARE(Baseline):
    """Retrieve when the look-ahead sentence has a low-probability token; regenerate it from the results."""

    name: ClassVar[str] = "flare"
    threshold: float = FLARE_THRESHOLD

    def program(self, state: QuestionState) -> Program:
        while True:
            out = yield from self._step_call(state)
            text = out.greedy.text.strip()
            unsure = bool(text) and min(out.greedy.logprobs, default=0.0) < math.log(self.threshold)
            if not unsure:
                step = self._step(state, "accept", out)
            else:
                query = self.calls.query(state, out, self.threshold)
                step = self._step(state, "retrieve", out, query.text)
                step.masked_words = list(query.masked)
                found = yield from self.calls.search(state, step, query.text)
                if found:
                    state.docs = list(found)  # FLARE conditions the regenerated sentence on this search's results
                    out = yield from self._step_call(state)
                    text = out.greedy.text.strip()
            if self._accept(state, step, text):
                break
        return (yield from self._chain_answer(state))


BASELINES: dict[str, type[Baseline]] = {
    cls.name: cls for cls in (ChainOfThought, SingleRetrieval, IRCoT, FLARE, TokenGate)
}
