"""The records of one question's decisions: each round of the loop, each passage tried, each final answer.

``SeaKRResult`` (``trace.py``) holds them with the answer; each converts to the trace's strict-JSON form and back.
``Assessment`` is the same kind of record for ``SeaKR.assess``, the gate on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.reasoning.jsonform import _plain, number_from_json, uncertainty_from_dict
from seakr_integrations.reasoning.reasons import Reason
from seakr_integrations.retrieval.passage import Passage
from seakr_integrations.uncertainty.estimate import Uncertainty

__all__ = ["Assessment", "CandidateTrace", "Decision", "FinalTrace", "StepTrace", "StopReason", "Strategy"]

Decision = Literal["answer", "accept", "retrieve"]
Strategy = Literal["rationales", "knowledge", "direct", "passage", "chain"]


class StopReason(Reason):
    """Why the loop (SeaKR's or a baseline's) ended: a registered reason (``reasons.Reason``), equal to its string
    and written to JSON as it; a rule of a user's own registers its own with ``StopReason.register(value, doc)``."""

    noun: ClassVar[str] = "stop reason"
    ANSWER_FOUND: ClassVar[StopReason]
    REPEATED_QUERY: ClassVar[StopReason]
    REPEATED_STEP: ClassVar[StopReason]
    NO_NEW_PASSAGES: ClassVar[StopReason]
    NO_PASSAGES_FOUND: ClassVar[StopReason]
    STEP_LIMIT: ClassVar[StopReason]
    PASSAGE_LIMIT: ClassVar[StopReason]
    RETRIEVAL_ERROR: ClassVar[StopReason]
    CERTAIN_WITHOUT_RETRIEVAL: ClassVar[StopReason]
    ANSWERED_FROM_PASSAGES: ClassVar[StopReason]
    EMPTY_STEP: ClassVar[StopReason]
    NO_RETRIEVAL: ClassVar[StopReason]
    RETRIEVED_ONCE: ClassVar[StopReason]


StopReason.ANSWER_FOUND = StopReason.register(
    "answer found",
    "A step stated the answer.",
)
StopReason.REPEATED_QUERY = StopReason.register(
    "repeated query",
    "The search query was one already searched.",
)
StopReason.REPEATED_STEP = StopReason.register(
    "repeated step",
    "A step repeated an earlier one word for word (the ``stop-on-repeated-step`` rule).",
)
StopReason.NO_NEW_PASSAGES = StopReason.register(
    "no new passages",
    "The search returned only passages already chosen.",
)
StopReason.NO_PASSAGES_FOUND = StopReason.register(
    "no passages found",
    "The search returned nothing (single-hop).",
)
StopReason.STEP_LIMIT = StopReason.register(
    "step limit",
    "``max_steps`` reasoning steps were taken.",
)
StopReason.PASSAGE_LIMIT = StopReason.register(
    "passage limit",
    "``max_docs`` passages were chosen.",
)
StopReason.RETRIEVAL_ERROR = StopReason.register(
    "retrieval error",
    'The search failed and ``on_retrieval_error="answer_without"`` let the answer go on without it.',
)
StopReason.CERTAIN_WITHOUT_RETRIEVAL = StopReason.register(
    "certain without retrieval",
    "Single-hop: the model was sure of its direct answer.",
)
StopReason.ANSWERED_FROM_PASSAGES = StopReason.register(
    "answered from passages",
    "Single-hop: the answer came from the least uncertain passage.",
)
StopReason.EMPTY_STEP = StopReason.register(
    "empty step",
    "A baseline's chain wrote an empty step.",
)
StopReason.NO_RETRIEVAL = StopReason.register(
    "no retrieval",
    "The CoT baseline: one chain, no search.",
)
StopReason.RETRIEVED_ONCE = StopReason.register(
    "retrieved once",
    "The single-retrieval baseline: one search, one chain.",
)


@dataclass(frozen=True)
class Assessment:
    """SeaKR's uncertainty check on its own (``SeaKR.assess``): what the model would write next and whether that
    calls for retrieval.

    Attributes:
        question: The question assessed.
        generation: The greedy step (multi-hop) or direct answer (single-hop) the model wrote.
        uncertainty: Its uncertainty.
        retrieve: The gate's decision: ``True`` when the model is uncertain (or wrote nothing).
        states_answer: Whether the generation states the answer (the loop stops there; a standalone gate's caller
            decides).
        output: The raw self-aware output (greedy continuation, and the k samples when the decision needed them).
        reason: Why the gate decided as it did, a ``GateReason`` value (``None``: the plain comparison with delta).
    """

    question: str
    generation: str
    uncertainty: Uncertainty
    retrieve: bool
    states_answer: bool
    output: SelfAwareOutput = field(repr=False, compare=False)
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _plain(
            {
                "question": self.question,
                "generation": self.generation,
                "uncertainty": self.uncertainty.to_dict(),
                "retrieve": self.retrieve,
                "states_answer": self.states_answer,
                "reason": self.reason,
                "samples": [s.text for s in self.output.samples],
            }
        )


