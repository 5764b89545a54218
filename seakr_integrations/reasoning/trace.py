"""The decision trace: what SeaKR saw and decided at every step, returned with the answer.

Users debug retrieval with it, evaluation reads the uncertainties from it, and the framework adapters put it into
their own metadata.  Every record converts to plain JSON (non-finite numbers become ``null``; the uncertainty's
``note`` says why).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.retrieval.passage import Passage
from seakr_integrations.uncertainty.estimate import Uncertainty

__all__ = ["Assessment", "CandidateTrace", "FinalTrace", "SeaKRResult", "StepTrace"]

Decision = Literal["answer", "accept", "retrieve"]
Strategy = Literal["rationales", "knowledge", "direct", "passage", "chain"]


def _plain(value: Any) -> Any:
    """Strict-JSON form: non-finite floats become ``None``, tuples lists, records dicts."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    return value


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
        output: The raw self-aware output (greedy continuation and the k samples).
    """

    question: str
    generation: str
    uncertainty: Uncertainty
    retrieve: bool
    states_answer: bool
    output: SelfAwareOutput = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return _plain(
            {
                "question": self.question,
                "generation": self.generation,
                "uncertainty": self.uncertainty.to_dict(),
                "retrieve": self.retrieve,
                "states_answer": self.states_answer,
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
        rank_value: What the re-ranking compared: the uncertainty, or ``inf`` when the generation was empty.
        chosen: Whether this passage won the round.
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
            "search_rank": self.rank,
            "search_score": self.passage.score,
            "generation": self.generation,
            "uncertainty": self.uncertainty.to_dict(),
            "rank_value": self.rank_value,
            "chosen": self.chosen,
        }


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
        chosen: Id of the passage kept.
        accepted: The step text appended to the reasoning chain in this round.
        stop: Why the loop ended after this round, if it did.
        error: The retrieval error, when one was tolerated (``on_retrieval_error="answer_without"``).
    """

    index: int
    pseudo_generation: str
    uncertainty: Uncertainty
    decision: Decision
    query: str | None = None
    masked_words: list[str] = field(default_factory=list)
    candidates: list[CandidateTrace] = field(default_factory=list)
    chosen: str | None = None
    accepted: str | None = None
    stop: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "pseudo_generation": self.pseudo_generation,
            "uncertainty": self.uncertainty.to_dict(),
            "decision": self.decision,
            "query": self.query,
            "masked_words": list(self.masked_words),
            "candidates": [c.to_dict() for c in self.candidates],
            "chosen": self.chosen,
            "accepted": self.accepted,
            "stop": self.stop,
            "error": self.error,
        }


@dataclass
class FinalTrace:
    """One candidate answer of the final self-aware reasoning.

    Attributes:
        strategy: ``"rationales"`` / ``"knowledge"`` (multi-hop), ``"direct"`` / ``"passage"`` (single-hop),
            ``"chain"`` (a baseline's answer read from its own reasoning chain).
        answer: The extracted answer (``None`` if there was none).
        generation: The text the answer was read from.
        uncertainty: The uncertainty of the call the answer came from.
        forced: Whether " So the answer is " had to be appended to get an answer.
        context: Ids of passages (or "step N" for rationales) shown to the model.
    """

    strategy: Strategy
    answer: str | None
    generation: str
    uncertainty: Uncertainty
    forced: bool = False
    context: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "answer": self.answer,
            "generation": self.generation,
            "uncertainty": self.uncertainty.to_dict(),
            "forced": self.forced,
            "context": list(self.context),
        }


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
        stop_reason: Why the loop ended.
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
    stop_reason: str
    notes: list[str] = field(default_factory=list)
    lm_calls: int = 0
    generated_tokens: int = 0
    searches: int = 0
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain, strict-JSON-serialisable form of the whole trace."""
        return _plain(
            {
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
