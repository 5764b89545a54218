"""What several commands share: the options that choose the model, the index and SeaKR's settings, and the
objects those options build."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from seakr_integrations.cli.model_options import add_model_arguments, check_server_options

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


def build_backend(args: argparse.Namespace):  # noqa: ANN202 - returns a SelfAwareBackend
    """The back-end ``--server``, or ``--backend``, ``--model`` and ``--dtype`` name."""
    if getattr(args, "server", None):
        check_server_options(args)
        from seakr_integrations.backends.remote import RemoteBackend
        from seakr_integrations.backends.remote_checks import check_api_key

        key = check_api_key(os.environ.get("SEAKR_API_KEY") or None, "SEAKR_API_KEY")
        return RemoteBackend(args.server, api_key=key, timeout=args.timeout)
    from seakr_integrations.backends.loading import load_backend

    if args.backend == "vllm":
        from seakr_integrations.backends.vllm_settings import single_process_environment

        os.environ.update(single_process_environment())  # a command's engine runs in its own process
        if not getattr(args, "engine_output", False):
            quiet_vllm_start()
    return load_backend(args.backend, args.model, **({"dtype": args.dtype} if args.dtype else {}))


def quiet_vllm_start() -> None:
    """Keep vLLM's start-up log lines and torch FutureWarnings (here and in the engine's processes) off a command's
    terminal; a user's own ``VLLM_LOGGING_LEVEL`` or ``PYTHONWARNINGS`` is kept."""
    import warnings

    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")  # read by the engine's processes at start
    if not sys.warnoptions:
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"vllm\.")


def model_backend(args: argparse.Namespace):  # noqa: ANN202 - returns a SelfAwareBackend
    """The back-end a command runs on, built by ``seakr_integrations.cli._build_backend``: commands reach it through
    the package so that a test can replace it there with a scripted model.  Without ``--dtype``, the model's own
    (``models.default_dtype``) is filled in first, so that results files record the precision that ran."""
    from seakr_integrations import cli
    from seakr_integrations.models import default_dtype

    if getattr(args, "dtype", None) is None and not getattr(args, "server", None):
        args.dtype = default_dtype(args.model)
    return cli._build_backend(args)


def seakr_config(args: argparse.Namespace):  # noqa: ANN202 - returns a SeaKRConfig
    """The ``SeaKRConfig`` the options of ``add_seakr_arguments`` describe (validated there).  Without ``--style``, a
    HotpotQA or 2Wiki question file (``--dataset hotpotqa``, ``data/2wiki_dev.jsonl``...) picks its own exemplars."""
    from dataclasses import replace

    from seakr_integrations.reasoning import SeaKRConfig
    from seakr_integrations.reasoning.rules import TokenCascade, parse_rules

    check_server_options(args)
    if getattr(args, "command", None) != "calibrate" and args.profile_dir is not None and not args.calibrated:
        raise ValueError(
            f"--profile-dir {args.profile_dir} is read with --calibrated: add --calibrated to run on the profile "
            "there (the run then fails if there is none for this model and these settings); without --profile-dir "
            "a run reads <cache>/calibration and the profiles the package ships"
        )
    preset = SeaKRConfig.light() if getattr(args, "preset", "default") == "light" else SeaKRConfig()
    rules = preset.rules if args.rules is None else parse_rules(args.rules)
    if args.cascade_band:
        if not any(isinstance(r, TokenCascade) for r in rules):
            given = (
                f"--rules {args.rules!r}"
                if args.rules is not None
                else f"the {getattr(args, 'preset', 'default')} preset"
            )
            raise ValueError(
                f"--cascade-band needs the token-cascade rule, which {given} leaves out: add it "
                "(--rules default,token-cascade), or drop --cascade-band"
            )
        band = tuple(args.cascade_band)
        rules = tuple(replace(r, band=band) if isinstance(r, TokenCascade) else r for r in rules)

    def given(value: object, name: str) -> object:
        return getattr(preset, name) if value is None else value

    return SeaKRConfig(
        mode=args.mode,
        k=given(args.k, "k"),
        max_tokens=given(args.max_tokens, "max_tokens"),
        min_tokens=args.min_tokens,
        layer=args.layer,
        source=args.source,
        estimator=args.estimator,
        seed=args.seed,
        delta=args.delta,
        n_candidates=args.candidates,
        max_steps=given(args.max_steps, "max_steps"),
        max_docs=args.max_docs,
        exemplar_style=args.style or dataset_style(args),
        num_exemplars=given(args.exemplars, "num_exemplars"),
        chat_template=False if args.no_chat_template else None,
        retrieve=args.retrieve,
        final_strategy=args.final_strategy,
        rules=rules,
    )