@dataclass
class CandidateTrace:
    """One retrieved passage tried in a re-ranking round.

    Attributes:
        passage: The passage (id, title, text, search score).
        rank: Its 1-based position in the search results.
        generation: The greedy step the model wrote with this passage in its context.
        uncertainty: The uncertainty of that call.
        rank_value: What the re-ranking compared: the uncertainty, or ``inf`` (ranks last) when the model wrote
            nothing (single-hop: no answer).
        chosen: Whether this passage won the round (the step names it in ``chosen_passage_id``).
    """

    passage: Passage
    rank: int
    generation: str
    uncertainty: Uncertainty
    rank_value: float
    chosen: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.passage.id,
            "title": self.passage.title,
            "text": self.passage.text,
            "search_rank": self.rank,
            "search_score": self.passage.score,
            "generation": self.generation,
            "uncertainty": self.uncertainty.to_dict(),
            "rank_value": self.rank_value,
            "chosen": self.chosen,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CandidateTrace:
        """The record that :meth:`to_dict` wrote."""
        text = data.get("text", "")
        passage = Passage(str(data["id"]), data.get("title") or "", text, number_from_json(data.get("search_score")))
        return cls(
            passage,
            int(data["search_rank"]),
            data.get("generation") or "",
            uncertainty_from_dict(data["uncertainty"]),
            number_from_json(data.get("rank_value")),
            bool(data.get("chosen", False)),
        )


@dataclass
class StepTrace:
    """One round of the loop.

    Attributes:
        index: 0-based round number.
        pseudo_generation: The greedy step generated before any retrieval decision.
        uncertainty: Its uncertainty.
        decision: ``"answer"`` (it stated the answer: no gate), ``"accept"`` (certain enough) or ``"retrieve"``.
        query: The search query (retrieval rounds).
        masked_words: Low-confidence words left out of the query.
        candidates: Every passage tried, in search order.
        chosen_passage_id: Id of the passage kept (the candidate with ``chosen=True``).
        accepted: The step text appended to the reasoning chain in this round.
        stop: Why the loop ended after this round, if it did (a string is read as its ``StopReason``).
        error: The retrieval error, when one was tolerated (``on_retrieval_error="answer_without"``).
        reason: Why the gate decided as it did, a ``GateReason`` value (``None`` for a step that states the answer).
        screen: The reading of the greedy step by the rules' greedy-only estimator (``token-cascade``'s), if any
            (``uncertainty`` unmeasured where it decided).
    """

    index: int
    pseudo_generation: str
    uncertainty: Uncertainty
    decision: Decision
    query: str | None = None
    masked_words: list[str] = field(default_factory=list)
    candidates: list[CandidateTrace] = field(default_factory=list)
    chosen_passage_id: str | None = None
    accepted: str | None = None
    stop: StopReason | None = None
    error: str | None = None
    reason: str | None = None
    screen: Uncertainty | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "stop" and value is not None:
            value = StopReason(value)
        object.__setattr__(self, name, value)

    def to_dict(self) -> dict[str, Any]:
        return {  # the fields in order, the nested records as their own dicts
            **vars(self),
            "uncertainty": self.uncertainty.to_dict(),
            "masked_words": list(self.masked_words),
            "candidates": [c.to_dict() for c in self.candidates],
            "screen": None if self.screen is None else self.screen.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepTrace:
        """The record that :meth:`to_dict` wrote."""
        return cls(
            index=int(data["index"]),
            pseudo_generation=data.get("pseudo_generation") or "",
            uncertainty=uncertainty_from_dict(data["uncertainty"]),
            decision=data["decision"],
            query=data.get("query"),
            masked_words=list(data.get("masked_words") or []),
            candidates=[CandidateTrace.from_dict(c) for c in data.get("candidates") or []],
            chosen_passage_id=data.get("chosen_passage_id"),
            accepted=data.get("accepted"),
            stop=data.get("stop"),
            error=data.get("error"),
            reason=data.get("reason"),
            screen=None if data.get("screen") is None else uncertainty_from_dict(data["screen"]),
        )


@dataclass
class FinalTrace:
    """One candidate answer of the final self-aware reasoning.

    Attributes:
        strategy: ``"rationales"`` / ``"knowledge"`` (multi-hop), ``"direct"`` / ``"passage"`` (single-hop),
            ``"chain"`` (a baseline's chain).
        answer: The extracted answer (``None`` if there was none).
        generation: The text the answer was read from.
        uncertainty: The uncertainty of the call the answer came from.
        forced: Whether " So the answer is " had to be appended to get an answer.
        context: Ids of passages (or "step N" for rationales) shown to the model.
        screen: The rules' greedy-only estimator's reading of the same call, when one is set (kept for analysis).
    """

    strategy: Strategy
    answer: str | None
    generation: str
    uncertainty: Uncertainty
    forced: bool = False
    context: list[str] = field(default_factory=list)
    screen: Uncertainty | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **vars(self),
            "uncertainty": self.uncertainty.to_dict(),
            "context": list(self.context),
            "screen": None if self.screen is None else self.screen.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FinalTrace:
        """The record that :meth:`to_dict` wrote."""
        return cls(
            data["strategy"],
            data.get("answer"),
            data.get("generation") or "",
            uncertainty_from_dict(data["uncertainty"]),
            bool(data.get("forced", False)),
            [str(c) for c in data.get("context") or []],
            None if data.get("screen") is None else uncertainty_from_dict(data["screen"]),
        )
