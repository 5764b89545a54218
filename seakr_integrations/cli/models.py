"""``seakr models``: list the models that install from PyPI."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    models = sub.add_parser("models", help="list the models that install from PyPI")
    models.set_defaults(func=run)


def run(_args: argparse.Namespace) -> int:
    from seakr_integrations.models import PACKAGED_MODELS, cache_dir

    for m in PACKAGED_MODELS:
        aliases = f" (aliases: {', '.join(m.aliases)})" if m.aliases else ""
        print(f"{m.name}{aliases}\n    {m.hf_id}, {m.license}\n    install: {m.pip}")
    print(f"converted models are cached in {cache_dir() / 'models'} (set SEAKR_CACHE_DIR to move it)")
    return 0