def dataset_style(args: argparse.Namespace) -> str | None:
    """The exemplar style of the question file ``--dataset`` names, when it is a HotpotQA or 2Wiki file (its name
    starts with ``hotpotqa`` or ``2wiki``); ``None`` otherwise (the mode's default style)."""
    name = os.path.basename(getattr(args, "dataset", None) or "").lower()
    return next((style for style in ("hotpotqa", "2wiki") if name.startswith(style)), None)


def search_settings(args: argparse.Namespace) -> dict[str, float | None]:
    """The keyword arguments ``SeaKR`` and the baselines take from ``--search-timeout`` (0: wait for ever), checked
    (a command calls it before it loads a model, so a bad value fails at once)."""
    from seakr_integrations.reasoning.calls import check_search_settings

    if args.search_timeout is not None and not (math.isfinite(args.search_timeout) and args.search_timeout >= 0):
        raise ValueError(f"--search-timeout {args.search_timeout:g}: give seconds > 0, or 0 to wait for ever")
    timeout, _ = check_search_settings(args.search_timeout or None, "raise")
    return {"search_timeout": timeout}


def open_retriever(args: argparse.Namespace, progress: bool):  # noqa: ANN202 - returns (Retriever, description)
    """The retriever the options name, and a JSON-ready description of it (for results files)."""
    corpus = getattr(args, "corpus", None)
    named = {"--index": args.index, "--es": args.es, "--corpus": corpus}
    given = [name for name, value in named.items() if value is not None]
    if len(given) > 1:
        raise ValueError(f"{' and '.join(given)} exclude each other: search one index (see seakr {args.command} -h)")
    if args.es is not None:
        from seakr_integrations.retrieval.elasticsearch import ElasticsearchRetriever

        return ElasticsearchRetriever(args.es_index, url=args.es or None), {"elasticsearch_index": args.es_index}
    if args.index:
        from seakr_integrations.retrieval.bm25 import BM25Index

        return BM25Index.open(args.index), {"bm25_index": os.path.abspath(args.index)}
    from seakr_integrations.demo import cached_index, demo_corpus_path

    path = corpus or demo_corpus_path()
    return cached_index(path, progress=progress), {"bm25_corpus": os.path.basename(path)}


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


def checked_retriever(args: argparse.Namespace, questions: list):  # noqa: ANN202 - (Retriever, description)
    """The retriever, refused when it does not hold the questions' supporting passages (unless told not to check)."""
    from seakr_integrations.evaluation.coverage import index_coverage

    retriever, where = open_retriever(args, progress=not args.quiet)
    if not args.no_coverage_check:
        cover = index_coverage(questions, retriever)
        if cover.fraction < 0.5:
            raise ValueError(
                f"the index does not match {args.dataset}: of {cover.titles} supporting titles of its questions, a "
                f"search found {cover.found} ({cover.fraction:.0%}; missing e.g. {', '.join(cover.missing)}). "
                "Search the dataset's own corpus (--corpus CORPUS, or seakr index CORPUS --out DIR then --index "
                "DIR), or pass --no-coverage-check"
            )
    return retriever, where


def calibrated(args: argparse.Namespace, backend, config):  # noqa: ANN001, ANN202 - SeaKRConfig in and out
    """``config`` with the saved calibrated delta when ``--calibrated`` was given."""
    if not getattr(args, "calibrated", False):
        return config
    from seakr_integrations.reasoning import SeaKRConfig

    return SeaKRConfig.calibrated(backend, root=args.profile_dir, **config.to_dict())


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


