"""What ``SeaKRChain`` takes and gives, as types (its input and output schemas) and as stream pieces.

A LangChain user reads a chain's contract from ``get_input_schema()`` / ``get_output_schema()`` (LangServe and
the playground do) and expects ``stream`` to yield pieces that add up to what ``invoke`` returns; both are defined
here, next to the parsing that enforces them, so the declared contract and the behaviour cannot drift apart.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables.utils import AddableDict
from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

__all__ = ["QUESTION_KEYS", "SeaKRQuestion", "SeaKRTraceOutput", "output_pieces", "question_of"]

QUESTION_KEYS = ("question", "input", "query")
"""The dict keys a question may come under: ``question``, and the names LangChain's own chains use."""


class SeaKRQuestion(BaseModel):
    """The dict form of ``SeaKRChain``'s input: the question under ``question`` (``input`` and ``query`` are
    accepted too, as LangChain's retrieval chains name it); other keys are ignored."""

    model_config = ConfigDict(extra="allow")

    question: str = Field(
        validation_alias=AliasChoices(*QUESTION_KEYS), description="The question to answer.", min_length=1
    )


class SeaKRTraceOutput(TypedDict):
    """``SeaKRChain``'s output with ``return_trace=True``."""

    answer: str
    """The answer (as ``invoke`` returns it without the trace)."""
    documents: list[Document]
    """The chosen passages as the retriever's own Documents, in the order they were chosen."""
    strategy: str
    """The final strategy that won (``"rationales"`` or ``"knowledge"``)."""
    trace: dict[str, Any]
    """The full decision trace as plain JSON."""


def question_of(value: Any) -> str:
    """The question in a chain input: a string, or a dict with a ``question``, ``input`` or ``query`` key.

    Raises:
        ValueError: No question, or an empty one.
    """
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=False)
    if isinstance(value, dict):
        key = next((k for k in QUESTION_KEYS if k in value), None)
        if key is None:
            raise ValueError(
                f"SeaKRChain got a dict without a question: give it a string, or a dict with one of the keys "
                f"{list(QUESTION_KEYS)} (got keys {sorted(value)})"
            )
        value = value[key]
    if not isinstance(value, str):
        raise ValueError(f"SeaKRChain takes the question as a string, got {type(value).__name__}")
    if not value.strip():
        raise ValueError("the question is empty: pass the question text")
    return value.strip()


def text_pieces(text: str) -> list[str]:
    """``text`` cut before each word (pieces join to exactly ``text``; one empty piece for an empty text)."""
    return re.findall(r"\s*\S+\s*$|\s*\S+", text) or [text]


def output_pieces(output: Any) -> list[Any]:
    """``invoke``'s output as stream chunks that add up to it: the answer word by word, and with the trace
    ``AddableDict`` chunks (``{"answer": piece}``..., then the documents, strategy and trace), as LangChain's own
    dict-valued chains stream."""
    if isinstance(output, str):
        return text_pieces(output)
    rest = {k: v for k, v in output.items() if k != "answer"}
    return [*(AddableDict(answer=p) for p in text_pieces(output["answer"])), AddableDict(rest)]
