"""What a decision rule is: a small frozen object that changes one of Algorithm 1's decisions at named hooks.

Algorithm 1 of the paper decides when to retrieve, what to search, which passage to keep, when to stop and how to
answer.  ``SeaKRConfig.paper()`` decides them exactly as the authors do; a rule changes one of them where this
project's measurements showed a better or cheaper decision (``docs/decision_rules.md``).  The loop calls the hooks
of :data:`HOOKS` at its decision points through :class:`RuleSet`, which combines the rules as the table states and
consults them in one order (:func:`consulting_order`), whatever order they were given in.  A rule overrides hooks of
the decisions it declares (checked when its class is defined) and inherits the others, which change nothing; it
registers itself by name (:data:`RULES`).  One module per rule, like LM-Polygraph's estimators or vLLM's logits
processors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from seakr_integrations.reasoning.entities import EntityFinder, entity_finder, register_finder

if TYPE_CHECKING:
    from seakr_integrations.outputs import SelfAwareOutput
    from seakr_integrations.reasoning.decisions import GateReason
    from seakr_integrations.reasoning.records import FinalTrace, StopReason
    from seakr_integrations.reasoning.state import QuestionState
    from seakr_integrations.retrieval.passage import Passage

Decision = Literal["when to retrieve", "what to search", "which passage", "when to stop", "how to answer"]
"""The decision points of Algorithm 1; every rule changes one of them (a few, such as ``ClaimCheck``, change two or
three and declare them all)."""

DECISIONS: tuple[Decision, ...] = get_args(Decision)

FinalReading = Literal["sampled", "deciding", "none"]
"""How the final answers' uncertainties are read: ``"sampled"`` (the paper: every final call with its samples),
``"deciding"`` (samples only where the choice depends on them), ``"none"`` (one answer, nothing to compare)."""

Composition = Literal["first", "fold", "each", "all"]
"""How :class:`RuleSet` combines the rules at a hook: ``"first"``, the first rule (in consulting order) that decides
(returns something other than ``None``) wins and the rest are not asked; ``"fold"``, each rule is handed the value
the rules before it made and may change it; ``"each"``, every rule's contribution is kept, in order; ``"all"``, the
paper's behaviour holds only while every rule keeps it."""


@dataclass(frozen=True)
class Hook:
    """Where a hook sits in Algorithm 1 and how the rules combine there."""

    decision: Decision
    composition: Composition


HOOKS: dict[str, Hook] = {
    "opening_query": Hook("when to retrieve", "first"),
    "read_step": Hook("when to retrieve", "first"),
    "search_query": Hook("what to search", "fold"),
    "content_words": Hook("what to search", "first"),
    "narrow_candidates": Hook("which passage", "fold"),
    "reranks": Hook("which passage", "all"),
    "needed_entities": Hook("when to stop", "each"),
    "entity_query": Hook("when to stop", "first"),
    "ends_at": Hook("when to stop", "first"),
    "limit": Hook("when to stop", "first"),
    "final_strategies": Hook("how to answer", "fold"),
    "final_reading": Hook("how to answer", "fold"),
    "choose_final": Hook("how to answer", "first"),
    "answer_of": Hook("how to answer", "first"),
    "final_answer": Hook("how to answer", "fold"),
}
"""Every decision hook: its decision point and its composition, stated once.  A rule overrides only hooks of the
decisions it declares (checked when its class is defined); ``reads``, ``learn``, ``calibrated``, ``uncalibrated``,
``to_dict`` and ``from_dict`` are not decisions and any rule may override them.  ``entity_query`` is asked only of
the rule whose ``needed_entities`` named the entity."""


@dataclass(frozen=True)
class Reads:
    """What the rules need read from a step before its samples are drawn.

    Attributes:
        greedy_step: The step is generated greedily first and sampled only if no rule's ``read_step`` decides it
            (the staged gate).
        greedy_vector: The greedy step's hidden state is read in the same call (``StateProbe``).
        screen: A greedy-only estimator whose reading of every call the trace records (``StepTrace.screen``,
            ``FinalTrace.screen``), or ``None``.
    """

    greedy_step: bool = False
    greedy_vector: bool = False
    screen: str | None = None

    def __or__(self, other: Reads) -> Reads:
        return Reads(
            self.greedy_step or other.greedy_step,
            self.greedy_vector or other.greedy_vector,
            self.screen if self.screen is not None else other.screen,
        )


RULES: dict[str, type[Rule]] = {}
"""Every rule class by its name (``--rules``, results files and traces use it): a ``Rule`` subclass with a ``name``
registers itself when it is defined, a user's rule included, so a results file that records it reads back."""


