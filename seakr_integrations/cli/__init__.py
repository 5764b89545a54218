"""The ``seakr`` command line, one module per command, each with ``add_parser(subparsers)`` and ``run(args) -> exit
status``; the options of the commands that run SeaKR are in ``seakr_options`` (what they search, the model, and
SeaKR's settings, made from ``SeaKRConfig``'s and ``SamplingConfig``'s fields), the back-end they build in ``backend``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from seakr_integrations.cli import ask, calibrate, evaluate, index, models, report, score, serve
from seakr_integrations.cli.quiet import plain_own_warnings

__all__ = ["build_parser", "main", "quiet_transports"]

TRANSPORT_LOGGERS = ("elastic_transport", "elasticsearch", "urllib3", "httpx", "httpcore")
"""Client libraries that log each failed attempt as a warning with its traceback (Elasticsearch's: 40 lines a retry)."""

_COMMANDS = (score, ask, evaluate, calibrate, report, index, models, serve)
"""In the order ``seakr --help`` lists them."""

DASH_VALUES = ("--rules",)
"""Options whose value may start with one dash (``--rules -claim-check``, as the help invites), which argparse would
read as an unknown option; a word with two dashes stays an option."""


def attach_dash_values(argv: Sequence[str]) -> list[str]:
    """``argv`` with each ``DASH_VALUES`` option joined to a value starting with a dash (``--rules=-claim-check``)."""
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        value = args[i + 1] if i + 1 < len(args) else ""
        if args[i] in DASH_VALUES and value.startswith("-") and not value.startswith("--"):  # "--x" is an option
            out.append(f"{args[i]}={value}")
            i += 2
            continue
        out.append(args[i])
        i += 1
    return out


def build_parser() -> argparse.ArgumentParser:
    """The ``seakr`` parser with every command."""
    parser = argparse.ArgumentParser(prog="seakr", description="Self-aware knowledge retrieval (SeaKR) tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in _COMMANDS:
        command.add_parser(sub)
    return parser


def quiet_transports() -> None:
    """Show only errors of the HTTP client libraries: a retried connection failure is the command's to report
    (``SEAKR_LOG_LEVEL=INFO`` or ``WARNING`` shows every attempt again)."""
    for name in TRANSPORT_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``seakr`` with ``argv`` (default: the process's); the exit status (2: a usage or input error)."""
    args = build_parser().parse_args(attach_dash_values(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(level=os.environ.get("SEAKR_LOG_LEVEL", "WARNING"))
    plain_own_warnings()
    if "SEAKR_LOG_LEVEL" not in os.environ:
        quiet_transports()
    try:
        return int(args.func(args))
    except (ValueError, FileNotFoundError, LookupError, RuntimeError) as exc:
        print(f"seakr: error: {exc}", file=sys.stderr)
        return 2
