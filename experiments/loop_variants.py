"""Several SeaKR variants and baselines over the same question lines, on one engine load.

Each variant is a name and the ``seakr eval`` options that make it (``--rules``, ``--max-docs``, ``--method``...);
all share one back-end behind a ``CachedBackend``, so the calls two variants have in common (the same prompt and
settings, seeded sampling) are generated once.  LM calls and tokens are counted per question as ``seakr eval``
counts them; the seconds are not comparable between variants (shared calls are free to the later ones): time a
variant with ``bench/timing.sh``.  Results go to ``OUT/DATASET/NAME.jsonl`` (resumable, as ``seakr eval``'s).

    python experiments/loop_variants.py --dataset hotpotqa --lines 200-299 --out runs/loops \\
        --variant "default=" --variant "three-steps=--rules default step-limit.max_steps=3" \
        --variant "mentions=--rules default claim-check.backing=mention"
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import replace
from pathlib import Path

from seakr_integrations.backends.cached import CachedBackend
from seakr_integrations.cli import build_parser
from seakr_integrations.cli.backend import model_backend
from seakr_integrations.cli.config_options import calibrated, seakr_config
from seakr_integrations.cli.questions import load_questions, use_dataset_files
from seakr_integrations.cli.retriever_options import checked_retriever
from seakr_integrations.evaluation import ResultsFile, evaluate, make_method
from seakr_integrations.evaluation.methods import check_method
from seakr_integrations.reasoning import SeaKRConfig


def eval_args(dataset: str, options: str) -> argparse.Namespace:
    """``seakr eval``'s parsed options for ``dataset`` and one variant's ``options``; ``RULE.PARAM=VALUE`` words
    set a rule's parameter (``claim-check.backing=page``), kept in ``args.rule_params``."""
    words = shlex.split(options)
    params = [w for w in words if "=" in w and not w.startswith("-") and "." in w.partition("=")[0]]
    args = build_parser().parse_args(["eval", "--dataset", dataset, "-q", *[w for w in words if w not in params]])
    args.rule_params = params
    use_dataset_files(args)
    return args


def with_params(config: SeaKRConfig, params: list[str]) -> SeaKRConfig:
    """``config`` with each ``RULE.PARAM=VALUE`` set (a number where it reads as one)."""
    rules = list(config.rules)
    for item in params:
        target, _, value = item.partition("=")
        rule, _, param = target.partition(".")
        i = next((n for n, r in enumerate(rules) if r.name == rule), None)
        if i is None:
            raise ValueError(f"{item}: no rule {rule!r} in {[r.name for r in rules]}")
        try:
            number: object = float(value) if "." in value else int(value)
        except ValueError:
            number = value
        rules[i] = replace(rules[i], **{param: number})
    return config.with_(rules=tuple(rules))


def lines(text: str) -> range:
    start, _, end = text.partition("-")
    return range(int(start), int(end) + 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="hotpotqa, 2wiki, or a question file")
    parser.add_argument("--lines", required=True, type=lines, help="0-based line range, e.g. 200-299")
    parser.add_argument("--fold", default=None, help="keep the lines with i %% 5 in these digits, e.g. 1 or 234")
    parser.add_argument("--variant", action="append", required=True, help="NAME=SEAKR-EVAL-OPTIONS, repeatable")
    parser.add_argument("--out", type=Path, required=True, help="results root: OUT/DATASET/NAME.jsonl")
    parser.add_argument("--batch-size", type=int, default=8)
    opts = parser.parse_args()
    variants = [v.partition("=")[::2] for v in opts.variant]
    parsed = [(name, eval_args(opts.dataset, text)) for name, text in variants]
    for _, args in parsed:
        for method in args.method or ["seakr"]:
            check_method(method)
    base = parsed[0][1]
    questions = load_questions(eval_args(opts.dataset, "--start 0"))
    keep = [i for i in opts.lines if opts.fold is None or str(i % 5) in opts.fold]
    questions = [questions[i] for i in keep if i < len(questions)]
    retriever, where = checked_retriever(base, questions)
    dataset = Path(base.dataset).stem.removesuffix("_dev")
    with model_backend(base) as model:
        backend = CachedBackend(model)
        for name, args in parsed:
            config = calibrated(args, backend, with_params(seakr_config(args), args.rule_params))
            options = {"train_results": args.train_results, "skr_k": args.skr_k} if args.train_results else {}
            (method_name,) = args.method or ["seakr"]
            method = make_method(method_name, backend, retriever, config, **options)
            setup = {**method.describe(), "variant": name, "dataset": Path(base.dataset).name, "retriever": where}
            out = opts.out / dataset / f"{name}.jsonl"
            out.parent.mkdir(parents=True, exist_ok=True)
            with ResultsFile.open(out, setup) as results:
                summary = evaluate(method, questions, results, batch_size=opts.batch_size, progress=False)
            print(
                f"{dataset} {name}: F1 {100 * summary.f1:.1f} EM {100 * summary.em:.1f} ({summary.questions} q; "
                f"{summary.retrievals:.2f} searches, {summary.lm_calls:.1f} LM calls, {summary.generated_tokens:.0f} "
                f"tokens a question)",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
