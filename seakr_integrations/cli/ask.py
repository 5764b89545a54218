"""``seakr ask QUESTION``: answer with SeaKR (bundled demo corpus and SmolLM2 unless told otherwise)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import time
from collections.abc import Iterator

from seakr_integrations.cli.backend import model_backend
from seakr_integrations.cli.config_options import calibrated, seakr_config
from seakr_integrations.cli.quiet import add_verbose_argument, quiet_command
from seakr_integrations.cli.retriever_options import open_retriever, search_settings
from seakr_integrations.cli.seakr_options import add_seakr_arguments

log = logging.getLogger("seakr")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ask = sub.add_parser("ask", help="answer a question with SeaKR (self-aware retrieval, re-ranking, reasoning)")
    ask.add_argument("question")
    add_seakr_arguments(ask)
    ask.add_argument("--trace", action="store_true", help="print every step, query, candidate and score")
    ask.add_argument("--json", action="store_true", help="print the answer and full trace as JSON")
    ask.add_argument(
        "-q", "--quiet", action="store_true", help="no progress lines (shown on a terminal: each decision as made)"
    )
    add_verbose_argument(ask)
    ask.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seakr_integrations.reasoning import SeaKR
    from seakr_integrations.reasoning.account import decision_account
    from seakr_integrations.reasoning.query import has_words

    if not args.question.strip() or not has_words(args.question):
        raise ValueError(
            f"the question {'is empty' if not args.question.strip() else 'has no words'}: pass the question to answer, "
            'e.g. seakr ask "Who wrote Hamlet?"'
        )
    config = seakr_config(args)
    search = search_settings(args)
    index, _ = open_retriever(args, progress=not (args.json or args.quiet))
    started = time.perf_counter()
    progress = not (args.json or args.quiet) and sys.stderr.isatty()
    with (
        quiet_command(args) as console,
        show_progress(wanted=progress, stream=console),
    ):
        if args.server:
            log.info("connecting to %s", args.server)
        else:
            log.info("loading %s (%s)", args.model, args.backend)
        with model_backend(args) as backend:
            result = SeaKR(backend, index, calibrated(args, backend, config), **search).answer(args.question)
        # the model that answered: a server's own, not the local default --model names
        model, where = (backend.model_name, "server") if args.server else (args.model, args.backend)
    elapsed = time.perf_counter() - started
    if args.json:
        served = {"server": args.server} if args.server else {}
        print(json.dumps({**result.to_dict(), "model": model, "backend": where, **served, "seconds": elapsed}))
        return 0
    if args.trace:
        print(result.format())
    else:
        print(f"question: {result.question}")
        print(decision_account(result))
    print()
    print(f"answer: {result.answer or '(none)'}")
    shown_where = f"server {args.server}" if args.server else where
    print(
        f"took {elapsed:.1f} s, {result.lm_calls} LM calls, {result.searches} searches ({shown_where}, {model}, "
        f"delta {result.config.get('delta')}); --trace shows every step, candidate and sample"
    )
    return 0


@contextlib.contextmanager
def show_progress(wanted: bool, stream: object = None) -> Iterator[None]:
    """While the block runs, print the ``seakr`` logger's INFO lines (each decision of the loop) to ``stream``
    (default stderr), when ``wanted``; the logger's settings are restored afterwards."""
    if not wanted:
        yield
        return
    handler = logging.StreamHandler(stream or sys.stderr)  # type: ignore[arg-type]
    handler.setFormatter(logging.Formatter("seakr: %(message)s"))
    saved = (log.level, log.propagate)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False  # the root handler would print each line a second time
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(saved[0])
        log.propagate = saved[1]