def add_seakr_arguments(p: argparse.ArgumentParser) -> None:
    """The options of every command that runs SeaKR: index, model, back-end and SeaKRConfig settings."""
    from seakr_integrations.backends.remote_checks import DEFAULT_TIMEOUT
    from seakr_integrations.params import HiddenSource, choices
    from seakr_integrations.reasoning import SeaKRConfig
    from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT
    from seakr_integrations.reasoning.config import ExemplarStyle, FinalStrategy, Mode, RetrievePolicy
    from seakr_integrations.reasoning.rules import PRESETS, RULES
    from seakr_integrations.uncertainty.registry import estimator_names

    d = SeaKRConfig()
    p.add_argument("--index", default=None, help="BM25 index directory (default: the bundled demo corpus)")
    p.add_argument(
        "--es",
        nargs="?",
        const="",
        default=None,
        metavar="URL",
        help="search an Elasticsearch cluster instead (URL default: $ELASTICSEARCH_URL; credentials from "
        "$ELASTICSEARCH_API_KEY or $ELASTICSEARCH_USERNAME/$ELASTICSEARCH_PASSWORD)",
    )
    p.add_argument("--es-index", default="wiki", help="Elasticsearch index to search (default: wiki)")
    add_model_arguments(p)
    p.add_argument(
        "--server",
        metavar="URL",
        default=None,
        help="use the model of a `seakr serve` server instead of loading one (its API key from $SEAKR_API_KEY); "
        "a plain OpenAI-compatible server such as a stock `vllm serve` works with --estimator perplexity (or another "
        "estimator that reads logprobs only)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"with --server: seconds one request to the server may take, its retries included (default "
        f"{DEFAULT_TIMEOUT:g}); a server that does not answer in time is an error naming its URL",
    )
    p.add_argument("--mode", choices=choices(Mode), default=d.mode)
    light = SeaKRConfig.light()
    p.add_argument(
        "--preset",
        choices=("default", "light"),
        default="default",
        help=f"the sampling preset: default (SeaKRConfig(): k {d.k}, {d.max_tokens} tokens, {d.num_exemplars} "
        f"exemplars) or light (SeaKRConfig.light(): k {light.k}, {light.max_tokens} tokens, {light.num_exemplars} "
        "exemplars); each has its shipped profiles, and both stop after two steps (the step-limit rule). -k, "
        "--max-tokens, --exemplars and --max-steps change one setting of it",
    )
    p.add_argument("-k", type=int, default=None, help=f"samples per LM call (default {d.k}; light {light.k})")
    p.add_argument(
        "--delta",
        type=float,
        default=d.delta,
        help="retrieve when uncertainty > delta (default: your `seakr calibrate` profile for the model and settings, "
        "else the one shipped for a bundled model, else -6.0)",
    )
    p.add_argument(
        "--cascade-band",
        type=float,
        nargs=2,
        metavar=("SURE_AT_OR_BELOW", "UNSURE_ABOVE"),
        default=None,
        help="the token-cascade rule's band on the greedy step's least token probability (1 - min p): outside it "
        "the gate decides without samples (default: the band calibrated with delta; none: every step is sampled)",
    )
    p.add_argument(
        "--rules",
        default=None,
        metavar="RULES",
        help=f"the decision rules, comma-separated: presets ({', '.join(PRESETS)}: none, the authors' SeaKR), rule "
        f"names to add, -NAME to remove (e.g. default,-claim-check). Rules: {', '.join(RULES)} (default: the preset's)",
    )
    p.add_argument(
        "--retrieve",
        choices=choices(RetrievePolicy),
        default=d.retrieve,
        help="uncertain: SeaKR's gate (default); always, never: the paper's ablations",
    )
    p.add_argument(
        "--final-strategy",
        choices=choices(FinalStrategy),
        default=d.final_strategy,
        help="choose the less uncertain final answer (the paper; the default rules answer from the kept passages, "
        "answer-from-passages), or always the rationales' or the knowledge answer",
    )
    p.add_argument(
        "--candidates",
        type=int,
        default=d.n_candidates,
        help=f"passages re-ranked per retrieval (default {d.n_candidates})",
    )
    p.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help=f"reasoning steps after which the loop stops (the paper's {d.max_steps}; light {light.max_steps}); the "
        "default rules' step-limit stops after two whatever this says: --rules default,-step-limit lifts it",
    )
    p.add_argument(
        "--max-docs",
        type=int,
        default=d.max_docs,
        help=f"kept passages after which the loop stops (default {d.max_docs}, the paper's; the passage-limit rule, "
        "not in the default, stops earlier)",
    )
    p.add_argument(
        "--search-timeout",
        type=float,
        default=DEFAULT_SEARCH_TIMEOUT,
        metavar="SECONDS",
        help=f"a search that takes longer fails like any retrieval error (default {DEFAULT_SEARCH_TIMEOUT:g}; 0: no "
        "limit)",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help=f"tokens per call (default {d.max_tokens}; light {light.max_tokens})",
    )
    p.add_argument(
        "--min-tokens",
        type=int,
        default=d.min_tokens,
        help=f"tokens every call writes before EOS may end it (default {d.min_tokens}: instruct models otherwise end "
        "their turn after the first reasoning step; 0 is the authors' behaviour)",
    )
    p.add_argument("--layer", type=int, default=d.layer, help="0-based layer (default L/2 - 1)")
    p.add_argument("--source", choices=choices(HiddenSource), default=d.source)
    p.add_argument(
        "--estimator",
        choices=estimator_names(),
        default=d.estimator,
        help=f"uncertainty estimator (default {d.estimator}: SeaKR; the others are the paper's ablations)",
    )
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument(
        "--style",
        choices=choices(ExemplarStyle),
        default=d.exemplar_style,
        help="in-context exemplars (default: the question file's own for HotpotQA and 2Wiki, else hotpotqa; simple "
        "in single-hop mode)",
    )
    p.add_argument(
        "--exemplars",
        type=int,
        default=None,
        help=f"number of in-context exemplars (default {d.num_exemplars}; light {light.num_exemplars})",
    )
    p.add_argument("--no-chat-template", action="store_true", help="send plain prompts to chat models")
    p.add_argument(
        "--calibrated",
        action="store_true",
        help="require the delta seakr calibrate saved for this model and settings (in --profile-dir); fail if none",
    )
    p.add_argument("--profile-dir", type=Path, default=None, help="calibration profiles (default <cache>/calibration)")
