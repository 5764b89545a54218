"""``seakr serve MODEL``: vLLM's OpenAI-compatible server plus seakr's self-aware routes (``/v1/seakr/...``)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve a model with vLLM's OpenAI-compatible server plus seakr's self-aware routes (/v1/seakr/...)",
        description="Starts `vllm serve MODEL` with seakr's plugin and the settings its read-out needs; binds "
        "127.0.0.1 unless --host is given. Every option after MODEL goes to vllm serve unchanged.",
    )
    serve.add_argument("model", help="a short name (`seakr models`) or a local model directory")
    serve.add_argument("--dry-run", action="store_true", help="print the vllm serve command line and exit")
    serve.add_argument("vllm_args", nargs=argparse.REMAINDER, help="options for vllm serve (e.g. --port 8001)")
    serve.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seakr_integrations.serving.launch import serve

    return serve(args.model, args.vllm_args, dry_run=args.dry_run)
