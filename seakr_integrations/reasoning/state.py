"""One question in flight, and what its program (a generator) asks of the driver: it yields a ``Generate`` or a
``Search`` and gets back the outputs or passages, or the failure thrown in (``docs/design/reasoning.md``)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import SamplingConfig
from seakr_integrations.reasoning.events import AnswerChosen, Observer, SeaKREvent
from seakr_integrations.reasoning.records import FinalTrace, StepTrace
from seakr_integrations.reasoning.trace import SeaKRResult
from seakr_integrations.retrieval.passage import Passage
from seakr_integrations.uncertainty.estimate import Uncertainty

Call = tuple[str, SamplingConfig]
"""One LM call: the prompt and its sampling parameters."""

Scored = tuple[SelfAwareOutput, Uncertainty]
"""An LM call's output and its uncertainty."""


@dataclass(frozen=True)
class Generate:
    """A program's LM calls; the driver sends back one ``SelfAwareOutput`` per call, in order."""

    calls: tuple[Call, ...]


@dataclass(frozen=True)
class Search:
    """A program's search; the driver sends back the retriever's passages."""

    query: str
    k: int
    timeout: float | None = None
    """Seconds after which the driver gives up on the search (``SeaKR(..., search_timeout=...)``)."""


Request = Generate | Search
Program = Generator[Request, Any, Any]


class QuestionState:
    """What one question (at ``index`` in its batch, as events say) has gathered so far: its steps, passages,
    trace, notes and costs; ``observer`` holds its hooks (framework callbacks; ``None``: a do-nothing one)."""

    def __init__(self, question: str, index: int = 0, observer: Observer | None = None) -> None:
        self.question = question
        self.index = index
        self.observer = observer or Observer()
        self.steps: list[str] = []
        self.docs: list[Passage] = []
        self.found: list[Passage] = []
        self.trace: list[StepTrace] = []
        self.notes: list[str] = []
        self.lm_calls = 0
        self.generated_tokens = 0
        self.searches = 0
        self.outbox: list[Any] = []
        """Events waiting for the driver to yield them."""
        self.round = 0
        """The loop's round in progress, 1-based (0 before the first)."""
        self.rules_applied: list[dict[str, Any]] = []
        """Each decision a rule changed: ``{"rule", "round" (1-based; None: the final answer), "what"}``."""

    def rule_applied(self, rule: Any, what: str, *, final: bool = False) -> None:
        """Record that ``rule`` changed a decision of the current round (or of the final answer)."""
        self.rules_applied.append({"rule": rule.name, "round": None if final else self.round, "what": what})

    def note(self, text: str) -> None:
        """Record something the user should know about this answer (once)."""
        if text not in self.notes:
            self.notes.append(text)

    def emit(self, event: SeaKREvent) -> None:
        """Hand ``event`` to the observer and queue it for the driver to yield."""
        self.observer.on_event(event)
        self.outbox.append(event)

    def result(
        self, winner: FinalTrace, finals: dict[str, FinalTrace], stop: str, config: dict[str, Any]
    ) -> SeaKRResult:
        """The finished answer: announce the final choice, then the result record with the whole trace."""
        self.emit(AnswerChosen(self.index, self.question, dict(finals), winner.strategy, winner.answer or ""))
        return SeaKRResult(
            question=self.question,
            answer=winner.answer or "",
            strategy=winner.strategy,
            finals=finals,
            steps=self.trace,
            passages=list(self.docs),
            stop_reason=stop,
            notes=self.notes,
            lm_calls=self.lm_calls,
            generated_tokens=self.generated_tokens,
            searches=self.searches,
            config=config,
            rules_applied=list(self.rules_applied),
        )
