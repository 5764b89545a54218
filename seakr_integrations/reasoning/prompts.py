"""SeaKR's prompt text (SPEC section 7), in one place so every call of the loop is built the same way.

Periods are removed from the question and inside earlier steps (the calls stop at ``". "``), and each earlier step is
closed with one period; ``Answer:`` opens the assistant turn of a chat template (why: ``docs/design/reasoning.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from seakr_integrations.reasoning.exemplars import Exemplar

_INSTRUCTION = "Answer in the same format as before. \nQuestion: "
_ANSWER = "Answer:"


def strip_periods(text: str) -> str:
    """``text`` without periods (SPEC section 4)."""
    return text.replace(".", "")


class PromptBuilder:
    """Renders ``exemplars + context + question + steps`` and, when asked, wraps it in a chat template: the
    exemplars, context and question form the user turn; ``Answer:`` and the steps so far start the assistant turn,
    so the model continues its own answer."""

    def __init__(self, exemplars: Sequence[Exemplar], chat: Callable[[str], str] | None = None) -> None:
        self.demos = "\n\n".join(e.render() for e in exemplars)
        self.chat = chat

    def __call__(self, question: str, steps: Sequence[str] = (), passages: Sequence[str] = ()) -> str:
        """The prompt of one call: the model continues after the ``steps``; ``passages`` are shown as
        ``Context: [1] ...``, oldest first."""
        head = self.demos + "\n\n" if self.demos else ""
        if passages:
            head += "Context: " + "".join(f"[{i}] {p.strip()}\n" for i, p in enumerate(passages, 1))
        head += _INSTRUCTION + strip_periods(question.strip()) + "\n"
        continuation = " ".join(strip_periods(s).strip() + "." for s in steps if strip_periods(s).strip())
        if self.chat is None:
            return head + _ANSWER + " " + continuation
        return self.chat(head.rstrip("\n")) + _ANSWER + (" " + continuation if continuation else "")
