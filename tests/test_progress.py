"""Progress on long work: each decision of the loop is one INFO line of the ``seakr`` logger, and ``seakr ask``
prints them on a terminal unless told to be quiet."""

from __future__ import annotations

import io
import logging

from fakes import FakeRetriever, ScriptedBackend, passage
from llamaindex_fakes import CONFIG, QUESTION, eiffel

from seakr_integrations.cli import build_parser
from seakr_integrations.cli.ask import show_progress
from seakr_integrations.reasoning import SeaKR


def _answer() -> None:
    SeaKR(ScriptedBackend(eiffel), FakeRetriever(default=[passage(f"p{i}") for i in (1, 2, 3)]), CONFIG).answer(
        QUESTION
    )


def test_each_decision_is_logged_in_order(caplog):
    with caplog.at_level(logging.INFO, logger="seakr"):
        _answer()
    lines = [r.getMessage() for r in caplog.records if r.name == "seakr"]
    wanted = ["step 1: U=", "uncertain: retrieve", "searched for", "kept p2", "answer from"]
    positions = [next(i for i, line in enumerate(lines) if w in line) for w in wanted]
    assert positions == sorted(positions), lines
    assert all(line.startswith("question 0: ") for line in lines)


def test_nothing_is_formatted_or_logged_below_info(caplog):
    with caplog.at_level(logging.WARNING, logger="seakr"):
        _answer()
    assert not [r for r in caplog.records if r.name == "seakr"]


def test_seakr_ask_shows_progress_only_when_wanted():
    shown = io.StringIO()
    with show_progress(wanted=True, stream=shown):
        _answer()
    assert "seakr: question 0: step 1: U=" in shown.getvalue() and "seakr: question 0: answer from" in shown.getvalue()
    quiet = io.StringIO()
    with show_progress(wanted=False, stream=quiet):
        _answer()
    assert quiet.getvalue() == ""
    logger = logging.getLogger("seakr")
    assert logger.handlers == [] and logger.propagate  # restored
    assert build_parser().parse_args(["ask", "What?", "-q"]).quiet
