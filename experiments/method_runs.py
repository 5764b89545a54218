"""Results files read back for this project's report: one ``MethodRun`` per file, its traces in this release's form.

A run is the library's ``evaluation.summary.Run`` (labelled by its file); this module adds what the report's
decision tables need: every SeaKR trace read through the typed loader, and the SeaKR run the others are set against.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from seakr_integrations.evaluation.summary import Run, on_shared_questions, read_runs
from seakr_integrations.reasoning.jsonform import trace_version
from seakr_integrations.reasoning.trace import SeaKRResult

__all__ = ["MethodRun", "load_runs", "main_run", "on_shared_questions", "run_named"]

MethodRun = Run
"""One results file: a method on a dataset, with its configuration and records (``evaluation.summary.Run``)."""


def run_named(runs: Iterable[MethodRun], name: str) -> MethodRun | None:
    """The run whose row is labelled ``name`` (see :attr:`MethodRun.name`), else the one whose file is named so
    (``seakr-paper.jsonl`` holding a run of method ``seakr``), or ``None`` when none has run."""
    runs = list(runs)
    return next((run for run in runs if run.name == name), None) or next(
        (run for run in runs if run.path.stem == name), None
    )


def main_run(runs: Iterable[MethodRun], method: str = "seakr") -> MethodRun | None:
    """The run of ``method`` the others are set against: the file named after it (``seakr.jsonl``), else the one
    file of that method under another name (renamed for the configuration it holds, as ``seakr-paper.jsonl`` holds
    the paper's rules from when they were the default); ``None`` when there is none, or several and none named so."""
    runs = list(runs)
    named = run_named(runs, method)
    if named is not None:
        return named
    renamed = [run for run in runs if run.method == method]
    return renamed[0] if len(renamed) == 1 else None


def _read_trace(record: dict[str, Any], path: os.PathLike[str]) -> dict[str, Any]:
    """``record`` with its SeaKR trace read through the typed loader (``SeaKRResult.from_dict``) and written back in
    this release's form; a record of another method (closed-book's scores) as it is.

    Raises:
        ValueError: The trace is malformed, of version 1 or newer than this release reads (the message names the file
            and question).
    """
    trace = record.get("trace")
    try:
        if trace_version(trace) is None:
            return record
        return {**record, "trace": SeaKRResult.from_dict(trace).to_dict()}
    except ValueError as err:
        raise ValueError(f"{path}, question {record.get('id')!r}: {err}") from None


def load_runs(paths: Iterable[str | os.PathLike[str]]) -> list[MethodRun]:
    """Read results files as ``evaluation.summary.read_runs`` does (directories searched for ``*.jsonl``, an empty
    file an error), with every SeaKR trace read through ``SeaKRResult.from_dict``: a trace of version 1 or of a newer
    version than this release reads is refused with a clear error."""
    return [replace(run, records=[_read_trace(r, run.path) for r in run.records]) for run in read_runs(paths)]
