"""What a decision rule is: a small frozen object that changes one of the paper's four decisions at a named hook.

Algorithm 1 of the paper decides four things: when to retrieve, which passage to keep, when to stop and how to
answer.  ``SeaKRConfig.paper()`` decides them exactly as the authors do; a rule changes one of them where this
project's measurements showed a better or cheaper decision (``docs/decision_rules.md``).  The loop calls the hooks
below at its decision points, through :class:`RuleSet`, in the order the rules are given; a rule overrides the
hooks of its decision and inherits the others, which change nothing.  One module per rule, like LM-Polygraph's
estimators or vLLM's logits processors.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from seakr_integrations.outputs import SelfAwareOutput
    from seakr_integrations.reasoning.decisions import GateReason
    from seakr_integrations.reasoning.records import FinalTrace, StopReason
    from seakr_integrations.reasoning.state import QuestionState
    from seakr_integrations.retrieval.passage import Passage

Decision = Literal["when to retrieve", "which passage", "when to stop", "how to answer"]
"""The paper's four decision points; every rule changes one."""

FinalReading = Literal["sampled", "deciding", "none"]
"""How the final answers' uncertainties are read: ``"sampled"`` (the paper: every final call with its samples),
``"deciding"`` (samples only where the choice depends on them), ``"none"`` (one answer, nothing to compare)."""


@dataclass(frozen=True)
class Rule:
    """One decision rule: its parameters are its dataclass fields, its name the one results files, traces and
    ``--rules`` use.  Subclasses set ``name`` and ``decision`` and override the hooks of that decision."""

    name: ClassVar[str] = ""
    decision: ClassVar[Decision]

    # -- when to retrieve -------------------------------------------------------------------------------------
    def opening_query(self, state: QuestionState) -> str | None:
        """A query searched before the first step, whose results are all kept (``None``: the paper's loop starts
        from the question alone)."""
        return None

    def reads_greedy_step(self) -> bool:
        """Whether :meth:`read_step` can decide, so the step is generated greedily first and sampled only if no
        rule decides it (the staged gate)."""
        return False

    def read_step(self, state: QuestionState, text: str, output: SelfAwareOutput) -> GateReason | None:
        """Decide the gate from the greedy step alone (a ``GateReason``), or ``None`` to leave it to the next rule
        and then to the samples."""
        return None

    def reads_greedy_vector(self) -> bool:
        """Whether :meth:`read_step` reads the greedy step's hidden state (it is then read in the same call)."""
        return False

    def screen_estimator(self) -> str | None:
        """The greedy-only estimator whose reading of every call the trace records (``StepTrace.screen``)."""
        return None

    def search_query(self, state: QuestionState, query: str) -> str:
        """The query an uncertain step searches for, given the one built so far."""
        return query

    def content_filter(self) -> str | None:
        """How the query keeps content words (``"spacy"``), or ``None`` for the built-in stop-word list."""
        return None

    # -- which passage ----------------------------------------------------------------------------------------
    def narrow_candidates(
        self, state: QuestionState, new: list[Passage], text: str, focus: Sequence[str]
    ) -> list[Passage]:
        """The new search results that compete for the kept passage (the paper: all of them).  ``text`` is the step
        that searched, ``focus`` the entity the search was for (both may be empty)."""
        return new

    def reranks(self) -> bool:
        """Whether the candidates are re-ranked by the model's uncertainty (the paper) or the first is kept."""
        return True

    # -- when to stop -----------------------------------------------------------------------------------------
    def needed_entities(self, state: QuestionState) -> list[str]:
        """Entities the answer needs that no kept passage covers: the loop searches for them before it answers."""
        return []

    def entity_query(self, state: QuestionState, entity: str) -> str:
        """The query for one of :meth:`needed_entities`' entities (only the rule that named it is asked)."""
        return entity

    def ends_at(self, state: QuestionState, text: str, earlier: Sequence[str]) -> StopReason | None:
        """Whether the loop ends at a step that wrote ``text`` after the ``earlier`` steps (it is left out)."""
        return None

    def limit(self, state: QuestionState) -> StopReason | None:
        """Whether the loop stops after this round, given what it has kept."""
        return None

    # -- how to answer ----------------------------------------------------------------------------------------
    def final_strategies(self, state: QuestionState, wanted: list[str]) -> list[str]:
        """Which final answers are generated (``"rationales"``, ``"knowledge"``)."""
        return wanted

    def final_reading(self, reading: FinalReading) -> FinalReading:
        """How the two final answers' uncertainties are read."""
        return reading

    def choose_final(self, rationales: FinalTrace, knowledge: FinalTrace) -> FinalTrace | None:
        """The final answer given, or ``None`` for the paper's choice (the less uncertain, a tie to knowledge)."""
        return None

    def answer_of(self, generation: str) -> str | None:
        """The answer of a final generation that states none, or ``None`` to ask for it again with " So the answer
        is" (the paper)."""
        return None

    def final_answer(self, state: QuestionState, winner: FinalTrace, finals: dict[str, FinalTrace]) -> FinalTrace:
        """The answer given, once chosen (``finals``: every final answer generated).  Part of the answer step every
        method shares (SeaKR and each baseline consult it, ``ModelCalls.given_answer``), so that a comparison of
        methods measures their retrieval and reasoning, not how an answer is worded."""
        return winner

    # -- calibration and records ------------------------------------------------------------------------------
    def calibrated(self, profile: Any) -> Rule:
        """This rule with what a calibration profile (a ``DeltaProfile``, or ``None``) holds for it filled in."""
        return self

    def uncalibrated(self) -> str | None:
        """What this rule still lacks after calibration (a warning says it once), or ``None``."""
        return None

    def learn(self, evidence: Any) -> dict[str, Any] | None:
        """What this rule learns from a calibration, stored under its name in the profile (``DeltaProfile.rules``)
        for :meth:`calibrated` to read back; ``None``: it learns nothing.  ``evidence`` is the calibration's
        ``evaluation.calibration_evidence.CalibrationEvidence``: each question's first step, its uncertainty and the
        chosen delta, and the labels and hidden states when asked for.  It is first handed over before any LM call,
        unmeasured, so that what this method checks before it reads a measurement is refused then (``check_learning``).
        """
        return None

    def to_dict(self) -> dict[str, Any]:
        """The rule as results files and traces record it: its name and its parameters (an entity finder by name)."""
        params = {f.name: getattr(self, f.name) for f in fields(self)}
        return {"rule": self.name, **{k: _plain(v) for k, v in params.items()}}

    def __str__(self) -> str:
        return self.name


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return getattr(value, "name", value) if not isinstance(value, (str, int, float, bool, type(None))) else value


