"""In-context exemplars for SeaKR's chain-of-thought prompts: ten worked questions per question style (paper
Appendix B.4, SPEC section 7), this project's own (``data/exemplars.json``), in the authors' format.  How they are
written: ``docs/design/reasoning.md``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files


@dataclass(frozen=True)
class Exemplar:
    """One worked question for the in-context prompt.

    Attributes:
        question: The question, as a benchmark of this style would ask it.
        steps: Reasoning sentences, each a full sentence ending with a period; empty for a direct answer.
        answer: The short answer, without a final period (``render`` adds it).
    """

    question: str
    steps: tuple[str, ...]
    answer: str

    def rationale(self) -> str:
        """The reasoning steps joined by single spaces (empty when there are none)."""
        return " ".join(self.steps)

    def render(self) -> str:
        """The exemplar as prompt text: ``"Question: ...\\nAnswer: step1 step2 So the answer is X."``."""
        rationale = self.rationale()
        prefix = f"{rationale} " if rationale else ""
        return f"Question: {self.question}\nAnswer: {prefix}So the answer is {self.answer}."


def _load() -> dict[str, tuple[Exemplar, ...]]:
    text = files("seakr_integrations").joinpath("data", "exemplars.json").read_text(encoding="utf-8")
    return {
        style: tuple(Exemplar(e["question"], tuple(e["steps"]), e["answer"]) for e in listed)
        for style, listed in json.loads(text).items()
    }


EXEMPLAR_SETS: dict[str, tuple[Exemplar, ...]] = _load()
"""Exemplar sets by question style; each holds 10 exemplars, the paper's number."""


def exemplars(style: str, n: int | None = None) -> tuple[Exemplar, ...]:
    """The first ``n`` exemplars (``None``: all), in their fixed order, of one question style: a key of
    ``EXEMPLAR_SETS`` (``"2wiki"``, ``"hotpotqa"``, ``"simple"``).

    Raises:
        ValueError: An unknown style (the message lists the known ones), or ``n`` below 0 or above the set size.
    """
    try:
        chosen = EXEMPLAR_SETS[style]
    except KeyError:
        known = ", ".join(repr(name) for name in EXEMPLAR_SETS)
        raise ValueError(f"unknown exemplar style {style!r}: use one of {known}") from None
    if n is None:
        return chosen
    if not 0 <= n <= len(chosen):
        raise ValueError(f"n must be between 0 and {len(chosen)} for style {style!r}, got {n}")
    return chosen[:n]
