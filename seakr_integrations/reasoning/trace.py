"""The decision trace: what SeaKR saw and decided at every step, returned with the answer.

Users debug retrieval with it, evaluation reads the uncertainties from it, and the framework adapters put it into
their own metadata.  Every record converts to plain, strict JSON and back (``SeaKRResult.to_json`` /
``SeaKRResult.from_json``), exactly: a saved trace reads back as the trace that was saved.

The JSON form (``schema_version`` 2):

* every saved trace carries ``"schema_version": 2``; a trace without it is version 1, the form written before the
  version was recorded (the results under ``runs/answer-prefix/`` hold such traces), and still loads; a newer
  version than this code knows is refused with a clear error;
* non-finite numbers (an uncertainty that could not be computed, a passage the model could not judge) are written
  as the strings ``"inf"``, ``"-inf"`` and ``"nan"``, since strict JSON has no such numbers; they read back as the
  same floats (version 1 wrote them as ``null``, which reads back as ``inf``, the only non-finite value it wrote);
* ``stop`` and ``stop_reason`` are :class:`StopReason` values (their strings);
* a step names the passage it kept ``chosen_passage_id``; a candidate says whether it was kept with ``chosen``
  (a bool).  Version 1 called the step's field ``chosen`` too;
* a candidate carries its passage's ``text``, so every passage tried reads back whole (version 1 kept only the
  chosen passages' texts, in ``passages``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.reasoning.jsonform import (
    SCHEMA_VERSION,
    _numbers_from_json,
    _plain,
    number_from_json,
    number_to_json,
    trace_version,
    uncertainty_from_dict,
)
from seakr_integrations.retrieval.passage import Passage
from seakr_integrations.uncertainty.estimate import Uncertainty

__all__ = [
    "SCHEMA_VERSION",
    "Assessment",
    "CandidateTrace",
    "FinalTrace",
    "SeaKRResult",
    "StepTrace",
    "StopReason",
    "number_from_json",
    "number_to_json",
    "trace_version",
]

Decision = Literal["answer", "accept", "retrieve"]
Strategy = Literal["rationales", "knowledge", "stated", "direct", "passage", "chain"]


class StopReason(StrEnum):
    """Why the loop (SeaKR's or a baseline's) ended.  A ``StrEnum``: it compares equal to its string and is
    written to JSON as it."""

    ANSWER_FOUND = "answer found"
    """A step stated the answer."""
    REPEATED_QUERY = "repeated query"
    """The search query was one already searched."""
    REPEATED_STEP = "repeated step"
    """A step repeated an earlier one word for word (``SeaKRConfig.stop_on_repeated_step``)."""
    NO_NEW_PASSAGES = "no new passages"
    """The search returned only passages already chosen."""
    NO_PASSAGES_FOUND = "no passages found"
    """The search returned nothing (single-hop)."""
    STEP_LIMIT = "step limit"
    """``max_steps`` reasoning steps were taken."""
    PASSAGE_LIMIT = "passage limit"
    """``max_docs`` passages were chosen."""
    RETRIEVAL_ERROR = "retrieval error"
    """The search failed and ``on_retrieval_error="answer_without"`` let the answer go on without it."""
    CERTAIN_WITHOUT_RETRIEVAL = "certain without retrieval"
    """Single-hop: the model was sure of its direct answer."""
    ANSWERED_FROM_PASSAGES = "answered from passages"
    """Single-hop: the answer came from the least uncertain passage."""
    EMPTY_STEP = "empty step"
    """A baseline's chain wrote an empty step."""
    NO_RETRIEVAL = "no retrieval"
    """The CoT baseline: one chain, no search."""
    RETRIEVED_ONCE = "retrieved once"
    """The single-retrieval baseline: one search, one chain."""

    @classmethod
    def parse(cls, value: StopReason | str) -> StopReason:
        """``value`` as a ``StopReason``.

        Raises:
            ValueError: It is none of them (the message lists the known ones).
        """
        try:
            return cls(value)
        except ValueError:
            known = ", ".join(repr(r.value) for r in cls)
            raise ValueError(f"unknown stop reason {value!r}; the known ones are {known}") from None


def _score(u: Uncertainty | None) -> str:
    if u is None:
        return "-"
    return f"{u.value:.3f}" if u.is_finite else "inf"


