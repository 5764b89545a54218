"""Results files: one JSON line per answered question, appended as it finishes, so an interrupted run resumes.

A crash, a kill or a full disk must not cost the questions already answered, and resuming must not mix two set-ups
in one file: a header fingerprints the configuration and each line is fsync'ed (the rules: docs/design/core.md).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from seakr_integrations.stored import FieldError, StoredFileError, check
from seakr_integrations.stored_schemas import RESULTS_FORMAT, RESULTS_HEADER

FORMAT = RESULTS_FORMAT
KIND = "seakr results file"
EDITED = "the file was edited or corrupted: repair or move that line, or write the run to a new file"


def config_fingerprint(config: Mapping[str, Any]) -> str:
    """A short stable hash of a JSON-able configuration (key order does not matter)."""
    text = json.dumps(config, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _differences(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, "<missing>"), new.get(key, "<missing>")
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: file has {a!r}, this run has {b!r}")
    return out


def _load(path: Path, data: bytes | None = None) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """(header, results, bytes of a cut-short last line) of an existing file (or of its ``data`` when given); raises
    on anything else wrong."""
    data = path.read_bytes() if data is None else data
    cut = 0
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        cut, data = len(data) - keep, data[:keep]
    lines = data.splitlines()
    if not lines:
        raise ValueError(f"{path}: empty results file (no header); delete it to start the run afresh")
    records = []
    for lineno, raw in enumerate(lines, 1):
        try:
            records.append(json.loads(raw))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}, line {lineno}: not a JSON record ({err.msg}); {EDITED}") from None
    header = _checked_header(path, records[0])
    for lineno, record in enumerate(records[1:], 2):
        _check_record(path, lineno, record)
    return header, records[1:], cut


def _checked_header(path: Path, header: Any) -> dict[str, Any]:
    """The first line if it is a results header of this release's format (``stored_schemas.RESULTS_HEADER``),
    else a ``ValueError`` that names the file, the field and what to do."""
    stated = header.get("format") if isinstance(header, dict) else None
    if not isinstance(stated, str) or not stated.startswith(FORMAT.split("/")[0] + "/"):
        raise ValueError(f"{path}: not a seakr results file (the first line is not a {FORMAT} header)")
    if stated != FORMAT:
        raise StoredFileError(
            path,
            KIND,
            f"its header (line 1) says format {stated!r}, and this release reads {FORMAT!r}",
            "read it with the release of seakr-integrations that wrote it (upgrade for a newer format)",
            "format",
        )
    try:
        check(header, RESULTS_HEADER)
    except FieldError as err:
        raise StoredFileError.of(path, KIND, FieldError(err.path, f"line 1 (the header): {err}"), EDITED) from None
    return header


def _check_record(path: Path, lineno: int, record: Any) -> None:
    """Refuse a result line that is not an object, or whose decision trace is malformed (``stored_schemas.TRACE``) or
    of a version this release does not read: read back later (``read_traces``, a report, a notebook), it would fail
    far from the file."""
    from seakr_integrations.reasoning.jsonform import check_trace
    from seakr_integrations.reasoning.trace import readable_trace_version

    if not isinstance(record, dict):
        raise StoredFileError(f"{path}, line {lineno}", "result record", f"it holds {type(record).__name__}, not a "
                              "JSON object", EDITED)  # fmt: skip
    where, trace = f"{path}, question {record.get('id')!r}", record.get("trace")
    try:
        version = readable_trace_version(trace)
    except ValueError as err:  # a schema_version this release does not read: the message says what to do
        raise ValueError(f"{where}: line {lineno}: {err}") from None
    if version is not None:
        try:
            check_trace(trace)
        except FieldError as err:
            detail = f"line {lineno}, its trace (schema_version {version}): {err}"
            raise StoredFileError(where, "result record", detail, EDITED, f"trace.{err.path}") from None


@dataclass
class ResultsFile:
    """An append-only results file for one configuration: :meth:`open`, then :meth:`append` each finished question.

    Attributes:
        config: The configuration of the run that writes it.
        done: Ids of the questions answered (a failed one's id is in ``failed`` instead, so a rerun answers it again).
        failed: Ids of the questions whose row in the file is a failure (it has an ``error``).
        records: Every result record in the file, resumed ones first, in file order (failed rows included).
        cut_short: Bytes of an incomplete last line removed when the file was opened (0 normally).
    """

    path: Path
    config: dict[str, Any]
    done: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    records: list[dict[str, Any]] = field(default_factory=list)
    cut_short: int = 0
    _handle: IO[str] | None = field(default=None, repr=False)

    @classmethod
    def open(cls, path: str | os.PathLike[str], config: Mapping[str, Any], *, resume: bool = True) -> ResultsFile:
        """Create ``path`` with a header, or reopen it to resume.

        Args:
            path: The results file (its directory is created).
            config: Everything that determines the results (method, model, dataset, seeds...), JSON-able.
            resume: Continue a file with the same configuration; ``False`` refuses an existing file.

        Raises:
            FileExistsError: The file exists and ``resume`` is false.
            ValueError: The file holds another configuration (the differing settings are named), is not a results
                file, or has a corrupt line.
        """
        path = Path(path)
        config = json.loads(json.dumps(dict(config), allow_nan=False))  # JSON-able, and compared as stored
        fingerprint = config_fingerprint(config)
        results = cls(path, config)
        if path.exists() and path.stat().st_size > 0:
            if not resume:
                raise FileExistsError(f"{path} exists; resume into it, or choose another output file")
            header, records, results.cut_short = _load(path)
            stored = header.get("config")
            stored = stored if isinstance(stored, Mapping) else {}
            if header.get("fingerprint") != fingerprint and config_fingerprint(stored) != fingerprint:
                diff = _differences(stored, config) or ["(the configuration hash differs)"]
                raise ValueError(
                    f"{path} holds results of a different configuration, so this run will not resume into it: "
                    + "; ".join(diff)
                    + ". Write to a new file (or delete this one to start over)."
                )
            if results.cut_short:
                with open(path, "r+b") as f:
                    f.truncate(path.stat().st_size - results.cut_short)
            results.records = [r for r in records if isinstance(r, dict) and "id" in r]
            results.failed = {str(r["id"]) for r in results.records if r.get("error")}
            results.done = {str(r["id"]) for r in results.records} - results.failed
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            header = {"format": FORMAT, "fingerprint": fingerprint, "config": config}
            with open(path, "w", encoding="utf-8") as f:
                f.write(json.dumps(header, ensure_ascii=False) + "\n")
                f.flush()
                os.fsync(f.fileno())
        results._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        return results

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one question's result (must hold its ``id``) durably before returning; the result of a question
        whose row is a failure replaces that row (so the file holds each question once)."""
        if self._handle is None:
            raise ValueError(f"{self.path} is closed")
        qid = str(record["id"])
        self._follow_replacement()
        if qid in self.done:
            raise ValueError(f"{self.path} already holds a result for question {qid!r}")
        line = json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"
        if qid in self.failed:
            self._replace_failed(qid, line)
            self.records = [r for r in self.records if str(r["id"]) != qid]
        else:
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())
        self.failed.discard(qid)
        (self.failed if record.get("error") else self.done).add(qid)
        self.records.append(dict(record))

    def _replace_failed(self, qid: str, line: str) -> None:
        """Drop question ``qid``'s failed row and add ``line`` at the end, atomically (temporary file, rename)."""
        assert self._handle is not None
        kept = []
        for raw in self.path.read_bytes().splitlines(keepends=True):
            try:
                row = json.loads(raw)
            except json.JSONDecodeError:
                row = None
            if isinstance(row, dict) and str(row.get("id")) == qid and "format" not in row:
                continue  # its failed row: the new line goes at the end, with the newest results
            kept.append(raw)
        temporary = self.path.with_name(self.path.name + ".tmp")
        with open(temporary, "wb") as f:
            f.writelines(kept)
            f.write(line.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename itself survives a power cut
        finally:
            os.close(directory)
        self._handle.close()
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def _follow_replacement(self) -> None:
        """Reopen the file if something replaced or deleted it since it was opened, writing back what it lacks."""
        assert self._handle is not None
        held = os.fstat(self._handle.fileno())
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
            return
        self._handle.close()
        self._handle = None
        reopened = ResultsFile.open(self.path, self.config)  # refuses a file of another configuration
        missing = [
            r
            for r in self.records
            if str(r["id"]) not in reopened.done | reopened.failed
            or (not r.get("error") and str(r["id"]) in reopened.failed)
        ]
        for record in missing:
            reopened.append(record)
        self.failed = reopened.failed
        self.done, self.records, self._handle = reopened.done, reopened.records, reopened._handle
        warnings.warn(
            f"{self.path} was {'deleted' if now is None else 'replaced by another file'} while this run wrote to it "
            f"(git stash or checkout, an editor, a sync tool?); it was reopened and the {len(missing)} result(s) it "
            "lacked were written back. Leave results files alone while a run writes them.",
            RuntimeWarning,
            stacklevel=3,
        )

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def finished_results(path: str | os.PathLike[str]) -> Path:
    """``path``, or ``path.gz`` when only the compressed copy of a finished run exists."""
    path = Path(path)
    packed = path.with_name(path.name + ".gz")
    return packed if not path.exists() and packed.exists() else path


def read_results(path: str | os.PathLike[str]) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """The header's configuration and the result records of a results file (a cut-short last line is ignored).

    A finished file kept compressed (``FILE.jsonl.gz``, as ``runs/`` keeps them) reads the same."""
    path = Path(path)
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else None
    header, records, _ = _load(path, data)
    return header["config"], iter(records)


def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The header's configuration of a results file (plain or ``.gz``), checked, reading its first line only."""
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        first = f.readline()
    try:
        header = json.loads(first)
    except json.JSONDecodeError:
        header = None
    return _checked_header(path, header)["config"]


OLDER = (
    "its results still read (read_results, seakr report), but no SeaKRConfig of this release runs what it ran: to run "
    "that set-up again, run seakr eval with today's settings (--rules paper is the authors' SeaKR; CHANGELOG.md says "
    "what replaced each removed setting)"
)


def run_settings(path: str | os.PathLike[str]) -> Any:
    """The ``SeaKRConfig`` a results file's run used, rebuilt from its header (``config.seakr``), or ``None`` for a
    method without SeaKR settings.  A header written before the decision rules were objects (no ``rules``: what ran
    was other settings, and reading it as today's default rules would be wrong) or by another release is refused
    with a ``StoredFileError`` naming the file, the field and what to do, not a keyword error about a setting.
    """
    from seakr_integrations.reasoning.config import SeaKRConfig

    path = Path(path)
    seakr = read_header(path).get("seakr")
    if seakr is None:
        return None
    unknown = [name for name in seakr if name not in _setting_names()]
    if "rules" not in seakr:
        removed = f" {', '.join(unknown)} (settings SeaKRConfig no longer takes) and" if unknown else ""
        detail = (
            f"its header predates the rules API (SeaKRConfig(rules=...)): field config.seakr holds{removed} no 'rules'"
        )
        raise StoredFileError(path, "", detail, OLDER, "config.seakr.rules")
    if unknown:
        detail = f"its header's field config.seakr.{unknown[0]} is no setting of this release's SeaKRConfig"
        raise StoredFileError(
            path, "", detail + " (written by another release of seakr?)", OLDER, f"config.seakr.{unknown[0]}"
        )
    try:
        return SeaKRConfig(**seakr)
    except (TypeError, ValueError) as err:
        name = next((n for n in seakr if not _accepted(SeaKRConfig, n, seakr[n])), "")
        where = f"config.seakr.{name}" if name else "config.seakr"
        raise StoredFileError(path, KIND, f"line 1 (the header): field {where}: {err}", EDITED, where) from None


def _setting_names() -> set[str]:
    from dataclasses import fields

    from seakr_integrations.reasoning.config import SAMPLING_SETTINGS, SeaKRConfig

    return {f.name for f in fields(SeaKRConfig)} | set(SAMPLING_SETTINGS)


def _accepted(cls: Any, name: str, value: Any) -> bool:
    try:
        cls(**{name: value})
    except (TypeError, ValueError):
        return False
    return True


def read_traces(path: str | os.PathLike[str]) -> Iterator[tuple[str, Any]]:
    """Each result's id and its decision trace as a ``SeaKRResult`` (records without a SeaKR trace are skipped),
    every trace checked when the file is read (``read_results``)."""
    from seakr_integrations.reasoning.trace import SeaKRResult, readable_trace_version

    path = Path(path)
    for record in read_results(path)[1]:
        if readable_trace_version(record.get("trace")) is None:
            continue
        try:
            yield str(record.get("id")), SeaKRResult.from_dict(record["trace"])
        except ValueError as err:
            raise ValueError(f"{path}, question {record.get('id')!r}: {err}; {EDITED}") from None
