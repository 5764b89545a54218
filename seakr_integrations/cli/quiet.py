"""Keep what vLLM and torch print off a command's output: the CLI's part of the first run's quiet output.

vLLM's start-up and shutdown lines do not all come through Python logging: some are written by its C++ extension
(the NUMA memory-binding warning), some by the engine's own processes, which inherit the command's standard error.
So while the engine starts and runs, file descriptor 2 itself points at a log file in the cache directory; the
engine's processes inherit that, and the command's own lines (its progress, its warnings) go to the terminal through
a stream on the saved descriptor.  A command that fails prints the log's last lines, so that an engine that cannot
start still says why.  ``-v`` turns all of it off.

Only the command line does this: a library must not take over its host process's standard error.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

__all__ = ["ENGINE_LOG", "OWN_LOGGERS", "TAIL_LINES", "engine_log_path", "engine_output_to_log", "log_tail"]

ENGINE_LOG = "engine.log"
"""The log's file name, in ``<cache>/logs/`` (rewritten by each command that starts an engine)."""

TAIL_LINES = 20
"""Lines of the log a failed command prints: enough for a Python traceback's end and vLLM's reason."""

OWN_LOGGERS = ("seakr", "seakr_integrations", "langchain_seakr", "llamaindex_seakr")
"""Loggers (and modules) whose warnings are the command's own, such as ``UncalibratedDeltaWarning``: they still reach
the terminal while the engine's output is logged."""


def engine_log_path() -> Path:
    """Where the engine's output goes: ``<cache>/logs/engine.log`` (``SEAKR_CACHE_DIR`` moves it)."""
    from seakr_integrations.models import cache_dir

    return cache_dir() / "logs" / ENGINE_LOG


def log_tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` lines of ``path`` (none when it cannot be read)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]


class _Own(logging.Filter):
    """Passes the records of ``OWN_LOGGERS`` only."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name.split(".", 1)[0] in OWN_LOGGERS


@contextlib.contextmanager
def engine_output_to_log(path: Path | None = None, *, enabled: bool = True) -> Iterator[TextIO]:
    """For the block, send everything written to file descriptor 2 (``sys.stderr``, C++ code, child processes) to
    ``path`` (default :func:`engine_log_path`), and yield the stream the command's own lines go to (the terminal's
    standard error).  Log records and Python warnings of ``OWN_LOGGERS`` reach that stream too.  Descriptor 2 is
    restored afterwards; when the block raises, the log's last lines are printed there first, with the log's path.

    With ``enabled=False`` nothing is redirected and the stream is ``sys.stderr``.
    """
    if not enabled:
        yield sys.stderr
        return
    path = path or engine_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    console = open(saved, "w", buffering=1, closefd=False, encoding=sys.stderr.encoding, errors="backslashreplace")
    handler = logging.StreamHandler(console)
    handler.addFilter(_Own())
    handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    root = logging.getLogger()
    shown = warnings.showwarning
    try:
        with open(path, "wb") as log_file:
            os.dup2(log_file.fileno(), 2)
        root.addHandler(handler)
        warnings.showwarning = _show_own_warnings_on(console, shown)
        yield console
    except BaseException:
        _restore(saved)
        tail = log_tail(path)
        if tail:
            print(f"seakr: the engine's log, last {len(tail)} lines of {path}:", file=sys.stderr)
            print("\n".join(f"  {line}" for line in tail), file=sys.stderr)
        raise
    finally:
        warnings.showwarning = shown
        root.removeHandler(handler)
        console.close()
        _restore(saved)
        os.close(saved)


def _show_own_warnings_on(console: TextIO, show: Any) -> Any:
    """``warnings.showwarning`` that prints warnings of our own categories on ``console``, and passes the others
    (torch's and vLLM's) to ``show``, which writes them to the log."""

    def showwarning(
        message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        if file is None and category.__module__.split(".", 1)[0] in OWN_LOGGERS:
            console.write(warnings.formatwarning(message, category, filename, lineno, line))
        else:
            show(message, category, filename, lineno, file, line)

    return showwarning


def _restore(saved: int) -> None:
    """Point descriptor 2 back at ``saved`` (again harmless), after flushing what Python buffered for the log."""
    with contextlib.suppress(ValueError, OSError):
        sys.stderr.flush()
    os.dup2(saved, 2)
