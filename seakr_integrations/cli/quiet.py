"""Keep what vLLM and torch print off a command's output: file descriptor 2 goes to a log file while the engine
runs (some of its lines bypass Python logging), and a failed command prints the log's tail.  Only the command line
does this: a library must not take over its host process's standard error (docs/design/core.md).
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

ENGINE_LOG = "engine.log"
"""The log's file name, in ``<cache>/logs/`` (rewritten by each command that starts an engine)."""

TAIL_LINES = 20
"""Lines of the log a failed command prints: enough for a Python traceback's end and vLLM's reason."""

OWN_LOGGERS = ("seakr", "seakr_integrations", "langchain_seakr", "llamaindex_seakr")
"""Loggers (and modules) whose warnings are the command's own, such as ``UncalibratedDeltaWarning``: they still reach
the terminal while the engine's output is logged."""


def plain_own_warnings() -> None:
    """Show the library's own warnings as a command's messages, ``seakr: warning: ... (UncalibratedDeltaWarning)``,
    not as Python prints them (file, line number and the source line that warned): a command line user reads the
    message, not our code.  Only the command line does this (the process is the command's)."""
    python_format = warnings.formatwarning
    if getattr(python_format, "plain_own", False):  # set by an earlier command in this process
        return

    def formatwarning(message: Any, category: type[Warning], filename: str, lineno: int, line: Any = None) -> str:
        if category.__module__.split(".", 1)[0] in OWN_LOGGERS:
            return f"seakr: warning: {message} ({category.__name__})\n"
        return python_format(message, category, filename, lineno, line)

    formatwarning.plain_own = True  # type: ignore[attr-defined]
    warnings.formatwarning = formatwarning


def add_verbose_argument(parser: Any) -> None:
    """``-v/--verbose`` (``args.engine_output``): show what vLLM and torch print instead of logging it."""
    parser.add_argument(
        "-v",
        "--verbose",
        dest="engine_output",
        action="store_true",
        help="show what vLLM and torch print (otherwise kept in <cache>/logs/engine.log, shown when a command fails)",
    )


@contextlib.contextmanager
def quiet_command(args: Any) -> Iterator[TextIO]:
    """For a command's block: the engine's output goes to the log (:func:`engine_output_to_log`) unless ``-v`` or
    ``--server`` (no engine here) was given; yields the terminal's stream.  Python's ``sys.stderr`` stays the
    descriptor, so what the engine's Python code prints while it starts is logged too: pass the stream to
    :func:`own_stderr` around the command's own progress once the model is loaded."""
    enabled = not getattr(args, "engine_output", False) and not getattr(args, "server", None)
    with engine_output_to_log(enabled=enabled) as console:
        yield console


def own_stderr(console: TextIO) -> contextlib.AbstractContextManager[Any]:
    """``sys.stderr`` as ``console`` for the block: the command's progress bars and messages reach the terminal
    while the engine's output (file descriptor 2) stays in the log."""
    return contextlib.redirect_stderr(console) if console is not sys.stderr else contextlib.nullcontext()


def engine_log_path() -> Path:
    """Where the engine's output goes: ``<cache>/logs/engine.log`` (``SEAKR_CACHE_DIR`` moves it)."""
    from seakr_integrations.models import cache_dir

    return cache_dir() / "logs" / ENGINE_LOG


def log_tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` lines of ``path`` (none when it cannot be read)."""
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


@contextlib.contextmanager
def engine_output_to_log(path: Path | None = None, *, enabled: bool = True) -> Iterator[TextIO]:
    """For the block, send everything written to file descriptor 2 to ``path`` (default :func:`engine_log_path`) and
    yield the terminal's stream, where the command's own lines and ``OWN_LOGGERS``' records and warnings go.  When
    the block raises, the log's last lines are printed first.  ``enabled=False``: nothing is redirected.
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
    handler.addFilter(lambda record: record.name.split(".", 1)[0] in OWN_LOGGERS)
    handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    root = logging.getLogger()
    shown = warnings.showwarning

    def showwarning(
        message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        if file is None and category.__module__.split(".", 1)[0] in OWN_LOGGERS:
            console.write(warnings.formatwarning(message, category, filename, lineno, line))
        else:
            shown(message, category, filename, lineno, file, line)

    try:
        with open(path, "wb") as log_file:
            os.dup2(log_file.fileno(), 2)
        root.addHandler(handler)
        warnings.showwarning = showwarning
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


def _restore(saved: int) -> None:
    with contextlib.suppress(ValueError, OSError):
        sys.stderr.flush()
    os.dup2(saved, 2)
