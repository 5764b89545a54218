"""Results files read back for reporting: one ``MethodRun`` per file, its traces in this release's form."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from seakr_integrations.evaluation.results import read_results
from seakr_integrations.evaluation.runner import EvalSummary, summarize
from seakr_integrations.reasoning.jsonform import trace_version
from seakr_integrations.reasoning.trace import SeaKRResult

__all__ = ["MethodRun", "load_runs", "on_shared_questions", "run_named"]


@dataclass
class MethodRun:
    """One results file: a method on a dataset, with its configuration and records."""

    path: Path
    config: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def dataset(self) -> str:
        return os.path.splitext(str(self.config.get("dataset", "?")))[0]

    @property
    def method(self) -> str:
        return str(self.config.get("method", "?"))

    @property
    def name(self) -> str:
        """The row's label: the method, and the file's name when it differs (one method run with other settings)."""
        stem = self.path.stem
        return self.method if stem == self.method else f"{self.method} ({stem})"

    def summary(self) -> EvalSummary:
        return summarize(self.records)


def run_named(runs: Iterable[MethodRun], name: str) -> MethodRun | None:
    """The run whose row is labelled ``name`` (see :attr:`MethodRun.name`), or ``None`` when none has run."""
    return next((run for run in runs if run.name == name), None)


def _read_trace(record: dict[str, Any], path: Path) -> dict[str, Any]:
    """``record`` with its SeaKR trace read through the typed loader (``SeaKRResult.from_dict``) and written back in
    this release's form, whatever release wrote it; a record of another method (closed-book's scores) as it is.

    Raises:
        ValueError: The trace is malformed or newer than this release reads (the message names the file and question).
    """
    trace = record.get("trace")
    try:
        if trace_version(trace) is None:
            return record
        return {**record, "trace": SeaKRResult.from_dict(trace).to_dict()}
    except ValueError as err:
        raise ValueError(f"{path}, question {record.get('id')!r}: {err}") from None


def load_runs(paths: Iterable[str | os.PathLike[str]]) -> list[MethodRun]:
    """Read results files (directories are searched for ``*.jsonl``); empty files are reported, not dropped.

    Every SeaKR trace in them is read through ``SeaKRResult.from_dict`` (so a version-1 trace reads as a version-2
    one, and one of a newer version is refused with a clear error)."""
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.rglob("*.jsonl")) if p.is_dir() else [p]
    if not files:
        raise ValueError("no results files given: pass seakr eval outputs (files, or directories holding them)")
    runs = []
    for f in files:
        config, records = read_results(f)
        run = MethodRun(f, config, [_read_trace(r, f) for r in records])
        if not run.records:
            raise ValueError(f"{f} holds no results yet: finish (or resume) its seakr eval run, or leave it out")
        runs.append(run)
    return runs


def on_shared_questions(group: Sequence[MethodRun]) -> tuple[list[MethodRun], int]:
    """The runs of one dataset cut to the questions all of them answered, and how many those are: methods are
    compared on the same questions even when one file was extended further (closed-book for AUROC, a resumed run).
    With no question in common the runs are returned whole."""
    shared = set.intersection(*({str(r["id"]) for r in run.records} for run in group))
    if not shared:
        return list(group), 0
    return [replace(run, records=[r for r in run.records if str(r["id"]) in shared]) for run in group], len(shared)
