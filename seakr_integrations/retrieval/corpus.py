"""Reading and validating passage corpora: JSONL files (optionally gzip-compressed) of one ``{"id": ..., "title": ...,
"text": ...}`` object per line, and in-memory iterables; every problem names the file, the 1-based line and what to
change."""

from __future__ import annotations

import codecs
import gzip
import json
import os
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sized
from pathlib import Path

from seakr_integrations.retrieval.passage import Passage

CorpusSource = str | os.PathLike[str] | Iterable[Mapping[str, object] | Passage]
"""What indexers accept: the path of a JSONL(.gz) corpus, or an iterable of dicts / :class:`Passage` objects."""

_EXAMPLE = '{"id": "p1", "title": "Paris", "text": "Paris is the capital of France."}'
_GZIP_MAGIC = b"\x1f\x8b"


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def validate_passage(obj: object, where: str) -> Passage:
    """Check one corpus record and turn it into a :class:`Passage`: ``id`` a non-empty string or an integer (made
    its decimal string), ``text`` a non-empty string, ``title`` optional (missing or null: ``""``), other keys ignored.

    Args:
        obj: A mapping with ``id``, ``text`` and optionally ``title`` keys, or a :class:`Passage` (returned as it is).
        where: Where the record came from, at the start of error messages (e.g. ``"corpus.jsonl, line 7"``).

    Raises:
        ValueError: The record is not a mapping, or a field is missing, empty or of the wrong type.
    """
    pid, title, text = _record(obj, where)
    return obj if isinstance(obj, Passage) and pid == obj.id else Passage(pid, title, text)


def _record(obj: object, where: str) -> tuple[str, str, str]:
    """``(id, title, text)`` of a valid record: the indexers' form, cheaper than a ``Passage`` (docs/design/core.md)."""
    if isinstance(obj, Passage):
        pid, title, text = obj.id, obj.title, obj.text
    elif isinstance(obj, Mapping):
        try:
            pid, title, text = obj["id"], obj.get("title"), obj["text"]
        except KeyError as err:
            what = "a unique id" if err.args[0] == "id" else "its text"
            raise ValueError(
                f"{where}: {json.dumps(err.args[0])} is missing; every passage needs {what}, e.g. {_EXAMPLE}"
            ) from None
        if title is None:
            title = ""
    else:
        raise ValueError(
            f'{where}: expected a JSON object (a dict) with "id", "title" and "text", got {_kind(obj)}; '
            f"write each passage as e.g. {_EXAMPLE}"
        )
    if type(pid) is not str:
        if isinstance(pid, int) and not isinstance(pid, bool):
            pid = str(pid)
        elif not isinstance(pid, str):
            raise ValueError(f'{where}: "id" must be a string (or an integer), got {_kind(pid)} {pid!r}')
    if not pid.strip():
        raise ValueError(f'{where}: "id" is empty; give the passage a non-empty unique id')
    if not isinstance(text, str):
        raise ValueError(f'{where}: "text" must be a string, got {_kind(text)}')
    if not text.strip():
        raise ValueError(f'{where}: "text" of passage {pid!r} is empty; remove the passage or fill in its text')
    if not isinstance(title, str):
        raise ValueError(f'{where}: "title" must be a string (or be left out), got {_kind(title)}')
    return pid, title, text


def _numbered_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """The file's lines with 1-based numbers, gunzipped when the content (not the name) starts with gzip's magic."""
    with open(path, "rb") as raw:
        compressed = raw.read(2) == _GZIP_MAGIC
        raw.seek(0)
        lines: Iterable[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        lineno = 0
        try:
            for lineno, line in enumerate(lines, 1):
                yield lineno, line
        except (OSError, EOFError, zlib.error) as err:
            if not compressed:
                raise
            raise ValueError(
                f"{path}: the gzip data is corrupt or truncated after line {lineno} ({err}); "
                "re-create or re-download the file"
            ) from err


def read_corpus(path: str | os.PathLike[str]) -> Iterator[Passage]:
    """Stream the passages of a JSONL corpus (plain or gzip-compressed), validating each line; blank lines and a
    UTF-8 byte-order mark are skipped, a repeated id is an error (only the ids seen so far are held in memory).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: A line is not valid UTF-8 JSON or not a valid record, repeats an id, or the gzip data is corrupt
            (the message names the file and the 1-based line).
    """
    yield from iter_passages(Path(path))


def _parsed_lines(path: Path) -> Iterator[tuple[int, str, object]]:
    for lineno, raw in _numbered_lines(path):
        if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        if raw.isspace():
            continue
        where = f"{path}, line {lineno}"
        try:
            obj = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as err:
            raise ValueError(
                f"{where}: not valid UTF-8 (byte {err.start + 1}); save the corpus as UTF-8 JSON Lines"
            ) from None
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{where}: invalid JSON ({err.msg} at column {err.colno}); each line must be one complete JSON "
                f"object such as {_EXAMPLE}"
            ) from None
        yield lineno, where, obj


def iter_passages(documents: CorpusSource) -> Iterator[Passage]:
    """Validated passages with unique ids from a corpus path or an iterable of records: a list gets a file's checks
    and messages (``"item 17"`` for a line number).

    Raises:
        TypeError: (at the call) ``documents`` is a single dict, Passage or bytes.
        ValueError: (while iterating) A record is invalid or repeats an id.
    """
    return (Passage(pid, title, text) for pid, title, text in _iter_records(documents))


def _iter_records(documents: CorpusSource) -> Iterator[tuple[str, str, str]]:
    if isinstance(documents, (str, os.PathLike)):
        return _unique_records(_parsed_lines(Path(documents)), "on line")
    if isinstance(documents, (bytes, bytearray, Mapping, Passage)) or not isinstance(documents, Iterable):
        raise TypeError(
            f"documents must be a corpus path or an iterable of passages, got {type(documents).__name__}; "
            "pass the path of a JSONL corpus, or wrap a single passage in a list"
        )
    return _unique_records(_numbered_items(documents), "by item")


def _numbered_items(documents: Iterable[object]) -> Iterator[tuple[int, str, object]]:
    """The records of an iterable, numbered; a generator, so that the iterable is opened on the first ``next``."""
    for n, obj in enumerate(documents, 1):
        yield n, f"item {n}", obj


def _indexer_input(documents: CorpusSource) -> tuple[Iterator[tuple[str, str, str]], str, str, int | None]:
    """An indexer's ``(records, source, name, total)``: the type is checked and a corpus file looked for now, before
    anything touches the disk or a cluster; ``source`` is the absolute path or ``<type>``, ``name`` its short form for
    a progress bar, ``total`` the number of records when known."""
    records = _iter_records(documents)
    if not isinstance(documents, (str, os.PathLike)):
        source = f"<{type(documents).__name__}>"
        return records, source, source, len(documents) if isinstance(documents, Sized) else None
    if not Path(documents).is_file():
        raise FileNotFoundError(f"corpus {os.fspath(documents)} does not exist (expected a JSONL file)")
    path = Path(documents).resolve()
    return records, str(path), path.name, None


def _unique_records(items: Iterable[tuple[int, str, object]], earlier: str) -> Iterator[tuple[str, str, str]]:
    """The valid records of ``(position, where, record)`` items, refusing a repeated id."""
    seen: dict[str, int] = {}
    for position, where, obj in items:
        record = _record(obj, where)
        first = seen.setdefault(record[0], position)
        if first != position:
            raise ValueError(
                f"{where}: id {record[0]!r} was already used {earlier} {first}; ids must be unique, so remove the "
                "duplicate or rename one of them"
            )
        yield record
