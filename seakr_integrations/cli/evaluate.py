"""``seakr eval --dataset FILE``: score SeaKR, its ablations and baselines on labelled questions (resumable
results files).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from seakr_integrations.cli.backend import model_backend
from seakr_integrations.cli.config_options import calibrated, seakr_config
from seakr_integrations.cli.questions import add_question_arguments, load_questions
from seakr_integrations.cli.quiet import add_verbose_argument, own_stderr, quiet_command
from seakr_integrations.cli.retriever_options import checked_retriever, search_settings
from seakr_integrations.cli.seakr_options import add_seakr_arguments

STOPPED = 3
"""The exit status of a run stopped because the server did not answer (rerun to resume); 2 is a usage error."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ev = sub.add_parser(
        "eval",
        help="evaluate SeaKR, its ablations or baselines on a question file: EM/F1 and costs, one JSONL record per "
        "question (rerun the same command to resume)",
    )
    add_question_arguments(ev, "question file (JSONL: id, question, answers; see the README)")
    ev.add_argument("--method", action="append", default=None, help="method name, repeatable (default: seakr)")
    ev.add_argument("--list-methods", action="store_true", help="list the methods and exit")
    where = ev.add_mutually_exclusive_group()
    where.add_argument("--out", default=None, help="results file (default runs/DATASET/METHOD.jsonl)")
    where.add_argument("--out-dir", default=None, help="directory of the results files, one METHOD.jsonl per method")
    ev.add_argument(
        "--batch-size",
        type=int,
        default=8,
        help="questions in progress at once (default 8): SeaKR and the baselines start the next as soon as one "
        "finishes; closed-book and SKR-kNN answer in batches of it",
    )
    ev.add_argument("--no-trace", action="store_true", help="leave the decision traces out of the records")
    ev.add_argument(
        "--train-results",
        default=None,
        metavar="DIR",
        help="skr-knn and token-gate: directory of cot and single-retrieval results on training questions",
    )
    ev.add_argument("--skr-k", type=int, default=10, help="skr-knn: neighbours that vote (default 10)")
    ev.add_argument("--json", action="store_true", help="print the summaries as JSON")
    add_seakr_arguments(ev)
    add_verbose_argument(ev)
    ev.set_defaults(func=run)


def results_path(args: argparse.Namespace, method: str, methods: int) -> str:
    """Where ``method``'s results go: ``--out`` (``STEM.METHOD.jsonl`` when several methods run), or
    ``METHOD.jsonl`` in ``--out-dir`` (default ``runs/DATASET``)."""
    if args.out:
        return args.out if methods == 1 else f"{os.path.splitext(args.out)[0]}.{method}.jsonl"
    dataset = os.path.splitext(os.path.basename(args.dataset))[0]
    return os.path.join(args.out_dir or os.path.join("runs", dataset), f"{method}.jsonl")


def run_setup(args: argparse.Namespace, described: dict[str, Any], model: Any, where: str) -> dict[str, Any]:
    """What a results file's header records of the run: the method, the dataset, the retriever and the model that
    answered (with ``--server``, the server's own, so a file resumes against a server of that model at any URL)."""
    if getattr(args, "server", None):
        answering = {"model": model.model_name, "backend": "server", "dtype": None}
    else:
        answering = {"model": args.model, "backend": args.backend, "dtype": args.dtype}
    return {**described, "dataset": os.path.basename(args.dataset), "retriever": where, **answering}


def run(args: argparse.Namespace) -> int:
    from seakr_integrations.backends.cached import CachedBackend
    from seakr_integrations.evaluation import EvaluationStopped, ResultsFile, evaluate, make_method
    from seakr_integrations.evaluation.methods import METHODS, check_method

    if args.list_methods:
        for name, (_, description) in METHODS.items():
            print(f"{name}: {description}")
        return 0
    methods = args.method or ["seakr"]
    for name in methods:
        check_method(name)  # an unknown name fails now (listing the known ones), before any loading
    options = {}
    trained = [name for name in methods if name in ("skr-knn", "token-gate")]
    if trained:
        from seakr_integrations.evaluation.skr import skr_labels
        from seakr_integrations.evaluation.token_gate import fit_token_gate

        if args.train_results is None:
            raise ValueError(
                f"--method {trained[0]} needs --train-results DIR: the cot.jsonl and single-retrieval.jsonl results of "
                "`seakr eval --method cot --method single-retrieval` on training questions (not the evaluated ones)"
            )
        for name in trained:  # missing or unusable training results fail now, before the model loads
            skr_labels(args.train_results) if name == "skr-knn" else fit_token_gate(args.train_results)
        options = {"train_results": args.train_results, "skr_k": args.skr_k}
    questions = load_questions(args)
    config = seakr_config(args)
    search = search_settings(args)
    retriever, where = checked_retriever(args, questions)
    summaries = {}
    with quiet_command(args) as console, model_backend(args) as model, own_stderr(console):
        # Methods run in one process share identical calls (same prompt and settings, seeded sampling): an ablation
        # that follows SeaKR's path pays only where it leaves it.  Records' seconds count only the calls made.
        backend = CachedBackend(model) if len(methods) > 1 else model
        method_config = calibrated(args, backend, config)
        for name in methods:
            method = make_method(name, backend, retriever, method_config, **options, **search)
            setup = run_setup(args, method.describe(), model, where)
            out = results_path(args, name, len(methods))
            with ResultsFile.open(out, setup) as results:
                if results.cut_short:
                    print(f"seakr: {out}: removed a last line cut short by an earlier crash", file=sys.stderr)
                try:
                    summary = evaluate(
                        method,
                        questions,
                        results,
                        batch_size=args.batch_size,
                        progress=not args.quiet,
                        keep_trace=not args.no_trace,
                    )
                except EvaluationStopped as stopped:  # the server is down: one message, not a traceback
                    print(f"seakr: error: {name}: {stopped}", file=sys.stderr)
                    if args.json and summaries:  # the methods that finished before
                        print(json.dumps(summaries, indent=2))
                    return STOPPED
            summaries[name] = {"results": out, **summary.to_dict()}
            if not args.json:
                print(
                    f"{name}: EM {summary.em:.3f}  F1 {summary.f1:.3f}  ({summary.questions} questions; per question "
                    f"{summary.retrievals:.2f} retrievals, {summary.lm_calls:.1f} LM calls, "
                    f"{summary.generated_tokens:.0f} tokens, {summary.seconds:.1f} s) -> {out}"
                )
                if summary.failed:
                    print(f"  {summary.failed} question(s) failed and scored 0; their rows say why (rerun to retry)")
    if args.json:
        print(json.dumps(summaries, indent=2))
    return 0
