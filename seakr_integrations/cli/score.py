"""``seakr score QUESTION``: answer closed-book and say how uncertain the model is (the signal SeaKR's
retrieval gate reads).
"""

from __future__ import annotations

import argparse
import json

from seakr_integrations.cli.backend import model_backend
from seakr_integrations.cli.model_options import add_model_arguments

SCORE_MAX_TOKENS = 64
"""``seakr score``'s --max-tokens: a closed-book answer is one short sentence, and scoring should be quick."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from seakr_integrations.params import HiddenSource, SamplingConfig, choices
    from seakr_integrations.reasoning import SeaKRConfig
    from seakr_integrations.uncertainty.registry import estimator_names

    s = SamplingConfig()
    score = sub.add_parser("score", help="answer a question closed-book and report the model's uncertainty")
    score.add_argument("question")
    add_model_arguments(score)
    score.add_argument("-k", type=int, default=s.k, help=f"number of samples (default {s.k})")
    score.add_argument("--max-tokens", type=int, default=SCORE_MAX_TOKENS)
    score.add_argument("--layer", type=int, default=s.layer, help="0-based layer (default L/2 - 1)")
    score.add_argument("--source", choices=choices(HiddenSource), default=s.source)
    score.add_argument("--seed", type=int, default=s.seed)
    score.add_argument(
        "--estimator",
        nargs="+",
        choices=estimator_names(),  # "prompt" makes one more call, the probe
        default=[SeaKRConfig().estimator],
        help="one or more",
    )
    score.add_argument("--no-chat-template", action="store_true", help="send the plain prompt to chat models")
    score.add_argument("--json", action="store_true", help="print a JSON record")
    score.add_argument("-v", "--verbose", action="store_true", help="also print the samples")
    score.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seakr_integrations.backends.scored import probe_scores
    from seakr_integrations.params import SamplingConfig
    from seakr_integrations.uncertainty import REGISTRY, estimate

    if not args.question.strip():
        raise ValueError('the question is empty: pass the question to score, e.g. seakr score "Who wrote Hamlet?"')
    config = SamplingConfig(
        k=args.k, max_tokens=args.max_tokens, layer=args.layer, source=args.source, seed=args.seed, stop=("\n\n",)
    )
    with model_backend(args) as backend:
        text = f"Answer the question briefly.\nQuestion: {args.question.strip()}\nAnswer:"
        prompt = text if args.no_chat_template else backend.chat_prompt(text)
        output = backend.generate([prompt], config)[0]
        timings = dict(backend.last_timings)
        scores = {
            name: probe_scores(backend, [output.prompt], [output], config)[0]
            if "probe" in REGISTRY[name].needs
            else estimate(output, name)
            for name in args.estimator
        }
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
