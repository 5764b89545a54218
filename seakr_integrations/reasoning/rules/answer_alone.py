"""A final generation that is the answer alone is read as the answer, without asking for it again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from seakr_integrations.reasoning.answer import cut_answer, ends_answer
from seakr_integrations.reasoning.rules.base import Decision, Rule

BARE_ANSWER_WORDS = 4
"""The most words a final generation without "the answer is" may have to be read as the answer alone."""
BARE_SENTENCE_WORDS = 2
"""The most words when it ends with a period: longer, it is mostly a sentence ("250 million copies.", "Lola Montes
died first."), whose answer " So the answer is" reads better."""
_VERBS = frozenset("is are was were be been has have had does did do can could will would".split())
"""Words that make a short generation a sentence ("It is France"), not an answer alone."""


def bare_answer(text: str) -> str | None:
    """``text`` itself when it is an answer alone, not a sentence: one line of at most ``BARE_ANSWER_WORDS`` words
    (``BARE_SENTENCE_WORDS`` when it ends with a period, which is then dropped) without a verb such as "is" ("8",
    "Curly Lambeau", "August 25, 1963", "No."; cut at a comma as a stated answer is: "Paris, France" gives
    "Paris"); else ``None``."""
    line = text.strip()
    if not line or "\n" in line:
        return None
    most = BARE_SENTENCE_WORDS if line.endswith(".") else BARE_ANSWER_WORDS
    line = line[:-1].rstrip() if line.endswith(".") else line
    words = line.split()
    if not words or len(words) > most or ends_answer(line.replace(",", "")):
        return None
    if any(w.strip(",;:\"'").lower() in _VERBS for w in words):
        return None
    return cut_answer(line).strip().strip("\"'").strip() or None


@dataclass(frozen=True)
class AnswerAlone(Rule):
    """A final generation that states no "the answer is" but is the answer alone (one short line without a verb:
    "8", "Curly Lambeau") is read as the answer.  The paper appends " So the answer is" and asks again; a small model
    then often copies the last exemplar's answer: SmolLM2-135M with the light preset's four exemplars answered "no"
    to "How many legs does a spider have?" after writing "8".  In ``SeaKRConfig.light()``, not in the default: on
    Qwen2.5-Coder-0.5B it would change 7 of 1,252 final answers of the results page's runs and was never measured
    on lines free of it."""

    name: ClassVar[str] = "answer-alone"
    decision: ClassVar[Decision] = "how to answer"
    order: ClassVar[float] = 190

    def answer_of(self, generation: str) -> str | None:
        return bare_answer(generation)
