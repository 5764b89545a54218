"""``seakr serve MODEL``: vLLM's OpenAI-compatible server plus seakr's self-aware routes (``/v1/seakr/...``)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve a model with vLLM's OpenAI-compatible server plus seakr's self-aware routes (/v1/seakr/...)",
        description="Starts `vllm serve MODEL` with seakr's plugin and the settings its read-out needs, in float32 "
        "(the shipped calibration profiles' dtype); binds 127.0.0.1 unless --host is given. Every option after "
        "MODEL goes to vllm serve unchanged and wins over these (--dtype bfloat16, --port 8001...).",
    )
    serve.add_argument(
        "model",
        help="a short name (`seakr models`), a local model directory or a Hugging Face id (org/name[@revision])",
    )
    serve.add_argument(
        "--dry-run", action="store_true", help="print the exact command line it runs and exit (converts nothing)"
    )
    serve.add_argument(
        "--join",
        metavar="URL",
        help="a replica of the seakr server at URL (behind the same load balancer): refuse to start when this one "
        "would serve another model, weights, layer, source or dtype (compared with URL's /v1/seakr/info)",
    )
    serve.add_argument("vllm_args", nargs=argparse.REMAINDER, help="options for vllm serve (e.g. --port 8001)")
    serve.set_defaults(func=run)


SEAKR_OPTIONS = ("--dry-run", "--join")
"""``seakr serve``'s own options: after MODEL they would go to vllm serve, which does not know them."""


def run(args: argparse.Namespace) -> int:
    from seakr_integrations.serving.launch import serve

    for option in SEAKR_OPTIONS:
        if any(a == option or a.startswith(option + "=") for a in args.vllm_args):
            raise ValueError(
                f"{option} is seakr serve's own option, and every option after MODEL goes to vllm serve: put it "
                f"before the model (seakr serve {option}{' URL' if option == '--join' else ''} {args.model} ...)"
            )
    return serve(args.model, args.vllm_args, dry_run=args.dry_run, join=args.join)
