"""SeaKR's algorithm (SPEC section 5): when to retrieve, which passage to keep, how to answer.

Each question runs as a program (see ``state``) whose model calls and searches are ``yield from`` requests the
driver serves, so the algorithm reads as the paper's (walkthrough: ``docs/design/reasoning.md``).
"""

from __future__ import annotations

import re
from collections.abc import Generator, Sequence
from dataclasses import replace
from typing import Any

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.quoting import quoted
from seakr_integrations.reasoning.answer import extract_answer, has_answer, is_unknown
from seakr_integrations.reasoning.calls import FinalReading, ModelCalls
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.entities import (
    anchor_query,
    compared_entities,
    covers,
    entity_query,
    linked_entities,
    named_entities,
    option_answer,
    uncovered,
)
from seakr_integrations.reasoning.events import PassagesReranked, StepAssessed, StepFinished, snapshot
from seakr_integrations.reasoning.gate import Gate
from seakr_integrations.reasoning.query import BuiltQuery
from seakr_integrations.reasoning.records import Assessment, CandidateTrace, FinalTrace, StepTrace, StopReason
from seakr_integrations.reasoning.rules import pick_final, pick_passage, repeats_earlier
from seakr_integrations.reasoning.state import Program, QuestionState
from seakr_integrations.reasoning.trace import SeaKRResult
from seakr_integrations.retrieval.passage import Passage

_SENTENCES = re.compile(r"(?<=[.!?])\s+")


