"""The one check every file seakr reads back goes through: its JSON against the schema of its kind
(``stored_schemas``: delta profiles, the probe inside one, results headers, traces), when it is read.

A stored file outlives the code that wrote it, is edited by hand, cut short by a full disk or a kill: read unchecked,
a bad field surfaces later as a ``KeyError``, a numpy error or a wrong decision, far from the file.  Checked here, it
is refused at once with the file, the field, what it holds, what it must hold and what to do.

Framework-free on purpose: the core installs numpy, tqdm and httpx only (pydantic comes with the server and the
adapters), and the messages must say what to do about each kind of file, so a schema is plain data
(:class:`Schema`, :class:`Field`) and :func:`check` walks the JSON against it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["Field", "FieldError", "Schema", "StoredFileError", "check", "read_json", "shown"]

Kind = Literal["text", "int", "number", "trace_number", "bool", "object", "list", "id", "any"]
"""What a field holds: ``number`` is a finite real; ``trace_number`` a trace's number (any real, or ``"inf"``,
``"-inf"``, ``"nan"``, the strict-JSON spellings); ``id`` a string or an integer (a question's or passage's id)."""

TRACE_NUMBERS = ("inf", "-inf", "nan")


class FieldError(ValueError):
    """One field of stored data that its schema refuses.

    Attributes:
        path: The field, as a path from the top of the data (``probe.threshold``, ``steps[2].index``; ``""``: the
            whole of it).
    """

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(message)

    @classmethod
    def wrong(cls, path: str, value: Any, what: str) -> FieldError:
        where = f"field {path}" if path else "it"
        return cls(path, f"{where} holds {shown(value)}: it must be {what}")

    @classmethod
    def missing(cls, path: str, what: str) -> FieldError:
        return cls(path, f"the field '{path}' is missing: it must hold {what}")


class StoredFileError(ValueError):
    """A stored file that is not what its kind must hold (``kind``; ``""``: one of an older or newer format, which
    ``detail`` says): the message names the file, the field and what to do.

    Attributes:
        source: The file (or what the data came from, e.g. ``"profile smollm2...__k20"``).
        field: The field refused (``""`` when the file as a whole is: not JSON, cut short).
    """

    def __init__(self, source: str | Path, kind: str, detail: str, remedy: str, field: str = "") -> None:
        self.source, self.field = str(source), field
        super().__init__(f"{source}: {f'not a valid {kind}: ' if kind else ''}{detail}; {remedy}")

    @classmethod
    def of(cls, source: str | Path, kind: str, error: FieldError, remedy: str) -> StoredFileError:
        return cls(source, kind, str(error), remedy, error.path)


@dataclass(frozen=True)
class Field:
    """What one field holds.

    Attributes:
        kind: Its JSON type (:data:`Kind`).
        what: What it must hold, in words, for the message (``"a probability in [0, 1]"``).
        required: Whether it must be present.
        null: Whether ``null`` is allowed.
        low, high: The range of a number (inclusive).
        choices: The values allowed (empty: any of its kind).
        each: The schema of each item of a list, or of each value of an object used as a map.
        schema: The fields of an object.
        empty: An empty object or list means "none" and is allowed whatever ``schema`` requires.
    """

    kind: Kind
    what: str
    required: bool = False
    null: bool = False
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()
    each: Field | None = None
    schema: Schema | None = None
    empty: bool = False


@dataclass(frozen=True)
class Schema:
    """The fields of one kind of object.

    Attributes:
        name: The kind in words (``"delta profile"``).
        fields: Each field the kind knows, by name.
        closed: Refuse a field not in ``fields`` (it would be ignored: a file of another version, or a typo).
        also: Checks across fields (``mean`` and ``weights`` of one length), each given the object and its path and
            raising :class:`FieldError`.
    """

    name: str
    fields: Mapping[str, Field]
    closed: bool = False
    also: tuple[Callable[[Mapping[str, Any], str], None], ...] = field(default=())


def shown(value: Any) -> str:
    """A wrong value, in words: NaN and the infinities by name, others by type and a short repr."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if value is None:
        return "null"
    return f"{type(value).__name__} {value!r:.40}"


def join(path: str, name: str | int) -> str:
    """The path of a field inside ``path``: ``probe.threshold``, ``steps[2]``."""
    if isinstance(name, int):
        return f"{path}[{name}]"
    return f"{path}.{name}" if path else name


def _real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _of_kind(value: Any, kind: Kind) -> bool:
    if kind == "text":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return _real(value) and math.isfinite(value)
    if kind == "trace_number":
        return _real(value) or value in TRACE_NUMBERS
    if kind == "id":
        return isinstance(value, (str, int)) and not isinstance(value, bool)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list)
    return True


def check_value(value: Any, spec: Field, path: str) -> None:
    """Refuse (:class:`FieldError`) ``value`` unless it is what ``spec`` says."""
    if value is None:
        if spec.null:
            return
        raise FieldError.wrong(path, value, spec.what)
    if not _of_kind(value, spec.kind) or (spec.choices and value not in spec.choices):
        raise FieldError.wrong(path, value, spec.what)
    if spec.kind in ("int", "number") and (
        (spec.low is not None and value < spec.low) or (spec.high is not None and value > spec.high)
    ):
        raise FieldError.wrong(path, value, spec.what)
    if spec.empty and not value:
        return
    if spec.kind == "list" and spec.each is not None:
        for i, item in enumerate(value):
            check_value(item, spec.each, join(path, i))
    elif spec.kind == "object" and spec.schema is not None:
        check(value, spec.schema, path)
    elif spec.kind == "object" and spec.each is not None:
        for name, item in value.items():
            check_value(item, spec.each, join(path, str(name)))


def check(data: Any, schema: Schema, path: str = "") -> None:
    """Refuse (:class:`FieldError`, naming the first bad field by its path) ``data`` unless it is an object with the
    fields ``schema`` describes."""
    if not isinstance(data, dict):
        raise FieldError.wrong(path, data, f"a JSON object (a {schema.name})")
    for name, spec in schema.fields.items():
        where = join(path, name)
        if name not in data:
            if spec.required:
                raise FieldError.missing(where, spec.what)
            continue
        check_value(data[name], spec, where)
    if schema.closed:
        unknown = [name for name in data if name not in schema.fields]
        if unknown:
            raise FieldError(
                join(path, str(unknown[0])),
                f"the field '{join(path, str(unknown[0]))}' is not one a {schema.name} holds (it holds "
                f"{', '.join(schema.fields)}): written by another version of seakr, or edited",
            )
    for extra in schema.also:
        extra(data, path)


def read_json(path: Path, kind: str, remedy: str) -> Any:
    """The JSON in ``path``; a :class:`StoredFileError` naming it when it cannot be read or is not JSON (cut short by
    a crash or a full disk, or edited)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise StoredFileError(path, kind, f"it cannot be read ({err})", remedy) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        cut = " (it ends early: cut short?)" if text.strip()[-1:] not in ("}", "]") else ""
        raise StoredFileError(path, kind, f"it is not JSON{cut}: {err}", remedy) from None
