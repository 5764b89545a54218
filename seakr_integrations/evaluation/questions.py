"""Question files: the JSONL format of the shared HotpotQA / 2WikiMultihopQA / NQ-open subsets, read and checked.

Users bring their own files, so every problem names the file, the 1-based line and what to change, and a bad line
is never dropped silently (the format: docs/design/core.md and docs/usage.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from seakr_integrations.retrieval.corpus import _numbered_lines

QUESTION_EXAMPLE = '{"id": "q1", "question": "Which country is the Eiffel Tower in?", "answers": ["France"]}'


@dataclass(frozen=True, slots=True)
class Question:
    """One labelled question.

    Attributes:
        id: Unique within its file (results are keyed by it, so a resumed run knows what is done).
        question: The question text.
        answers: Gold answers; a prediction is scored against each and the best score counts (SPEC section 8).
        type: The dataset's question type (``"bridge"``, ``"comparison"``, ...), ``""`` when not given.
        supporting_titles: Titles of the gold paragraphs, when the dataset has them.
    """

    id: str
    question: str
    answers: tuple[str, ...]
    type: str = ""
    supporting_titles: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The record in the file format (without ``context``)."""
        return {**asdict(self), "answers": list(self.answers), "supporting_titles": list(self.supporting_titles)}


@dataclass(frozen=True)
class QuestionFile:
    """What :func:`read_questions` read: the valid questions and, with ``skip_bad``, the lines it left out.

    Attributes:
        questions: Valid questions in file order.
        skipped: One message per bad line skipped (file, line number, problem); empty unless ``skip_bad=True``.
    """

    path: Path
    questions: list[Question]
    skipped: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.questions)


def read_questions(path: str | os.PathLike[str], *, skip_bad: bool = False, limit: int | None = None) -> QuestionFile:
    """Read and check a question file (JSONL, optionally gzip-compressed; blank lines are ignored).

    Args:
        skip_bad: Leave out bad lines, counted in :attr:`QuestionFile.skipped` (a repeated id is always an error).
        limit: Stop after this many valid questions (``None``: all).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: A bad line (unless ``skip_bad``), a repeated id, or no valid question; the message names the
            file and line.
    """
    path = Path(path)
    if limit is not None and limit < 1:
        raise ValueError(f"limit={limit}: must be >= 1 (or None for the whole file)")
    questions: list[Question] = []
    skipped: list[str] = []
    seen: dict[str, int] = {}
    for lineno, raw in _numbered_lines(path):
        if not raw.strip() or raw.strip() == b"\xef\xbb\xbf":
            continue
        where = f"{path}, line {lineno}"
        try:
            question = _parse(raw, where)
        except ValueError as err:
            if not skip_bad:
                raise ValueError(f"{err} (or pass skip_bad / --skip-bad to skip and count bad lines)") from None
            skipped.append(str(err))
            continue
        first = seen.setdefault(question.id, lineno)
        if first != lineno:
            raise ValueError(f"{where}: id {question.id!r} was already used on line {first}; ids must be unique")
        questions.append(question)
        if limit is not None and len(questions) >= limit:
            break
    if not questions:
        raise ValueError(f"{path}: no valid question in the file; each line must look like {QUESTION_EXAMPLE}")
    return QuestionFile(path, questions, skipped)


def _parse(raw: bytes, where: str) -> Question:
    try:
        obj = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{where}: not valid UTF-8 (byte {err.start + 1}); save the file as UTF-8") from None
    except json.JSONDecodeError as err:
        raise ValueError(
            f"{where}: invalid JSON ({err.msg} at column {err.colno}); each line must be one JSON object such as "
            f"{QUESTION_EXAMPLE}"
        ) from None
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a JSON object such as {QUESTION_EXAMPLE}, got {type(obj).__name__}")
    qid = obj.get("id")
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    if not isinstance(qid, str) or not qid.strip():
        raise ValueError(f'{where}: "id" must be a non-empty string (or an integer), got {qid!r}')
    text = obj.get("question")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f'{where}: "question" must be a non-empty string, got {text!r}')
    answers = obj.get("answers")
    if isinstance(answers, str):
        raise ValueError(f'{where}: "answers" must be a list of strings; write ["{answers}"], not "{answers}"')
    if not _strings(answers) or not answers or not all(a.strip() for a in answers):
        raise ValueError(f'{where}: "answers" must be a non-empty list of non-empty strings, got {answers!r}')
    qtype = obj.get("type") or ""
    titles = obj.get("supporting_titles") or []
    if not isinstance(qtype, str):
        raise ValueError(f'{where}: "type" must be a string (or be left out), got {qtype!r}')
    if not _strings(titles):
        raise ValueError(f'{where}: "supporting_titles" must be a list of strings (or be left out), got {titles!r}')
    return Question(qid, text.strip(), tuple(answers), qtype, tuple(titles))


def _strings(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str) and all(isinstance(v, str) for v in value)
