"""What SeaKR's loop gathered for a question that another model answers (an agent's): the loop of Algorithm 1 up
to its end (when to retrieve, what to search, which passage to keep, when to stop), without its own final answer.

An agent's model answers its user; SeaKR decides what it should read first.  The record holds the same steps,
passages and costs as a ``SeaKRResult`` (the same classes: a step here is a step there) and nothing about an
answer, because none was written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from seakr_integrations.reasoning.jsonform import _plain
from seakr_integrations.reasoning.records import StepTrace, StopReason
from seakr_integrations.retrieval.passage import Passage

__all__ = ["GatheredKnowledge"]


@dataclass
class GatheredKnowledge:
    """The passages SeaKR's loop kept for ``question``, and the trace of how.

    Attributes:
        question: The question the loop ran for.
        passages: The passages kept, in the order they were chosen (what the answering model should read).
        steps: The loop's rounds in order (the rationale steps it wrote, its gate, queries and re-rankings).
        stop_reason: Why the loop ended.
        notes: Other events worth knowing (tolerated retrieval errors, passages dropped to fit the context).
        lm_calls: Prompts the loop asked for.
        generated_tokens: Tokens generated for them (greedy continuations and all k samples).
        searches: Searches run, failed ones included.
        rules_applied: Each decision a rule changed (``{"rule", "round", "what"}``).
    """

    question: str
    passages: list[Passage]
    steps: list[StepTrace]
    stop_reason: StopReason
    notes: list[str] = field(default_factory=list)
    lm_calls: int = 0
    generated_tokens: int = 0
    searches: int = 0
    rules_applied: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rationale(self) -> list[str]:
        """The steps the loop accepted as its own reasoning, in order (empty ones left out)."""
        return [s.accepted for s in self.steps if s.accepted]

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON-serialisable form (an agent's state or a workflow event holds it as plain data)."""
        return _plain(
            {
                **vars(self),
                "passages": [p.to_dict() for p in self.passages],
                "steps": [s.to_dict() for s in self.steps],
                "stop_reason": str(self.stop_reason),
                "notes": list(self.notes),
            }
        )
