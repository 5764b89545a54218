"""Each decision of the loop as one log line (logger ``seakr``, level INFO), so long work shows its progress with
one ``logging`` setting (``seakr ask`` prints it).  Nothing is formatted unless INFO is enabled for the logger.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from seakr_integrations.quoting import quoted
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.events import (
    AnswerChosen,
    PassagesReranked,
    PassagesRetrieved,
    StepAssessed,
    StepFinished,
)

log = logging.getLogger("seakr")


def _u(value: float | None) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.2f}"


def describe(event: Any) -> str | None:
    """One line for a loop event, or ``None`` for events with nothing to tell."""
    if isinstance(event, StepAssessed):
        step = event.step
        if step.reason == GateReason.QUESTION_FIRST:
            return f"step {step.index + 1}: the question is searched first"
        verdict = {"answer": "it states the answer", "accept": "certain enough", "retrieve": "uncertain: retrieve"}
        return (
            f"step {step.index + 1}: U={_u(step.uncertainty.value)} -> {verdict.get(step.decision, step.decision)}"
            f" ({quoted(step.pseudo_generation.strip(), 80)})"
        )
    if isinstance(event, PassagesRetrieved):
        if event.error:
            return f"searched for {quoted(event.query, 80)}: failed ({event.error})"
        return f"searched for {quoted(event.query, 80)}: {len(event.passages)} passages"
    if isinstance(event, PassagesReranked):
        scores = ", ".join(f"{c.passage.id} U={_u(c.uncertainty.value)}" for c in event.candidates)
        return f"re-ranked by uncertainty ({scores}): kept {event.chosen_passage_id}"
    if isinstance(event, StepFinished) and event.step.stop:
        return f"stop: {event.step.stop}"
    if isinstance(event, AnswerChosen):
        scores = ", ".join(f"{name} U={_u(final.uncertainty.value)}" for name, final in event.finals.items())
        return f"answer from {event.strategy}: {quoted(event.answer, 80)} ({scores})"
    return None


def log_progress(question_index: int, event: Any) -> None:
    """Log ``event`` of question ``question_index`` at INFO, when INFO is enabled for the ``seakr`` logger."""
    if log.isEnabledFor(logging.INFO) and (line := describe(event)) is not None:
        log.info("question %d: %s", question_index, line)
