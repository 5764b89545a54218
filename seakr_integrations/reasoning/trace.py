"""The decision trace: what SeaKR saw and decided at every step, returned with the answer, so users can debug
retrieval and evaluation can read the uncertainties.  ``SeaKRResult`` reads and writes it as exact strict JSON
(``schema_version`` 2, the only version it reads; the form: ``docs/design/reasoning.md``) and prints it
(``format``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from seakr_integrations.reasoning.jsonform import (
    SCHEMA_VERSION,
    _numbers_from_json,
    _plain,
    check_trace,
    number_from_json,
    trace_version,
)
from seakr_integrations.reasoning.records import FinalTrace, StepTrace, StopReason, Strategy
from seakr_integrations.retrieval.passage import Passage
from seakr_integrations.stored import FieldError
from seakr_integrations.uncertainty.estimate import Uncertainty

__all__ = ["SeaKRResult", "readable_trace_version"]


def readable_trace_version(data: Any) -> int | None:
    """The ``schema_version`` of a trace's JSON form that this release reads, ``None`` when ``data`` is no SeaKR trace
    at all (e.g. the closed-book method's record): one reader, so a results file and a single trace are refused alike.

    Raises:
        ValueError: The trace is of version 1 (written before the version was recorded: its non-finite numbers
            ``null``, its candidates without their texts), which is no longer read, or of a version newer than this
            release reads, or its version is no version number; the message says which and what to do.
    """
    version = trace_version(data)
    if version is not None and version < SCHEMA_VERSION:
        unmarked = " (it has no schema_version: the form written before the version was recorded)"
        raise ValueError(
            f"this SeaKR trace is of schema_version {version}{unmarked if 'schema_version' not in data else ''}, "
            f"which this release of seakr-integrations no longer reads: it reads version {SCHEMA_VERSION} only. "
            f"Answer the questions again (`seakr eval` with the run's settings) to write version {SCHEMA_VERSION}"
        )
    return version


def _score(u: Uncertainty | None) -> str:
    if u is None:
        return "-"
    if u.value is None or math.isnan(u.value):
        return "n/a"
    return f"{u.value:.3f}" if u.is_finite else "inf"


@dataclass
class SeaKRResult:
    """The answer to one question and the full decision trace behind it.

    Attributes:
        question: The question asked.
        answer: The final answer (empty string if the model gave none).
        strategy: The final strategy that won.
        finals: Every final candidate, by strategy.
        steps: The loop's rounds in order.
        passages: The passages chosen, in order.
        stop_reason: Why the loop ended (a string is read as its ``StopReason``).
        notes: Other events worth knowing (passages dropped to fit the context, tolerated retrieval errors).
        lm_calls: Number of prompts this question asked for (identical prompts in one batch are generated once).
        generated_tokens: Tokens generated for this question's prompts: greedy continuations and all k samples.
        searches: Searches run (retrievals), failed ones included.
        config: The settings used.
        rules_applied: Each decision a rule changed (``{"rule", "round", "what"}``; ``round`` is 1-based, ``None``
            for the final answer): which rules made this answer.
    """

    question: str
    answer: str
    strategy: Strategy
    finals: dict[str, FinalTrace]
    steps: list[StepTrace]
    passages: list[Passage]
    stop_reason: StopReason
    notes: list[str] = field(default_factory=list)
    lm_calls: int = 0
    generated_tokens: int = 0
    searches: int = 0
    config: dict[str, Any] = field(default_factory=dict)
    rules_applied: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.stop_reason = StopReason(self.stop_reason)

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON-serialisable form of the whole trace with its ``schema_version`` (:meth:`from_dict` reads it)."""
        return _plain(
            {
                "schema_version": SCHEMA_VERSION,
                **vars(self),
                "finals": {k: v.to_dict() for k, v in self.finals.items()},
                "steps": [s.to_dict() for s in self.steps],
                "passages": [p.to_dict() for p in self.passages],
                "notes": list(self.notes),
            }
        )

    def to_json(self, **kwargs: Any) -> str:
        """``json.dumps`` of ``to_dict()`` (strict: no NaN/Infinity)."""
        return json.dumps(self.to_dict(), allow_nan=False, ensure_ascii=False, **kwargs)

    @classmethod
    def from_dict(cls, data: Any) -> SeaKRResult:
        """The trace that :meth:`to_dict` wrote (``schema_version`` 2).

        Raises:
            ValueError: ``data`` is not a SeaKR trace, is of version 1 (no longer read: answer the questions again),
                was written by a newer release (upgrade ``seakr-integrations`` to read it), or holds a value no trace
                can hold: a ``stored.FieldError`` whose message and ``path`` name the field (``stored_schemas.TRACE``,
                checked before anything is read).
        """
        version = readable_trace_version(data)
        if version is None:
            raise ValueError(
                "not a SeaKR trace: expected the mapping SeaKRResult.to_dict() writes (with 'schema_version', "
                f"'steps', 'finals' and 'config'), got {type(data).__name__}"
                + (f" with keys {sorted(data)[:8]}" if isinstance(data, dict) else "")
            )
        try:
            check_trace(data)
        except FieldError as err:
            raise FieldError(err.path, f"malformed SeaKR trace (schema_version {version}): {err}") from None
        try:
            passages = [
                Passage(str(p["id"]), p.get("title") or "", p.get("text") or "", number_from_json(p.get("score")))
                for p in data.get("passages") or []
            ]
            return cls(
                question=data["question"],
                answer=data.get("answer") or "",
                strategy=data["strategy"],
                finals={k: FinalTrace.from_dict({"strategy": k, **v}) for k, v in data["finals"].items()},
                steps=[StepTrace.from_dict(s) for s in data["steps"]],
                passages=passages,
                stop_reason=data["stop_reason"],
                notes=list(data.get("notes") or []),
                lm_calls=int(data.get("lm_calls", 0)),
                generated_tokens=int(data.get("generated_tokens", 0)),
                searches=int(data.get("searches", 0)),
                config=_numbers_from_json(dict(data.get("config") or {})),
                rules_applied=[dict(r) for r in data.get("rules_applied") or []],
            )
        except KeyError as err:
            raise ValueError(f"malformed SeaKR trace (schema_version {version}): the field {err} is missing") from None
        except (TypeError, AttributeError, ValueError) as err:
            raise ValueError(f"malformed SeaKR trace (schema_version {version}): {type(err).__name__}: {err}") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> SeaKRResult:
        """The trace that :meth:`to_json` wrote; a ``ValueError`` when ``text`` is not JSON, or not a trace this
        release can read (see :meth:`from_dict`)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"not a JSON SeaKR trace: {err}") from None
        return cls.from_dict(data)

    def format(self) -> str:
        """The trace as readable text (``seakr ask --trace``)."""
        lines = [f"Question: {self.question}"]
        for s in self.steps:
            lines.append(
                f"step {s.index + 1}: U={_score(s.uncertainty)} -> {s.decision}: {s.pseudo_generation.strip()!r}"
            )
            if s.query is not None:
                lines.append(
                    f"    query: {s.query!r}" + (f" (masked: {', '.join(s.masked_words)})" if s.masked_words else "")
                )
            for c in s.candidates:
                mark = "*" if c.chosen else " "
                lines.append(
                    f"   {mark}[{c.rank}] {c.passage.title or c.passage.id} ({c.passage.id}) U={_score(c.uncertainty)}"
                    + (" (empty generation)" if not c.generation.strip() and s.reason != "question_first" else "")
                    + f": {c.generation.strip()!r}"
                )
            if s.error:
                lines.append(f"    retrieval error: {s.error}")
            if s.decision == "retrieve" and s.accepted is not None:
                lines.append(f"    accepted: {s.accepted.strip()!r}")
            if s.stop:
                lines.append(f"    stop: {s.stop}")
        for name, f in self.finals.items():
            mark = "*" if name == self.strategy else " "
            forced = " (forced)" if f.forced else ""
            lines.append(f" {mark}final from {name}: U={_score(f.uncertainty)} answer={f.answer!r}{forced}")
        lines.extend(f"note: {n}" for n in self.notes)
        for r in self.rules_applied:
            where = "final answer" if r.get("round") is None else f"step {r['round']}"
            lines.append(f"rule: {r['rule']} ({where}: {r['what']})")
        lines.append(f"Answer: {self.answer}")
        return "\n".join(lines)