@dataclass(frozen=True)
class Assessment:
    """SeaKR's uncertainty check on its own (``SeaKR.assess``): what the model would write next and whether that
    calls for retrieval.

    Attributes:
        question: The question assessed.
        generation: The greedy step (multi-hop) or direct answer (single-hop) the model wrote.
        uncertainty: Its uncertainty.
        retrieve: The gate's decision: ``True`` when the model is uncertain (or wrote nothing).
        states_answer: Whether the generation already states the answer (the loop stops there before the gate;
            a standalone gate leaves that to the caller).
        output: The raw self-aware output (greedy continuation and the k samples; no samples when the decision
            needed none).
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
        rank_value: What the re-ranking compared: the uncertainty, or ``inf`` when the model could not be judged
            on this passage (it wrote nothing; single-hop: no answer), which ranks it last.
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
    def from_dict(cls, data: dict[str, Any], texts: dict[str, str] | None = None) -> CandidateTrace:
        """The record that :meth:`to_dict` wrote (``texts``: passage texts by id, for version 1, which wrote none)."""
        pid = str(data["id"])
        text = data.get("text", (texts or {}).get(pid, ""))
        passage = Passage(pid, data.get("title") or "", text, number_from_json(data.get("search_score")))
        return cls(
            passage,
            int(data["search_rank"]),
            data.get("generation") or "",
            uncertainty_from_dict(data.get("uncertainty")),
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
        screen: The cascade's first-stage reading of the greedy step (``cascade_estimator``), when there is one;
            ``uncertainty`` is then not measured where the screen decided.
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
            value = StopReason.parse(value)
        object.__setattr__(self, name, value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "pseudo_generation": self.pseudo_generation,
            "uncertainty": self.uncertainty.to_dict(),
            "decision": self.decision,
            "query": self.query,
            "masked_words": list(self.masked_words),
            "candidates": [c.to_dict() for c in self.candidates],
            "chosen_passage_id": self.chosen_passage_id,
            "accepted": self.accepted,
            "stop": self.stop,
            "error": self.error,
            "reason": self.reason,
            "screen": None if self.screen is None else self.screen.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], texts: dict[str, str] | None = None) -> StepTrace:
        """The record that :meth:`to_dict` wrote (version 1's ``chosen`` read as ``chosen_passage_id``)."""
        return cls(
            index=int(data["index"]),
            pseudo_generation=data.get("pseudo_generation") or "",
            uncertainty=uncertainty_from_dict(data.get("uncertainty")),
            decision=data["decision"],
            query=data.get("query"),
            masked_words=list(data.get("masked_words") or []),
            candidates=[CandidateTrace.from_dict(c, texts) for c in data.get("candidates") or []],
            chosen_passage_id=data.get("chosen_passage_id", data.get("chosen")),
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
        strategy: ``"rationales"`` / ``"knowledge"`` (multi-hop), ``"stated"`` (the answer the loop's last step
            stated, ``SeaKRConfig.answer_when_stated``), ``"direct"`` / ``"passage"`` (single-hop),
            ``"chain"`` (a baseline's answer read from its own reasoning chain).
        answer: The extracted answer (``None`` if there was none).
        generation: The text the answer was read from.
        uncertainty: The uncertainty of the call the answer came from.
        forced: Whether " So the answer is " had to be appended to get an answer.
        context: Ids of passages (or "step N" for rationales) shown to the model.
        screen: The ``cascade_estimator``'s reading of the same call, when one is set (kept for analysis).
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
            "strategy": self.strategy,
            "answer": self.answer,
            "generation": self.generation,
            "uncertainty": self.uncertainty.to_dict(),
            "forced": self.forced,
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
            uncertainty_from_dict(data.get("uncertainty")),
            bool(data.get("forced", False)),
            [str(c) for c in data.get("context") or []],
            None if data.get("screen") is None else uncertainty_from_dict(data["screen"]),
        )


@dataclass
class SeaKRResult:
    """The answer to one question and the full decision trace behind it.

    Attributes:
        question: The question asked.
        answer: The final answer (empty string if the model gave none).
        strategy: The final strategy that won.
        finals: Every final candidate, by strategy.
        steps: The loop's rounds in order.
        passages: The passages chosen, in order.
        stop_reason: Why the loop ended (a string is read as its ``StopReason``).
        notes: Other events worth knowing (passages dropped to fit the context, tolerated retrieval errors).
        lm_calls: Number of prompts this question asked for (identical prompts in one batch, e.g. from two
            questions alike, are generated once).
        generated_tokens: Tokens generated for this question's prompts: greedy continuations and all k samples.
        searches: Searches run (retrievals), failed ones included.
        config: The settings used.
    """

    question: str
    answer: str
    strategy: Strategy
    finals: dict[str, FinalTrace]
    steps: list[StepTrace]
    passages: list[Passage]
    stop_reason: StopReason
    notes: list[str] = field(default_factory=list)
    lm_calls: int = 0
    generated_tokens: int = 0
    searches: int = 0
    config: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.stop_reason = StopReason.parse(self.stop_reason)

    def to_dict(self) -> dict[str, Any]:
        """Plain, strict-JSON-serialisable form of the whole trace, with its ``schema_version`` (see the module
        docstring); :meth:`from_dict` reads it back."""
        return _plain(
            {
                "schema_version": SCHEMA_VERSION,
                "question": self.question,
                "answer": self.answer,
                "strategy": self.strategy,
                "finals": {k: v.to_dict() for k, v in self.finals.items()},
                "steps": [s.to_dict() for s in self.steps],
                "passages": [p.to_dict() for p in self.passages],
                "stop_reason": self.stop_reason,
                "notes": list(self.notes),
                "lm_calls": self.lm_calls,
                "generated_tokens": self.generated_tokens,
                "searches": self.searches,
                "config": self.config,
            }
        )

    def to_json(self, **kwargs: Any) -> str:
        """``json.dumps`` of ``to_dict()`` (strict: no NaN/Infinity)."""
        return json.dumps(self.to_dict(), allow_nan=False, ensure_ascii=False, **kwargs)

    @classmethod
    def from_dict(cls, data: Any) -> SeaKRResult:
        """The trace that :meth:`to_dict` wrote, in version 2 or version 1 (see the module docstring).

        Raises:
            ValueError: ``data`` is not a SeaKR trace, was written by a newer release (upgrade
                ``seakr-integrations`` to read it), or holds a value no trace can hold (the message says which).
        """
        version = trace_version(data)
        if version is None:
            raise ValueError(
                "not a SeaKR trace: expected the mapping SeaKRResult.to_dict() writes (with 'schema_version', or "
                f"'steps', 'finals' and 'config' as version 1 has), got {type(data).__name__}"
                + (f" with keys {sorted(data)[:8]}" if isinstance(data, dict) else "")
            )
        try:
            passages = [
                Passage(str(p["id"]), p.get("title") or "", p.get("text") or "", number_from_json(p.get("score")))
                for p in data.get("passages") or []
            ]
            texts = {p.id: p.text for p in passages}
            return cls(
                question=data["question"],
                answer=data.get("answer") or "",
                strategy=data["strategy"],
                finals={k: FinalTrace.from_dict({"strategy": k, **v}) for k, v in data["finals"].items()},
                steps=[StepTrace.from_dict(s, texts) for s in data["steps"]],
                passages=passages,
                stop_reason=data["stop_reason"],
                notes=list(data.get("notes") or []),
                lm_calls=int(data.get("lm_calls", 0)),
                generated_tokens=int(data.get("generated_tokens", 0)),
                searches=int(data.get("searches", 0)),
                config=_numbers_from_json(dict(data.get("config") or {})),
            )
        except (KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"malformed SeaKR trace (schema_version {version}): {type(err).__name__}: {err}") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> SeaKRResult:
        """The trace that :meth:`to_json` wrote (see :meth:`from_dict`).

        Raises:
            ValueError: Not JSON, or not a trace this release can read.
        """
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"not a JSON SeaKR trace: {err}") from None
        return cls.from_dict(data)

    def format(self) -> str:
        """The trace as readable text (``seakr ask --trace``)."""
        lines = [f"Question: {self.question}"]
        for s in self.steps:
            lines.append(
                f"step {s.index + 1}: U={_score(s.uncertainty)} -> {s.decision}: {s.pseudo_generation.strip()!r}"
            )
            if s.query is not None:
                lines.append(
                    f"    query: {s.query!r}" + (f" (masked: {', '.join(s.masked_words)})" if s.masked_words else "")
                )
            for c in s.candidates:
                mark = "*" if c.chosen else " "
                lines.append(
                    f"   {mark}[{c.rank}] {c.passage.title or c.passage.id} ({c.passage.id}) U={_score(c.uncertainty)}"
                    + (" (empty generation)" if not c.generation.strip() else "")
                    + f": {c.generation.strip()!r}"
                )
            if s.error:
                lines.append(f"    retrieval error: {s.error}")
            if s.decision == "retrieve" and s.accepted is not None:
                lines.append(f"    accepted: {s.accepted.strip()!r}")
            if s.stop:
                lines.append(f"    stop: {s.stop}")
        for name, f in self.finals.items():
            mark = "*" if name == self.strategy else " "
            forced = " (forced)" if f.forced else ""
            lines.append(f" {mark}final from {name}: U={_score(f.uncertainty)} answer={f.answer!r}{forced}")
        lines.extend(f"note: {n}" for n in self.notes)
        lines.append(f"Answer: {self.answer}")
        return "\n".join(lines)