class SeaKRLoop:
    """SeaKR's decisions for one question at a time."""

    def __init__(self, config: SeaKRConfig, calls: ModelCalls) -> None:
        self.config = config
        self.calls = calls
        self.gate = Gate(config, calls)
        """When to retrieve (the self-aware gate, read in stages when the config asks for it)."""

    def program(self, state: QuestionState) -> Program:
        """The whole answer to ``state.question``, as a program that returns a ``SeaKRResult``."""
        return self.single_hop(state) if self.config.mode == "single_hop" else self.multi_hop(state)

    def assess(self, state: QuestionState) -> Generator[Any, Any, Assessment]:
        """The gate alone on the model's next step (multi-hop) or direct answer (single-hop)."""
        single = self.config.mode == "single_hop"
        call = self.calls.call(state, state.steps, state.docs, sentence=not single)
        reading = yield from self.gate.read(state, call, stop_at_answer=False)
        text = reading.output.greedy.text.strip()
        return Assessment(
            state.question,
            text,
            reading.uncertainty,
            reading.retrieve,
            has_answer(text),
            reading.output,
            reading.reason,
        )

    def multi_hop(self, state: QuestionState) -> Program:
        searched: set[str] = set()
        while True:
            step = yield from self.round(state, searched)
            state.emit(StepFinished(state.index, state.question, snapshot(step)))
            if step.stop:
                break
        return (yield from self.finish(state, state.trace[-1].stop or StopReason.STEP_LIMIT))

    def finish(self, state: QuestionState, stop: StopReason) -> Program:
        """How to answer, once the loop has ended (``stop`` says why): the stated answer (``answer_when_stated``),
        else the chosen one of the final answers."""
        stated = self.stated_answer(state)
        if stated is not None:
            return self._result(state, stated, {"stated": stated}, StopReason.ANSWER_FOUND)
        finals = yield from self.final_answers(state)
        if self.config.final_strategy == "choose" and len(finals) == 2:
            winner = choose(finals["rationales"], finals["knowledge"], self.config.final_margin)
        else:  # one strategy asked for, or no passage to reason from (knowledge_needs_passages)
            winner = finals[self.config.final_strategy if self.config.final_strategy in finals else "rationales"]
        return self._result(state, winner, finals, stop)

    def round(self, state: QuestionState, searched: set[str]) -> Generator[Any, Any, StepTrace]:
        """One step of the loop; sets ``step.stop`` when the loop must end."""
        call = self.calls.call(state, state.steps, state.docs, sentence=True)
        reading = yield from self.gate.read(state, call, stop_at_answer=True)
        out = reading.output
        text = out.greedy.text.strip()
        step = StepTrace(len(state.trace), out.greedy.text, reading.uncertainty, "accept")
        step.reason, step.screen = reading.reason, reading.screen
        state.trace.append(step)
        missing = self.missing_entities(state, searched)
        if has_answer(text) and not missing:  # checked before the uncertainty gate
            step.decision, step.accepted, step.stop = "answer", text, StopReason.ANSWER_FOUND
            state.steps.append(text)
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
        elif has_answer(text):  # cover_compared/bridge_entities: an entity the answer needs has no passage yet
            step.decision, step.reason = "retrieve", GateReason.UNCOVERED_ENTITY
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
            query = entity_query(missing[0], state.question)
            state.note(f"round {step.index + 1} stated an answer before {quoted(missing[0])} had a passage")
            yield from self.retrieve(state, step, searched, query, [], missing[:1])
        elif not reading.retrieve:
            if not self.repeated(state, step, text, state.steps):
                step.accepted = text
                state.steps.append(text)
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
        else:
            step.decision = "retrieve"
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
            query = self.search_query(state, out)
            wanted = uncovered([*named_entities(text), *named_entities(state.question)], state.docs)
            yield from self.retrieve(state, step, searched, query.text, list(query.masked), wanted)
        if step.stop:
            return step
        if len(state.steps) >= self.config.max_steps:
            step.stop = StopReason.STEP_LIMIT
        elif len(state.docs) >= self.config.max_docs:
            step.stop = StopReason.PASSAGE_LIMIT
        return step

    def search_query(self, state: QuestionState, out: SelfAwareOutput) -> BuiltQuery:
        """The query an uncertain step searches for: its low-confidence words masked (SPEC section 6), kept on the
        question with ``anchor_queries``.  One place, so the loop and a stand-alone gate (``SeaKR.search_query``)
        search alike."""
        query = self.calls.query(state, out, self.config.mask_threshold)
        if not self.config.anchor_queries:
            return query
        missing = uncovered(named_entities(state.question), state.docs)  # the question's entities without a passage
        return replace(query, text=anchor_query(query.text, state.question, missing))

    def retrieve(
        self,
        state: QuestionState,
        step: StepTrace,
        searched: set[str],
        query: str,
        masked: list[str],
        wanted: Sequence[str],
    ) -> Generator[Any, Any, None]:
        """Search ``query`` and keep a passage (preferring one that covers a ``wanted`` entity, see ``rerank``)
        with the step written after it; sets ``step.stop`` when the loop must end (a repeated query, nothing new
        found, a repeated step, an answer)."""
        step.query, step.masked_words = query, masked
        if query in searched:
            step.stop = StopReason.REPEATED_QUERY
            return
        searched.add(query)
        found = yield from self.calls.search(state, step, query)
        if found is None:
            return
        yield from self.rerank(state, step, found, wanted)
        if step.stop:
            return
        if has_answer(state.steps[-1]):
            if not self.missing_entities(state, searched):
                step.stop = StopReason.ANSWER_FOUND
                return
            if self.config.cover_bridge_entities:  # an answer before the last entity's passage: not in the chain
                state.steps.pop()
                step.accepted = None
                return
        if self.repeated(state, step, state.steps[-1], state.steps[:-1]):
            state.steps.pop()  # the passage stays: it was chosen for the knowledge answer
            step.accepted = None

    def missing_entities(self, state: QuestionState, searched: set[str]) -> list[str]:
        """The entities the answer needs that no kept passage covers and no query has searched for yet: with
        ``cover_compared_entities``, those the question compares; with ``cover_bridge_entities``, the bridge
        entities the kept passages link the question to."""
        missing = []
        if self.config.cover_compared_entities:
            missing += uncovered(compared_entities(state.question), state.docs)
        if self.config.cover_bridge_entities:
            missing += linked_entities(state.question, state.docs)
        return [e for e in missing if entity_query(e, state.question) not in searched]

    def repeated(self, state: QuestionState, step: StepTrace, text: str, earlier: Sequence[str]) -> bool:
        """With ``stop_on_repeated_step``: whether ``text`` repeats one of the ``earlier`` steps; then the loop ends
        after this round (the caller leaves the repeat out of the chain)."""
        if not self.config.stop_on_repeated_step or not repeats_earlier(text, earlier):
            return False
        step.stop = StopReason.REPEATED_STEP
        state.note(f"round {step.index + 1} repeated an earlier step, so the loop stopped (stop_on_repeated_step)")
        return True

    def rerank(
        self, state: QuestionState, step: StepTrace, found: list[Passage], wanted: Sequence[str] = ()
    ) -> Generator[Any, Any, None]:
        """Try each new passage in the prompt; keep the one whose step is least uncertain (by more than
        ``rerank_margin`` than the search engine's first; else the first), and its step.  Without re-ranking the
        search engine's first new passage is kept; with ``check_claims``, the first that covers one of the
        ``wanted`` entities (those the step or the question names and no kept passage covers) when there is one."""
        chosen = {d.id for d in state.docs}
        new = [p for p in found if p.id not in chosen]
        if not self.config.rerank:  # no self-aware choice (the paper re-ranks)
            covering = [p for p in new if any(covers(p, e) for e in wanted)] if self.config.check_claims else []
            new = (covering or new)[:1]
        if not new:
            step.stop = StopReason.NO_NEW_PASSAGES
            return
        scored = yield from self.score_candidates(state, new, measured=self.config.rerank)
        # rank = position in the search results, counting the passages skipped as already chosen
        positions = {p.id: rank for rank, p in enumerate(found, 1)}
        step.candidates = [c for c, _ in scored]
        for c in step.candidates:
            c.rank = positions[c.passage.id]
        i = pick_passage([c.rank_value for c in step.candidates], self.config.rerank_margin)
        if i != best(step.candidates):
            state.note(
                f"round {step.index + 1} kept the search engine's first passage: no other was less uncertain by more "
                f"than rerank_margin={self.config.rerank_margin:g}"
            )
        step.accepted = step.candidates[i].generation.strip()
        state.steps.append(step.accepted)
        self.keep(state, step, i)

    def keep(self, state: QuestionState, step: StepTrace, i: int) -> None:
        """Keep ``step``'s candidate ``i``: its passage joins the chosen ones, and the re-ranking is reported."""
        winner = step.candidates[i]
        winner.chosen = True
        state.docs.append(winner.passage)
        step.chosen_passage_id = winner.passage.id
        state.emit(PassagesReranked(state.index, state.question, step.index, tuple(step.candidates), winner.passage.id))

    def score_candidates(
        self, state: QuestionState, found: Sequence[Passage], measured: bool = True
    ) -> Generator[Any, Any, list[tuple[CandidateTrace, FinalTrace | None]]]:
        """Each passage's uncertainty, all in one request: multi-hop scores the next step written with it after the
        chosen passages; single-hop the answer written from it alone.  An empty generation (single-hop: an unknown
        answer) ranks last.  ``measured=False`` (the loop without re-ranking: nothing reads a multi-hop candidate's
        uncertainty) writes the steps without drawing samples."""
        ranked = list(enumerate(found, 1))
        if self.config.mode == "multi_hop":
            calls = [
                self.calls.call(state, state.steps, [*state.docs, p], sentence=True, measured=measured)
                for _, p in ranked
            ]
            scored = yield from self.calls.run(state, calls)
            return [
                (CandidateTrace(p, rank, o.greedy.text, u, u.value if o.greedy.text.strip() else float("inf")), None)
                for (rank, p), (o, u) in zip(ranked, scored, strict=True)
            ]
        calls = [self.calls.call(state, [], [p], sentence=False) for _, p in ranked]
        scored = yield from self.calls.run(state, calls)
        items = [(c[0], s, "passage", [p.id]) for c, s, (_, p) in zip(calls, scored, ranked, strict=True)]
        answers = yield from self.calls.final_answers(state, items)
        out = []
        for (rank, p), (o, _), final in zip(ranked, scored, answers, strict=True):
            value = final.uncertainty.value if o.greedy.text.strip() and not is_unknown(final.answer) else float("inf")
            out.append((CandidateTrace(p, rank, final.generation, final.uncertainty, value), final))
        return out

    def rerank_only(self, state: QuestionState) -> Generator[Any, Any, list[CandidateTrace]]:
        """Self-aware re-ranking alone of ``state.found``, best first."""
        if not state.found:
            return []
        scored = yield from self.score_candidates(state, state.found)
        candidates = [c for c, _ in scored]
        candidates[best(candidates)].chosen = True
        return sorted(candidates, key=lambda c: (c.rank_value, c.rank))

    def stated_answer(self, state: QuestionState) -> FinalTrace | None:
        """With ``answer_when_stated``: the answer the loop's last step stated, when the loop ended there."""
        last = state.trace[-1] if state.trace else None
        if not self.config.answer_when_stated or last is None or last.stop != StopReason.ANSWER_FOUND:
            return None
        text = state.steps[-1] if state.steps else ""
        answer = extract_answer(text)
        if is_unknown(answer):
            return None
        state.note("the loop's last step stated the answer, so it is given without reasoning again")
        return FinalTrace("stated", answer, text, last.uncertainty, False, [f"step {len(state.steps)}"], last.screen)

    def final_answers(self, state: QuestionState) -> Generator[Any, Any, dict[str, FinalTrace]]:
        """(a) reason from the rationales, (b) reason from the chosen passages, in one request (only the one
        ``config.final_strategy`` names, when it names one)."""
        rationale = list(state.steps)
        if rationale and has_answer(rationale[-1]):
            kept = [s for s in _SENTENCES.split(rationale[-1]) if not has_answer(s)]
            rationale[-1] = " ".join(kept)
        rationale = [s for s in rationale if s.strip()]
        as_passages = [Passage(f"step {i}", "", s) for i, s in enumerate(rationale, 1)]
        contexts = {"rationales": as_passages, "knowledge": state.docs}
        wanted = [s for s in contexts if self.config.final_strategy in ("choose", s)]
        if self.config.final_strategy != "rationales" and self.config.knowledge_needs_passages and not state.docs:
            wanted = ["rationales"]  # reasoning from no passages would be a closed-book answer: one call fewer
            state.note("no passage was kept, so the answer is reasoned from the rationales alone")
        # only the choice between two answers reads their uncertainty; a greedy-only final_estimator needs no
        # samples for it, and final_samples="deciding" draws them only when the choice depends on them
        reading: FinalReading = "none" if len(wanted) < 2 else "greedy" if self.config.final_estimator else "deciding"
        if reading == "deciding" and self.config.final_samples == "always":
            reading = "sampled"
        measured = reading == "sampled"
        calls = [self.calls.call(state, [], contexts[s], sentence=False, measured=measured) for s in wanted]
        scored = yield from self.calls.run(state, calls)
        items = [(c[0], o, s, [p.id for p in contexts[s]]) for c, o, s in zip(calls, scored, wanted, strict=True)]
        finals = yield from self.calls.final_answers(state, items, reading=reading)
        return {f.strategy: f for f in finals}

    def single_hop(self, state: QuestionState) -> Program:
        direct_call = self.calls.call(state, [], [], sentence=False)
        ((out, u),) = yield from self.calls.run(state, [direct_call])
        (direct,) = yield from self.calls.final_answers(state, [(direct_call[0], (out, u), "direct", [])])
        step = StepTrace(0, out.greedy.text, direct.uncertainty, "accept")
        state.trace.append(step)
        winner, finals = direct, {"direct": direct}
        stop_reason = StopReason.CERTAIN_WITHOUT_RETRIEVAL
        if self.gate.needs_retrieval(out.greedy.text, direct.uncertainty):
            step.decision, step.query = "retrieve", state.question
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
            found = yield from self.calls.search(state, step, state.question)
            stop_reason = step.stop or StopReason.ANSWERED_FROM_PASSAGES
            if found:
                scored = yield from self.score_candidates(state, found)
                step.candidates = [c for c, _ in scored]
                i = best(step.candidates)
                winner = finals["passage"] = scored[i][1]  # type: ignore[assignment]
                self.keep(state, step, i)
            elif found is not None:
                step.stop = stop_reason = StopReason.NO_PASSAGES_FOUND
        else:
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
        state.emit(StepFinished(state.index, state.question, snapshot(step)))
        return self._result(state, winner, finals, stop_reason)

    def _result(
        self, state: QuestionState, winner: FinalTrace, finals: dict[str, FinalTrace], stop: StopReason
    ) -> SeaKRResult:
        if self.config.answer_with_option and winner.answer:
            others = [f.answer for f in finals.values() if f is not winner and f.answer]
            option = option_answer(state.question, winner.answer, state.docs, others)
            if option != winner.answer:
                state.note(
                    f"the answer {quoted(winner.answer)} names neither option the question offers, so {quoted(option)} "
                    "is given (answer_with_option)"
                )
                winner = replace(winner, answer=option)
        return state.result(winner, finals, stop, self.config.to_dict())


def best(candidates: Sequence[CandidateTrace]) -> int:
    """Index of the least uncertain candidate; ties keep the search order (``rules.pick_passage`` with no margin:
    the one "least uncertain" rule)."""
    return pick_passage([c.rank_value for c in candidates])


def choose(rationales: FinalTrace, knowledge: FinalTrace, margin: float = 0.0) -> FinalTrace:
    """The less uncertain of the two final answers (rationales only when less uncertain by more than ``margin``);
    a missing or "unknown" answer loses; a tie goes to knowledge (see ``rules.pick_final``)."""
    strategy = pick_final(
        rationales.uncertainty.value,
        knowledge.uncertainty.value,
        rationales_unknown=is_unknown(rationales.answer),
        knowledge_unknown=is_unknown(knowledge.answer),
        margin=margin,
    )
    return rationales if strategy == "rationales" else knowledge