class RuleSet:
    """A configuration's rules as the loop consults them: each hook folded over the rules in order.  Every rule that
    changes a decision is recorded on the question (``QuestionState.rule_applied``, the trace's ``rules_applied``),
    so a trace says which rules made its answer."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def opening_query(self, state: QuestionState) -> str | None:
        for rule in self.rules:
            query = rule.opening_query(state)
            if query is not None:
                state.rule_applied(rule, "opening search")
                return query
        return None

    def reads_greedy_step(self) -> bool:
        return any(r.reads_greedy_step() for r in self.rules)

    def read_step(self, state: QuestionState, text: str, output: SelfAwareOutput) -> GateReason | None:
        for rule in self.rules:
            reason = rule.read_step(state, text, output)
            if reason is not None:
                state.rule_applied(rule, str(reason))
                return reason
        return None

    def screen_estimator(self) -> str | None:
        return next((e for r in self.rules if (e := r.screen_estimator()) is not None), None)

    def reads_greedy_vector(self) -> bool:
        return any(r.reads_greedy_vector() for r in self.rules)

    def search_query(self, state: QuestionState, query: str) -> str:
        for rule in self.rules:
            changed = rule.search_query(state, query)
            if changed != query:
                state.rule_applied(rule, "query")
            query = changed
        return query

    def content_filter(self) -> str:
        return next((f for r in self.rules if (f := r.content_filter()) is not None), "stopwords")

    def narrow_candidates(
        self, state: QuestionState, new: list[Passage], text: str, focus: Sequence[str]
    ) -> list[Passage]:
        for rule in self.rules:
            narrowed = rule.narrow_candidates(state, new, text, focus)
            if [p.id for p in narrowed] != [p.id for p in new]:
                state.rule_applied(rule, "candidates")
            new = narrowed
        return new

    def reranks(self) -> bool:
        return all(r.reranks() for r in self.rules)

    def needed_entities(self, state: QuestionState) -> list[tuple[Rule, str]]:
        """Each needed entity with the rule that needs it (so that rule builds its query)."""
        return [(r, e) for r in self.rules for e in r.needed_entities(state)]

    def ends_at(self, state: QuestionState, text: str, earlier: Sequence[str]) -> StopReason | None:
        for rule in self.rules:
            stop = rule.ends_at(state, text, earlier)
            if stop is not None:
                state.rule_applied(rule, str(stop))
                return stop
        return None

    def limit(self, state: QuestionState) -> StopReason | None:
        for rule in self.rules:
            stop = rule.limit(state)
            if stop is not None:
                state.rule_applied(rule, str(stop))
                return stop
        return None

    def final_strategies(self, state: QuestionState, wanted: list[str]) -> list[str]:
        for rule in self.rules:
            changed = rule.final_strategies(state, wanted)
            if changed != wanted:
                state.rule_applied(rule, "final answers", final=True)
            wanted = changed
        return wanted

    def final_reading(self, state: QuestionState, reading: FinalReading) -> FinalReading:
        for rule in self.rules:
            changed = rule.final_reading(reading)
            if changed != reading:
                state.rule_applied(rule, f"final reading {changed}", final=True)
            reading = changed
        return reading

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
        for rule in self.rules:
            answer = rule.answer_of(generation)
            if answer is not None:
                state.rule_applied(rule, "answer read without asking again", final=True)
                return answer
        return None

    def final_answer(self, state: QuestionState, winner: FinalTrace, finals: dict[str, FinalTrace]) -> FinalTrace:
        for rule in self.rules:
            changed = rule.final_answer(state, winner, finals)
            if changed.answer != winner.answer:
                state.rule_applied(rule, "answer", final=True)
            winner = changed
        return winner


def check_finder(rule: Rule) -> None:
    """Refuse an ``entities`` parameter that is not an ``EntityFinder``, naming what it needs."""
    from seakr_integrations.reasoning.entities import EntityFinder

    finder = getattr(rule, "entities", None)
    if not isinstance(finder, EntityFinder):
        raise TypeError(
            f"{type(rule).__name__}(entities={finder!r}): pass an EntityFinder (a name attribute and names(text), "
            "compared(question) and options(question) methods), e.g. EnglishNames()"
        )


def check_greedy_estimator(rule: Rule, estimator: str) -> None:
    """Refuse an estimator that needs more than the greedy continuation (samples, another call)."""
    from seakr_integrations.uncertainty.registry import REGISTRY, check_estimator

    check_estimator(estimator)
    if not REGISTRY[estimator].needs <= {"greedy_logprobs"}:
        raise ValueError(
            f"{type(rule).__name__}(estimator={estimator!r}): it needs samples or another call, and this rule reads "
            "the greedy continuation alone: use 'min_token_prob' or 'perplexity'"
        )
