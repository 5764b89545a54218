"""``seakr models``: list the models that install from PyPI, each with the model folder a server loads."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    models = sub.add_parser(
        "models", help="list the models that install from PyPI and the model folder of each (for `vllm serve`)"
    )
    models.add_argument(
        "--convert",
        metavar="NAME",
        default=None,
        help="convert this model into its folder now (otherwise its first use does), e.g. before a plain vllm serve",
    )
    models.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seakr_integrations.models import PACKAGED_MODELS, cache_dir, model_dir, packaged_model, resolve_model

    if args.convert is not None:
        if packaged_model(args.convert) is None:
            names = ", ".join(m.name for m in PACKAGED_MODELS)
            raise ValueError(f"--convert {args.convert!r}: not a packaged model; choose one of {names}")
        print(resolve_model(args.convert))
        return 0
    for m in PACKAGED_MODELS:
        aliases = f" (aliases: {', '.join(m.aliases)})" if m.aliases else ""
        path, ready = model_dir(m.name)
        state = "" if ready else f" (not converted yet: `seakr models --convert {m.name}`, or its first use)"
        print(f"{m.name}{aliases}\n    {m.hf_id}, {m.license}\n    install: {m.pip}\n    model folder: {path}{state}")
    print(f"converted models are cached in {cache_dir() / 'models'} (set SEAKR_CACHE_DIR to move it)")
    return 0
