"""A configuration's rules as the loop consults them: each hook of ``base.HOOKS`` combined over the rules as that
table states, in one consulting order whatever order the rules were given in."""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from seakr_integrations.reasoning.rules.base import HOOKS, RULES, FinalReading, Reads, Rule

if TYPE_CHECKING:
    from seakr_integrations.outputs import SelfAwareOutput
    from seakr_integrations.reasoning.decisions import GateReason
    from seakr_integrations.reasoning.records import FinalTrace, StopReason
    from seakr_integrations.reasoning.state import QuestionState
    from seakr_integrations.retrieval.passage import Passage


def consulting_order(rules: Iterable[Rule]) -> tuple[Rule, ...]:
    """``rules`` in the order the loop consults them: by each class's ``order``, then the order the classes were
    registered in (so a given order never changes what a rule set does)."""
    position = {name: i for i, name in enumerate(RULES)}
    return tuple(sorted(rules, key=lambda r: (type(r).order, position.get(r.name, len(position)))))


class RuleSet:
    """A configuration's rules as the loop consults them: each hook combined over the rules in consulting order as
    :data:`HOOKS` states.  Every rule that changes a decision is recorded on the question
    (``QuestionState.rule_applied``, the trace's ``rules_applied``), so a trace says which rules made its answer."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = consulting_order(rules)
        self._reads = functools.reduce(operator.or_, (r.reads() for r in self.rules), Reads())

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def _first(self, state: QuestionState | None, hook: str, *args: Any, what: str | None = None) -> Any:
        """The ``"first"`` composition: the first rule's decision (recorded as ``what``, else as the decision)."""
        for rule in self.rules:
            decided = getattr(rule, hook)(*args)
            if decided is not None:
                if state is not None:
                    state.rule_applied(rule, what or str(decided), final=HOOKS[hook].decision == "how to answer")
                return decided
        return None

    def _fold(
        self, state: QuestionState, hook: str, value: Any, *, before: tuple[Any, ...] = (), after: tuple[Any, ...] = (),
        what: str, same: Any = None,
    ) -> Any:  # fmt: skip
        """The ``"fold"`` composition: each rule is called as ``hook(*before, value, *after)`` and may change the
        value the rules before it made (recorded as ``what`` when it did; ``same`` compares two values, else ``==``)."""
        for rule in self.rules:
            changed = getattr(rule, hook)(*before, value, *after)
            if not (same(changed, value) if same else changed == value):
                state.rule_applied(rule, what.format(changed), final=HOOKS[hook].decision == "how to answer")
            value = changed
        return value

    def reads(self) -> Reads:
        """What the rules need read from a step, combined once (the rules are frozen): the gate asks at every step."""
        return self._reads

    def opening_query(self, state: QuestionState) -> str | None:
        return self._first(state, "opening_query", state, what="opening search")

    def read_step(self, state: QuestionState, text: str, output: SelfAwareOutput) -> GateReason | None:
        return self._first(state, "read_step", state, text, output)

    def search_query(self, state: QuestionState, query: str) -> str:
        return self._fold(state, "search_query", query, before=(state,), what="query")

    def content_words(self, words: Sequence[str]) -> list[str] | None:
        return self._first(None, "content_words", words)

    def narrow_candidates(
        self, state: QuestionState, new: list[Passage], text: str, focus: Sequence[str]
    ) -> list[Passage]:
        return self._fold(
            state, "narrow_candidates", new, before=(state,), after=(text, focus), what="candidates",
            same=lambda a, b: [p.id for p in a] == [p.id for p in b],
        )  # fmt: skip

    def reranks(self) -> bool:
        return all(r.reranks() for r in self.rules)

    def needed_entities(self, state: QuestionState) -> list[tuple[Rule, str]]:
        """Each needed entity with the rule that needs it (so that rule builds its query)."""
        return [(r, e) for r in self.rules for e in r.needed_entities(state)]

    def ends_at(self, state: QuestionState, text: str, earlier: Sequence[str]) -> StopReason | None:
        return self._first(state, "ends_at", state, text, earlier)

    def limit(self, state: QuestionState) -> StopReason | None:
        return self._first(state, "limit", state)

    def final_strategies(self, state: QuestionState, wanted: list[str]) -> list[str]:
        return self._fold(state, "final_strategies", wanted, before=(state,), what="final answers")

    def final_reading(self, state: QuestionState, reading: FinalReading) -> FinalReading:
        return self._fold(state, "final_reading", reading, what="final reading {}")

    def choose_final(
        self, state: QuestionState, rationales: FinalTrace, knowledge: FinalTrace, paper: FinalTrace
    ) -> FinalTrace:
        """The first rule's choice, else ``paper`` (the paper's); a rule is recorded when it chose otherwise."""
        for rule in self.rules:
            winner = rule.choose_final(rationales, knowledge)
            if winner is not None:
                if winner is not paper:
                    state.rule_applied(rule, f"final answer from {winner.strategy}", final=True)
                return winner
        return paper

    def answer_of(self, state: QuestionState, generation: str) -> str | None:
        return self._first(state, "answer_of", generation, what="answer read without asking again")

    def final_answer(self, state: QuestionState, winner: FinalTrace, finals: dict[str, FinalTrace]) -> FinalTrace:
        return self._fold(
            state, "final_answer", winner, before=(state,), after=(finals,), what="answer",
            same=lambda a, b: a.answer == b.answer,
        )  # fmt: skip
