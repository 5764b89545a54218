"""The options that pick a command's questions (``--dataset``, ``--start``, ``--limit``...), the files a short
``--dataset`` name stands for, and the questions they select."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "DATASET_NAMES",
    "DatasetFiles",
    "add_question_arguments",
    "data_dirs",
    "dataset_style",
    "load_questions",
    "resolve_dataset",
    "use_dataset_files",
]

DATASET_NAMES = ("hotpotqa", "2wiki", "nq_open")
"""The short ``--dataset`` names: the question files ``data/<name>_dev.jsonl`` of the repository (not the wheel)."""


class DatasetFiles(NamedTuple):
    """What a ``--dataset`` value names: the question file, and the corpus that goes with it (``None``: the
    value was a file path, or the dataset has no corpus, so the usual default applies)."""

    questions: Path
    corpus: Path | None


def data_dirs() -> list[Path]:
    """Where the short dataset names are looked up, in order: ``data/`` of the working directory, then of the clone
    the package is imported from (an installed package has none)."""
    dirs = [Path.cwd() / "data", Path(__file__).resolve().parents[2] / "data"]
    return dirs[:1] if dirs[0].resolve() == dirs[1] else dirs


def resolve_dataset(dataset: str, dirs: Sequence[Path] | None = None) -> DatasetFiles:
    """The files ``--dataset`` names: an existing file is taken as it is (it always wins over a short name); a
    short name (``hotpotqa``, ``2wiki``, ``nq_open``) is the first ``<dir>/<name>_dev.jsonl`` among ``dirs``
    (default :func:`data_dirs`), with that folder's ``corpus_<name>.jsonl`` when the dataset has one.

    Raises:
        FileNotFoundError: ``dataset`` is neither a file nor a short name, a short name's question file is in none
            of ``dirs`` (an installed package does not ship the benchmark data), or its corpus is missing beside it.
    """
    if Path(dataset).is_file():
        return DatasetFiles(Path(dataset), None)
    if dataset not in DATASET_NAMES:
        raise FileNotFoundError(
            f"--dataset {dataset}: not a file. Pass a question file (JSONL, one question per line; see the README) "
            f"or one of the short names {', '.join(DATASET_NAMES)} (the question files in data/ of a seakr clone)"
        )
    dirs = data_dirs() if dirs is None else list(dirs)
    found = next((d for d in dirs if (d / f"{dataset}_dev.jsonl").is_file()), None)
    if found is None:
        raise FileNotFoundError(
            f"--dataset {dataset}: the short name stands for data/{dataset}_dev.jsonl of a seakr clone, but "
            f"{' and '.join(str(d) for d in dirs)} hold no {dataset}_dev.jsonl (the installed package does not ship "
            f"the benchmark data). Run from the root of a clone, or pass the files' paths: --dataset "
            f"PATH/{dataset}_dev.jsonl" + ("" if dataset == "nq_open" else f" --corpus PATH/corpus_{dataset}.jsonl")
        )
    if dataset == "nq_open":  # answers only, no passages: the retriever's usual default applies
        return DatasetFiles(found / f"{dataset}_dev.jsonl", None)
    corpus = found / f"corpus_{dataset}.jsonl"
    if not corpus.is_file():
        raise FileNotFoundError(
            f"--dataset {dataset}: {found} holds {dataset}_dev.jsonl but not its corpus corpus_{dataset}.jsonl; "
            "restore it (git checkout data/), or name the passages to search with --corpus, --index or --es"
        )
    return DatasetFiles(found / f"{dataset}_dev.jsonl", corpus)


def add_question_arguments(p: argparse.ArgumentParser, dataset_help: str) -> None:
    """The options that pick questions and the corpus they are checked against (eval and calibrate)."""
    p.add_argument(
        "--dataset",
        help=f"{dataset_help}; or a short name, {', '.join(DATASET_NAMES)}: data/NAME_dev.jsonl of a seakr clone, "
        "searching its data/corpus_NAME.jsonl unless --corpus, --index or --es say otherwise",
    )
    p.add_argument("--corpus", default=None, help="JSONL corpus to search (indexed once into the cache)")
    p.add_argument("--start", type=int, default=0, help="0-based index of the first question (default 0)")
    p.add_argument("--limit", type=int, default=None, help="number of questions (default: all)")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed question lines (they are counted)")
    p.add_argument("--no-coverage-check", action="store_true", help="skip the index/dataset match check")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")


def load_questions(args: argparse.Namespace):  # noqa: ANN202 - returns list[Question]
    """The questions ``--dataset``, ``--start``, ``--limit`` and ``--skip-bad`` select (skipped lines reported); a short
    ``--dataset`` name is resolved first (:func:`use_dataset_files`), so ``args`` then names the files."""
    from seakr_integrations.evaluation import read_questions

    if not args.dataset:
        raise ValueError(
            "--dataset FILE is required: a question file, one JSON object per line (see the README), or one of the "
            f"short names {', '.join(DATASET_NAMES)} (the question files in data/ of a seakr clone)"
        )
    if args.start < 0 or (args.limit is not None and args.limit < 1):
        raise ValueError(f"--start {args.start} / --limit {args.limit}: start must be >= 0 and limit >= 1")
    use_dataset_files(args)
    loaded = read_questions(args.dataset, skip_bad=args.skip_bad)
    if loaded.skipped:
        print(f"seakr: skipped {len(loaded.skipped)} bad line(s) of {args.dataset}:", file=sys.stderr)
        for message in loaded.skipped:
            print(f"  {message}", file=sys.stderr)
    questions = loaded.questions[args.start :][: args.limit]
    if not questions:
        raise ValueError(f"--start {args.start}: {args.dataset} holds only {len(loaded.questions)} questions")
    return questions


def use_dataset_files(args: argparse.Namespace) -> None:
    """Replace a short ``--dataset`` name in ``args`` by its question file, and, when no ``--corpus``, ``--index``
    or ``--es`` was given, set ``--corpus`` to the dataset's corpus.  Results files, profiles and the coverage
    check then name the file (``hotpotqa_dev.jsonl``), exactly as when its path was given."""
    name = args.dataset
    files = resolve_dataset(name)
    if files.questions == Path(name):
        return
    args.dataset = str(files.questions)
    searching = ""
    if files.corpus is not None and all(getattr(args, option, None) is None for option in ("corpus", "index", "es")):
        args.corpus = str(files.corpus)
        searching = f", searching {args.corpus}"
    if not getattr(args, "quiet", False):
        print(f"seakr: --dataset {name}: {args.dataset}{searching}", file=sys.stderr)


def dataset_style(args: argparse.Namespace) -> str | None:
    """The exemplar style of the question file ``--dataset`` names, when it is a HotpotQA or 2Wiki file (its name
    starts with ``hotpotqa`` or ``2wiki``); ``None`` otherwise (the mode's default style)."""
    name = os.path.basename(getattr(args, "dataset", None) or "").lower()
    return next((style for style in ("hotpotqa", "2wiki") if name.startswith(style)), None)