@dataclass(frozen=True)
class Rule:
    """One decision rule: its parameters are its dataclass fields, its name the one results files, traces and
    ``--rules`` use.  Subclasses set ``name`` and ``decision`` and override hooks of that decision (:data:`HOOKS`);
    every other hook changes nothing.

    ``order`` places the rule among the others: the loop consults rules by it, whatever order they were given in, so
    that a rule set means one thing.  The package's rules are numbered in tens; a rule that sets none comes after
    them, in the order the classes were defined."""

    name: ClassVar[str] = ""
    decision: ClassVar[Decision | tuple[Decision, ...]]
    order: ClassVar[float] = 1000.0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("name"):
            return  # an abstract helper class: registers nothing
        declared = cls.decisions()
        wrong = [d for d in declared if d not in DECISIONS]
        if wrong:
            raise TypeError(f"{cls.__name__}.decision: {wrong[0]!r} is not a decision point; use one of {DECISIONS}")
        hooks = [h for h in HOOKS if getattr(cls, h) is not getattr(Rule, h)]
        outside = [h for h in hooks if HOOKS[h].decision not in declared]
        if outside:
            raise TypeError(
                f"{cls.__name__} overrides {', '.join(outside)}, a hook of "
                f"{' / '.join(sorted({HOOKS[h].decision for h in outside}))}, but declares decision = {declared!r}: "
                "declare every decision the rule changes (a tuple), or move the hook to a rule of its own"
            )
        unused = [d for d in declared if not any(HOOKS[h].decision == d for h in hooks)]
        if unused:
            raise TypeError(
                f"{cls.__name__} declares {unused[0]!r} and overrides no hook of it ({HOOKS_BY[unused[0]]})"
            )
        known = RULES.get(cls.name)
        if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
            raise TypeError(
                f"{cls.__name__}.name = {cls.name!r} is {known.__module__}.{known.__qualname__}'s: give the rule a "
                "name of its own"
            )
        RULES[cls.name] = cls  # a class defined again (a notebook's cell run twice) replaces itself

    @classmethod
    def decisions(cls) -> tuple[Decision, ...]:
        """The decision points this rule changes."""
        return cls.decision if isinstance(cls.decision, tuple) else (cls.decision,)

    # -- what a rule needs read ------------------------------------------------------------------------------
    def reads(self) -> Reads:
        """What this rule needs read from a step before its samples are drawn (nothing: the paper's order)."""
        return Reads()

    # -- when to retrieve -------------------------------------------------------------------------------------
    def opening_query(self, state: QuestionState) -> str | None:
        """A query searched before the first step, whose results are all kept (``None``: the paper's loop starts
        from the question alone)."""
        return None

    def read_step(self, state: QuestionState, text: str, output: SelfAwareOutput) -> GateReason | None:
        """Decide the gate from the greedy step alone (a ``GateReason``), or ``None`` to leave it to the next rule
        and then to the samples.  Called only when a rule ``reads()`` the greedy step."""
        return None

    # -- what to search ---------------------------------------------------------------------------------------
    def search_query(self, state: QuestionState, query: str) -> str:
        """The query an uncertain step searches for, given the one built so far."""
        return query

    def content_words(self, words: Sequence[str]) -> list[str] | None:
        """The content words of a query's ``words`` (in order), or ``None`` for the built-in stop-word list."""
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

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rule:
        """The rule :meth:`to_dict` wrote: its parameters, a list read as a tuple and an entity finder by its
        registered name.  A rule whose record leaves something out (``StateProbe``'s weights) overrides this."""
        params = {k: v for k, v in data.items() if k != "rule"}
        known = {f.name for f in fields(cls)}
        extra = sorted(set(params) - known)
        if extra:
            raise ValueError(
                f"rules: {cls.name} has no parameter {', '.join(extra)} (it has {sorted(known) or 'none'})"
            )
        for key, value in params.items():
            if isinstance(value, list):
                params[key] = tuple(value)
        if isinstance(params.get("entities"), str):
            params["entities"] = entity_finder(params["entities"])
        return cls(**params)

    def __str__(self) -> str:
        return self.name


HOOKS_BY: dict[Decision, str] = {d: ", ".join(h for h, spec in HOOKS.items() if spec.decision == d) for d in DECISIONS}
"""Each decision point's hooks, for the messages that name them."""


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return getattr(value, "name", value) if not isinstance(value, (str, int, float, bool, type(None))) else value


def check_finder(rule: Rule) -> None:
    """Refuse an ``entities`` parameter that is not an ``EntityFinder``, naming what it needs; register it by name
    (so a results file that records the rule reads back)."""
    finder = getattr(rule, "entities", None)
    if not isinstance(finder, EntityFinder):
        raise TypeError(
            f"{type(rule).__name__}(entities={finder!r}): pass an EntityFinder (a name attribute and names(text), "
            "compared(question) and options(question) methods), e.g. EnglishNames()"
        )
    register_finder(finder)


def check_greedy_estimator(rule: Rule, estimator: str) -> None:
    """Refuse an estimator that needs more than the greedy continuation (samples, another call)."""
    from seakr_integrations.uncertainty.registry import REGISTRY, check_estimator

    check_estimator(estimator)
    if not REGISTRY[estimator].needs <= {"greedy_logprobs"}:
        raise ValueError(
            f"{type(rule).__name__}(estimator={estimator!r}): it needs samples or another call, and this rule reads "
            "the greedy continuation alone: use 'min_token_prob' or 'perplexity'"
        )
