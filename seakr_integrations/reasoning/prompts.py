"""SeaKR's prompt text (SPEC section 7), in one place so every call of the loop is built the same way.

With a chat template the exemplars, context and question form the user turn, and the assistant turn opens with
``Answer:``.  Left in the user turn, that ``Answer:`` makes an instruct model start its turn afresh: measured with
Qwen2.5-Coder-0.5B-Instruct, it wrote a new ``Question: ...`` (a copied exemplar or the question again) as its first
step on 8 of 20 HotpotQA and 15 of 20 2Wiki questions, and none with ``Answer:`` opening its turn
(``docs/archive/results_prompt_notes.md``).

Periods are removed from the question and from inside earlier steps because the reasoning calls stop at ``". "``; a
period inside an abbreviation in the prompt would otherwise teach the model to stop mid-sentence.  Each earlier step is
then closed with one period, as the sentences of the exemplars are: a step is generated up to (not including) its ``".
"``, and without the period the model's next token would be that period, which ends the next call with an empty step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from seakr_integrations.reasoning.exemplars import Exemplar

__all__ = ["PromptBuilder", "strip_periods"]

_INSTRUCTION = "Answer in the same format as before. \nQuestion: "
_ANSWER = "Answer:"


def strip_periods(text: str) -> str:
    """``text`` without periods (SPEC section 4)."""
    return text.replace(".", "")


def _sentence(step: str) -> str:
    return strip_periods(step).strip() + "."


class PromptBuilder:
    """Renders ``exemplars + context + question + steps`` and, when asked, wraps it in a chat template.

    With a chat template the exemplars, context and question form the user turn; ``Answer:`` and the steps so far
    start the assistant turn, so the model continues its own answer.
    """

    def __init__(self, exemplars: Sequence[Exemplar], chat: Callable[[str], str] | None = None) -> None:
        self.demos = "\n\n".join(e.render() for e in exemplars)
        self.chat = chat

    def __call__(self, question: str, steps: Sequence[str] = (), passages: Sequence[str] = ()) -> str:
        """The prompt of one call.

        Args:
            question: The question (periods are removed here).
            steps: Reasoning steps so far (periods removed here); the model continues after them.
            passages: Texts shown as ``Context: [1] ...``, oldest first.
        """
        head = self.demos + "\n\n" if self.demos else ""
        if passages:
            head += "Context: " + "".join(f"[{i}] {p.strip()}\n" for i, p in enumerate(passages, 1))
        head += _INSTRUCTION + strip_periods(question.strip()) + "\n"
        continuation = " ".join(_sentence(s) for s in steps if strip_periods(s).strip())
        if self.chat is None:
            return head + _ANSWER + " " + continuation
        return self.chat(head.rstrip("\n")) + _ANSWER + (" " + continuation if continuation else "")
