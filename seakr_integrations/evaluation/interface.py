"""What ``seakr eval`` runs: the ``Method`` interface and the ``MethodAnswer`` every method returns (apart from the
catalogue in ``methods``, so that a method in its own module, such as ``skr.SKRkNN``, need not import it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class MethodAnswer:
    """One question's answer and what it cost.

    Attributes:
        prediction: The final answer text ("" when the method gave none).
        retrievals: Searches run.
        lm_calls: Prompts generated.
        generated_tokens: Tokens generated (greedy continuations and samples).
        trace: The method's decision trace, JSON-ready.
        error: Why the question failed (``"TypeName: message"``), or ``None`` when it was answered.
        exception: The exception behind ``error`` (not written to results files): the runner stops a run on a
            server's failure (``remote_errors.server_unavailable``) but goes on after a question's own.
    """

    prediction: str
    retrievals: int
    lm_calls: int
    generated_tokens: int
    trace: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    exception: BaseException | None = field(default=None, repr=False, compare=False)


@runtime_checkable
class Method(Protocol):
    """A way of answering questions that ``seakr eval`` can run."""

    name: str

    def describe(self) -> dict[str, Any]:
        """Everything that determines its answers (JSON-ready): results files are keyed by it."""
        ...

    def answer_many(self, questions: Sequence[str]) -> list[MethodAnswer]:
        """Answers in question order (questions answered together may share back-end batches)."""
        ...


@runtime_checkable
class StreamingMethod(Method, Protocol):
    """A method that answers as a stream: a new question starts as soon as one finishes, so the engine is never
    left waiting on a batch's slowest question (``seakr eval`` prefers this when a method has it)."""

    def iter_answers(self, questions: Sequence[str], max_in_flight: int) -> Iterator[tuple[int, MethodAnswer]]:
        """Yield ``(index, answer)`` as each question finishes, at most ``max_in_flight`` in progress at once."""
        ...
