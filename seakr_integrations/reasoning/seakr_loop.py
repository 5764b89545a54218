"""SeaKR's algorithm (SPEC section 5, the paper's Algorithm 1): when to retrieve, which passage to keep, when to
stop, how to answer.

Each question runs as a program (see ``state``) whose model calls and searches are ``yield from`` requests the
driver serves, so the algorithm reads as the paper's (walkthrough: ``docs/design/reasoning.md``).  At each of the
four decisions the configuration's rules (``rules``, none in ``SeaKRConfig.paper()``) are consulted through a named
hook of ``self.rules``; without rules every hook leaves the paper's decision as it is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Generator, Sequence
from dataclasses import replace
from typing import Any

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.quoting import quoted
from seakr_integrations.reasoning.answer import has_answer, is_unknown
from seakr_integrations.reasoning.calls import NOT_MEASURED, ModelCalls
from seakr_integrations.reasoning.choices import pick_final, pick_passage
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.events import (
    KnowledgeGathered,
    PassagesReranked,
    StepAssessed,
    StepFinished,
    snapshot,
)
from seakr_integrations.reasoning.gate import Gate
from seakr_integrations.reasoning.gathered import GatheredKnowledge
from seakr_integrations.reasoning.query import BuiltQuery
from seakr_integrations.reasoning.records import Assessment, CandidateTrace, FinalTrace, StepTrace, StopReason
from seakr_integrations.reasoning.rules import Rule
from seakr_integrations.reasoning.rules.base import FinalReading
from seakr_integrations.reasoning.state import Program, QuestionState
from seakr_integrations.reasoning.trace import SeaKRResult
from seakr_integrations.retrieval.passage import Passage

_SENTENCES = re.compile(r"(?<=[.!?])\s+")


class SeaKRLoop:
    """SeaKR's decisions for one question at a time."""

    def __init__(self, config: SeaKRConfig, calls: ModelCalls) -> None:
        self.config = config
        self.calls = calls
        self.rules = config.rule_set
        """The decision rules, consulted at the loop's hooks."""
        self.gate = Gate(config, calls)
        """When to retrieve (the self-aware gate, read in stages when a rule can decide from the greedy step)."""

    def program(self, state: QuestionState) -> Program:
        """The whole answer to ``state.question``, as a program that returns a ``SeaKRResult``."""
        return self.single_hop(state) if self.config.mode == "single_hop" else self.multi_hop(state)

    def assess(self, state: QuestionState) -> Generator[Any, Any, Assessment]:
        """The gate alone on the model's next step (multi-hop) or direct answer (single-hop)."""
        single = self.config.mode == "single_hop"
        state.round = len(state.trace) + 1
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
        stop = yield from self.reason(state)
        return (yield from self.finish(state, stop))

    def gather(self, state: QuestionState) -> Program:
        """The multi-hop loop without its final answer, for another model to answer from: returns the
        ``GatheredKnowledge`` (the passages kept, the steps, why it stopped)."""
        stop = yield from self.reason(state)
        gathered = GatheredKnowledge(
            state.question,
            list(state.docs),
            state.trace,
            stop,
            state.notes,
            state.lm_calls,
            state.generated_tokens,
            state.searches,
            list(state.rules_applied),
        )
        state.emit(KnowledgeGathered(state.index, state.question, gathered))
        return gathered

    def reason(self, state: QuestionState) -> Generator[Any, Any, StopReason]:
        """The rounds of Algorithm 1 (each: a step, the gate, and when unsure a search and its re-ranking) until one
        ends the loop; returns why it ended."""
        searched: set[str] = set()
        state.round = 1
        opening = self.rules.opening_query(state) if self.config.retrieve != "never" else None
        if opening is not None:
            yield from self.open(state, searched, opening)
            if state.trace[-1].stop:  # the search failed and the error policy answers without it
                return state.trace[-1].stop
        while True:
            step = yield from self.round(state, searched)
            state.emit(StepFinished(state.index, state.question, snapshot(step)))
            if step.stop:
                return state.trace[-1].stop or StopReason.STEP_LIMIT

    def open(self, state: QuestionState, searched: set[str], query: str) -> Generator[Any, Any, None]:
        """Search ``query`` before the first step and keep its results (a rule's ``opening_query``), once each and at
        most ``max_docs``: a round without a step, recorded as the trace's first."""
        step = StepTrace(0, "", NOT_MEASURED, "retrieve", query)
        step.reason = GateReason.QUESTION_FIRST
        state.trace.append(step)
        state.emit(StepAssessed(state.index, state.question, snapshot(step)))
        searched.add(query)
        found = yield from self.calls.search(state, step, query)
        found = list({p.id: p for p in found or []}.values())[: self.config.max_docs]
        step.candidates = [CandidateTrace(p, rank, "", NOT_MEASURED, math.nan, True) for rank, p in enumerate(found, 1)]
        state.docs.extend(c.passage for c in step.candidates)
        step.chosen_passage_id = step.candidates[0].passage.id if step.candidates else None
        state.emit(StepFinished(state.index, state.question, snapshot(step)))

    def finish(self, state: QuestionState, stop: StopReason) -> Program:
        """How to answer, once the loop has ended (``stop`` says why): the less uncertain of the final answers."""
        finals = yield from self.final_answers(state)
        if self.config.final_strategy == "choose" and len(finals) == 2:
            rationales, knowledge = finals["rationales"], finals["knowledge"]
            winner = self.rules.choose_final(state, rationales, knowledge, choose(rationales, knowledge))
        else:  # one strategy asked for, or a rule left one (NoKnowledgeWithoutPassages, AnswerFromPassages)
            winner = finals.get(self.config.final_strategy) or next(iter(finals.values()))
        return self._result(state, winner, finals, stop)

    def round(self, state: QuestionState, searched: set[str]) -> Generator[Any, Any, StepTrace]:
        """One step of the loop; sets ``step.stop`` when the loop must end."""
        state.round = len(state.trace) + 1
        call = self.calls.call(state, state.steps, state.docs, sentence=True)
        reading = yield from self.gate.read(state, call, stop_at_answer=True)
        out = reading.output
        text = out.greedy.text.strip()
        step = StepTrace(len(state.trace), out.greedy.text, reading.uncertainty, "accept")
        step.reason, step.screen = reading.reason, reading.screen
        state.trace.append(step)
        needed = self.needed_entities(state, searched)
        if has_answer(text) and not needed:  # checked before the uncertainty gate
            step.decision, step.accepted, step.stop = "answer", text, StopReason.ANSWER_FOUND
            state.steps.append(text)
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
        elif has_answer(text):  # a rule's entity has no passage yet: search for it before answering
            rule, entity = needed[0]
            step.decision, step.reason = "retrieve", GateReason.UNCOVERED_ENTITY
            state.rule_applied(rule, str(GateReason.UNCOVERED_ENTITY))
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
            state.note(f"round {step.index + 1} stated an answer before {quoted(entity)} had a passage ({rule})")
            yield from self.retrieve(state, step, searched, rule.entity_query(state, entity), [], "", [entity])
        elif not reading.retrieve:
            if not self.ends_at(state, step, text, state.steps):
                step.accepted = text
                state.steps.append(text)
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
        else:
            step.decision = "retrieve"
            state.emit(StepAssessed(state.index, state.question, snapshot(step)))
            query = self.search_query(state, out)
            yield from self.retrieve(state, step, searched, query.text, list(query.masked), text, [])
        if step.stop:
            return step
        if len(state.steps) >= self.config.max_steps:
            step.stop = StopReason.STEP_LIMIT
        elif len(state.docs) >= self.config.max_docs:
            step.stop = StopReason.PASSAGE_LIMIT
        else:
            step.stop = self.rules.limit(state)
        return step

    def search_query(self, state: QuestionState, out: SelfAwareOutput) -> BuiltQuery:
        """The query an uncertain step searches for: its low-confidence words masked (SPEC section 6), then as the
        rules change it.  One place, so the loop and a stand-alone gate (``SeaKR.search_query``) search alike."""
        query = self.calls.query(state, out, self.config.mask_threshold)
        return replace(query, text=self.rules.search_query(state, query.text))

    def retrieve(
        self,
        state: QuestionState,
        step: StepTrace,
        searched: set[str],
        query: str,
        masked: list[str],
        text: str,
        focus: Sequence[str],
    ) -> Generator[Any, Any, None]:
        """Search ``query`` and keep a passage (``text``: the step that searched; ``focus``: the entity searched for,
        see ``rerank``) with the step written after it; sets ``step.stop`` when the loop must end (a repeated query,
        nothing new found, a repeated step, an answer)."""
        step.query, step.masked_words = query, masked
        if query in searched:
            step.stop = StopReason.REPEATED_QUERY
            return
        searched.add(query)
        found = yield from self.calls.search(state, step, query)
        if found is None:
            return
        yield from self.rerank(state, step, found, text, focus)
        if step.stop:
            return
        if has_answer(state.steps[-1]) and not self.needed_entities(state, searched):
            step.stop = StopReason.ANSWER_FOUND
            return
        if self.ends_at(state, step, state.steps[-1], state.steps[:-1]):
            state.steps.pop()  # the passage stays: it was chosen for the knowledge answer
            step.accepted = None

    def needed_entities(self, state: QuestionState, searched: set[str]) -> list[tuple[Rule, str]]:
        """The entities a rule says the answer needs (no kept passage covers them) and no query has searched for
        yet, each with the rule that needs it."""
        needed = self.rules.needed_entities(state)
        return [(rule, e) for rule, e in needed if rule.entity_query(state, e) not in searched]

    def ends_at(self, state: QuestionState, step: StepTrace, text: str, earlier: Sequence[str]) -> bool:
        """Whether a rule ends the loop at ``text`` after the ``earlier`` steps (``StopOnRepeatedStep``); then the
        loop ends after this round (the caller leaves the step out of the chain)."""
        stop = self.rules.ends_at(state, text, earlier)
        if stop is None:
            return False
        step.stop = stop
        state.note(f"round {step.index + 1} ended the loop: {stop}")
        return True

    def rerank(
        self, state: QuestionState, step: StepTrace, found: list[Passage], text: str = "", focus: Sequence[str] = ()
    ) -> Generator[Any, Any, None]:
        """Try each new passage the rules leave in the prompt and keep the one whose step is least uncertain, with
        its step (the paper); a rule may narrow the candidates first (``ClaimCheck``: those covering what the step
        ``text`` or the ``focus`` entity needs) or keep the first without re-ranking (``KeepFirstResult``)."""
        chosen = {d.id for d in state.docs}
        new = self.rules.narrow_candidates(state, [p for p in found if p.id not in chosen], text, focus)
        if not new:
            step.stop = StopReason.NO_NEW_PASSAGES
            return
        measured = self.rules.reranks()  # without re-ranking nothing reads a candidate's uncertainty
        scored = yield from self.score_candidates(state, new, measured=measured)
        # rank = position in the search results, counting the passages skipped as already chosen
        positions = {p.id: rank for rank, p in enumerate(found, 1)}
        step.candidates = [c for c, _ in scored]
        for c in step.candidates:
            c.rank = positions[c.passage.id]
        i = best(step.candidates)
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
        wanted = self.rules.final_strategies(state, wanted)
        # only the choice between two answers reads their uncertainty (a rule may sample them only when it decides)
        reading: FinalReading = self.rules.final_reading(state, "sampled") if len(wanted) == 2 else "none"
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
        winner = self.calls.given_answer(state, winner, finals)
        return state.result(winner, finals, stop, self.config.to_dict())


def best(candidates: Sequence[CandidateTrace]) -> int:
    """Index of the least uncertain candidate; ties keep the search order (``choices.pick_passage``)."""
    return pick_passage([c.rank_value for c in candidates])


def choose(rationales: FinalTrace, knowledge: FinalTrace) -> FinalTrace:
    """The paper's choice: the less uncertain of the two final answers; a missing or "unknown" answer loses; a tie
    goes to knowledge (``choices.pick_final``)."""
    strategy = pick_final(
        rationales.uncertainty.value,
        knowledge.uncertainty.value,
        rationales_unknown=is_unknown(rationales.answer),
        knowledge_unknown=is_unknown(knowledge.answer),
    )
    return rationales if strategy == "rationales" else knowledge
