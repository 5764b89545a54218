"""The baselines SeaKR is compared with, on SeaKR's own machinery: same back-end, prompts, retriever and driver.

Each baseline is the SeaKR loop with a different program: it shares the prompt builder, the batching driver that
answers many questions together, the search path (with its events and error policy), answer extraction and the
result record, so a comparison measures the retrieval strategy and nothing else.  None of them reads the
uncertainty (they sample only the back-ends' minimum of two continuations; see the evaluation methods).

* :class:`ChainOfThought`: reason without retrieval, one generation of the whole chain.
* :class:`SingleRetrieval`: retrieve once with the question, then the same chain of thought with the passages.
* :class:`IRCoT`: retrieve with the question, then after every reasoning sentence with that sentence as the query
  (Trivedi et al., 2023), the passages accumulating in the prompt.
* :class:`FLARE`: generate the next sentence; when one of its tokens has probability below a threshold, search with
  the sentence minus its low-confidence words and generate the sentence again from the results (Jiang et al.,
  2023, FLARE-direct with masked queries, as in SeaKR's query builder).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from seakr_integrations.reasoning.answer import extract_answer, has_answer
from seakr_integrations.reasoning.events import StepAssessed, StepFinished, snapshot
from seakr_integrations.reasoning.reasoner import Program, SeaKR, _Question
from seakr_integrations.reasoning.trace import FinalTrace, StepTrace
from seakr_integrations.retrieval.passage import Passage
from seakr_integrations.uncertainty.estimate import Uncertainty

__all__ = ["FLARE", "IRCoT", "BASELINES", "ChainOfThought", "SingleRetrieval"]

FLARE_THRESHOLD = 0.4
"""FLARE's trigger: retrieve when a token of the look-ahead sentence has probability below this (our setting; FLARE
tunes it per dataset)."""


class _Baseline(SeaKR):
    reads_delta: ClassVar[bool] = False

    def _program(self, state: _Question) -> Program:
        return self._baseline(state)

    def _baseline(self, state: _Question) -> Program:  # pragma: no cover - every baseline overrides it
        raise NotImplementedError

    def _add(self, state: _Question, found: list[Passage] | None) -> None:
        """Add the passages not in the prompt yet, keeping at most ``max_docs`` (the newest)."""
        seen = {d.id for d in state.docs}
        state.docs.extend(p for p in found or [] if p.id not in seen)
        del state.docs[: max(0, len(state.docs) - self.config.max_docs)]

    def _whole_chain(self, state: _Question, strategy: str, stop: str) -> Program:
        """One generation of the whole chain from the passages in ``state.docs``; its answer is the result."""
        prompt, config = self._call(state, [], state.docs, sentence=False)
        scored = yield [(prompt, config)]
        (final,) = yield from self._finalise(state, [(prompt, scored[0], strategy, [d.id for d in state.docs])])
        return self._result(state, final, {final.strategy: final}, stop)

    def _chain_answer(self, state: _Question, stop: str) -> Program:
        """The answer the step-by-step chain stated; when it stated none, one more call from the chain asks for it."""
        last = state.trace[-1] if state.trace else None
        if state.steps and has_answer(state.steps[-1]) and last is not None:
            text = " ".join(s for s in state.steps if s)
            final = FinalTrace(
                "chain", extract_answer(state.steps[-1]), text, last.uncertainty, False, [d.id for d in state.docs]
            )
            return self._result(state, final, {"chain": final}, stop)
        prompt, config = self._call(state, state.steps, state.docs, sentence=False)
        scored = yield [(prompt, config)]
        (final,) = yield from self._finalise(state, [(prompt, scored[0], "chain", [d.id for d in state.docs])])
        return self._result(state, final, {"chain": final}, stop)

    def _step(self, state: _Question, decision: str, out: Any, u: Any, query: str | None = None) -> StepTrace:
        step = StepTrace(len(state.trace), out.greedy.text, u, decision, query)  # type: ignore[arg-type]
        state.trace.append(step)
        state.emit(StepAssessed(state.index, state.question, snapshot(step)))
        return step

    def _accept(self, state: _Question, step: StepTrace, text: str) -> bool:
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


class ChainOfThought(_Baseline):
    """CoT without retrieval: the exemplars, the question, one generation of the whole reasoning chain."""

    name: ClassVar[str] = "cot"

    def _baseline(self, state: _Question) -> Program:
        return (yield from self._whole_chain(state, "chain", "no retrieval"))


class SingleRetrieval(_Baseline):
    """Retrieve once with the question (the top ``n_candidates``), then one chain of thought over the passages."""

    name: ClassVar[str] = "single-retrieval"

    def _baseline(self, state: _Question) -> Program:
        step = StepTrace(0, "", _no_uncertainty(), "retrieve", state.question)
        state.trace.append(step)
        found = yield from self._search(state, step, state.question)
        self._add(state, found)
        return (yield from self._whole_chain(state, "chain", "retrieved once"))


class IRCoT(_Baseline):
    """Interleave retrieval with every reasoning sentence: query with the question, then with each new sentence."""

    name: ClassVar[str] = "ircot"

    def _baseline(self, state: _Question) -> Program:
        first = StepTrace(0, "", _no_uncertainty(), "retrieve", state.question)
        state.trace.append(first)
        self._add(state, (yield from self._search(state, first, state.question)))
        while True:
            ((out, u),) = yield [self._call(state, state.steps, state.docs, sentence=True)]
            text = out.greedy.text.strip()
            step = self._step(state, "retrieve", out, u, text or None)
            if self._accept(state, step, text):
                break
            self._add(state, (yield from self._search(state, step, text)))
        return (yield from self._chain_answer(state, state.trace[-1].stop or "step limit"))


class FLARE(_Baseline):
    """Retrieve when the look-ahead sentence has a low-probability token; regenerate it from the results."""

    name: ClassVar[str] = "flare"
    threshold: float = FLARE_THRESHOLD

    def _baseline(self, state: _Question) -> Program:
        while True:
            ((out, u),) = yield [self._call(state, state.steps, state.docs, sentence=True)]
            text = out.greedy.text.strip()
            unsure = bool(text) and min(out.greedy.logprobs, default=0.0) < math.log(self.threshold)
            if not unsure:
                step = self._step(state, "accept", out, u)
            else:
                query = self._query(state, out, self.threshold)
                step = self._step(state, "retrieve", out, u, query.text)
                step.masked_words = list(query.masked)
                found = yield from self._search(state, step, query.text)
                if found:
                    state.docs = list(found)  # FLARE conditions the regenerated sentence on this search's results
                    ((out, u),) = yield [self._call(state, state.steps, state.docs, sentence=True)]
                    text = out.greedy.text.strip()
            if self._accept(state, step, text):
                break
        return (yield from self._chain_answer(state, state.trace[-1].stop or "step limit"))


def _no_uncertainty() -> Uncertainty:
    return Uncertainty(math.nan, "none", 0, note="not measured: the query is the question itself")


BASELINES: dict[str, type[_Baseline]] = {cls.name: cls for cls in (ChainOfThought, SingleRetrieval, IRCoT, FLARE)}
"""The baselines by method name."""
