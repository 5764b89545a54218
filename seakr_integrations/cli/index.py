"""``seakr index CORPUS.jsonl``: build a BM25 index (``--out DIR``) or an Elasticsearch index (``--es URL
--index NAME``; resumable).  Credentials come from the environment only, never the command line (the process list).
"""

from __future__ import annotations

import argparse
import sys
import time

_ES_INDEX_OPTIONS = (
    ("index", "wiki", "index name (default: wiki, as SeaKR's)"),
    ("title_field", "title", "field for passage titles (default: title)"),
    ("text_field", "txt", "field for passage texts (default: txt, as SeaKR's)"),
    ("shards", 1, "primary shards of a new index (default 1; see docs/scaling.md)"),
    ("replicas", 1, "replicas once the build is done (default 1)"),
    ("batch_size", 1000, "passages per bulk request (default 1000)"),
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    index = sub.add_parser(
        "index",
        help="build a BM25 index from a JSONL corpus ({id, title, text} per line): a directory, or an Elasticsearch "
        "index",
    )
    index.add_argument("corpus", help="JSONL file (may be .gz)")
    target = index.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", help="index directory (replaced atomically if it is an index)")
    target.add_argument(
        "--es",
        nargs="?",
        const="",
        default=None,
        metavar="URL",
        help="Elasticsearch cluster to index into (URL default: $ELASTICSEARCH_URL; credentials from "
        "$ELASTICSEARCH_API_KEY or $ELASTICSEARCH_USERNAME/$ELASTICSEARCH_PASSWORD); passages go in by id, so "
        "rerunning after an interruption completes the index without duplicates",
    )
    es = index.add_argument_group("Elasticsearch (with --es)")
    for option, default, text in _ES_INDEX_OPTIONS:
        es.add_argument(f"--{option.replace('_', '-')}", type=type(default), default=None, help=text)
    es.add_argument(
        "--replace-existing",
        action="store_true",
        help="rewrite passages the index already holds (for an updated corpus); default: skip them",
    )
    index.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    index.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.es is not None:
        return _run_es(args)
    given = [option for option, _, _ in _ES_INDEX_OPTIONS if getattr(args, option) is not None]
    if args.replace_existing:
        given.append("replace_existing")
    if given:
        raise ValueError(f"--{given[0].replace('_', '-')} applies to Elasticsearch indexes (--es) only")
    from seakr_integrations.retrieval.bm25 import BM25Index

    started = time.perf_counter()
    index = BM25Index.build(args.corpus, args.out, progress=not args.quiet)
    print(f"indexed {len(index)} passages into {args.out} in {time.perf_counter() - started:.1f} s")
    return 0


def _run_es(args: argparse.Namespace) -> int:
    from seakr_integrations.retrieval.es_index import build_elasticsearch_index

    options = {
        name: default if getattr(args, name) is None else getattr(args, name) for name, default, _ in _ES_INDEX_OPTIONS
    }
    try:
        build = build_elasticsearch_index(
            args.corpus, url=args.es or None, overwrite=args.replace_existing, progress=not args.quiet, **options
        )
    except KeyboardInterrupt:
        print(
            f"seakr: interrupted; the passages sent so far stay in index {options['index']!r}: run the same command "
            "again to complete it (passages already indexed are skipped)",
            file=sys.stderr,
        )
        return 130
    verb = "replaced or added" if args.replace_existing else "new"
    print(
        f"indexed {build.passages} passages into Elasticsearch index {build.index!r} at {build.url} in "
        f"{build.seconds:.1f} s ({build.added} {verb}, {build.already_indexed} already indexed; the index holds "
        f"{build.num_docs})"
    )
    return 0
