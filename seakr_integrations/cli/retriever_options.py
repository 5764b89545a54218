"""The options that choose what a command searches (``--index``, ``--es``, ``--es-index``, ``--corpus``) and how
long a search may take (``--search-timeout``), and the retriever they open."""

from __future__ import annotations

import argparse
import math
import os

__all__ = [
    "add_retriever_arguments",
    "add_search_timeout_argument",
    "checked_retriever",
    "open_retriever",
    "search_settings",
]


def add_retriever_arguments(p: argparse.ArgumentParser) -> None:
    """``--index``, ``--es`` and ``--es-index`` (``--corpus`` comes with the question options)."""
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


def add_search_timeout_argument(p: argparse.ArgumentParser) -> None:
    """``--search-timeout``: a setting of the component that searches, not of ``SeaKRConfig``'s decisions."""
    from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT

    p.add_argument(
        "--search-timeout",
        type=float,
        default=DEFAULT_SEARCH_TIMEOUT,
        metavar="SECONDS",
        help=f"a search that takes longer fails like any retrieval error (default {DEFAULT_SEARCH_TIMEOUT:g}; 0: no "
        "limit)",
    )


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
