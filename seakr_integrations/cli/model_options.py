"""The options that choose the model a command runs on: the one it loads (``--model``, ``--backend``, ``--dtype``)
or a server's (``--server``, ``--timeout``), and the refusal of the first beside ``--server``, whose model answers
instead."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_model_arguments", "add_server_arguments", "check_server_options"]


class _Given(argparse.Action):
    """Store the value and note that the user gave the option (``args.given_model_options``): with ``--server``
    the server's model answers, and an in-process model's options would be dropped without a word."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        given = set(getattr(namespace, "given_model_options", ()))
        namespace.given_model_options = given | {option or self.dest}


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """``--model``, ``--backend`` and ``--dtype``, defaulting to the reference model every command runs."""
    from seakr_integrations.backends.loading import BackendKind
    from seakr_integrations.models import REFERENCE_BACKEND, REFERENCE_DTYPE, REFERENCE_MODEL
    from seakr_integrations.params import choices

    p.add_argument(
        "--model",
        action=_Given,
        default=REFERENCE_MODEL,
        help=f"short name, local model directory or Hugging Face id, org/name[@revision] (default {REFERENCE_MODEL}, "
        "the model the results are reported on; smollm2 is smaller and faster to start, too small to reason over "
        "several passages)",
    )
    p.add_argument(
        "--backend",
        action=_Given,
        choices=choices(BackendKind),
        default=REFERENCE_BACKEND,
        help=f"default {REFERENCE_BACKEND}",
    )
    p.add_argument(
        "--dtype",
        action=_Given,
        default=None,
        help=f"weights dtype (default: {REFERENCE_DTYPE} for a packaged model, the precision its shipped calibration "
        "profiles were made in; the checkpoint's own, auto, for any other)",
    )


def add_server_arguments(p: argparse.ArgumentParser) -> None:
    """``--server`` and its ``--timeout``: the model of a running server instead of one loaded here."""
    from seakr_integrations.backends.remote_checks import DEFAULT_TIMEOUT

    p.add_argument(
        "--server",
        metavar="URL",
        default=None,
        help="use the model of a `seakr serve` server instead of loading one (its API key from $SEAKR_API_KEY); "
        "a plain OpenAI-compatible server such as a stock `vllm serve` works with --estimator perplexity (or another "
        "estimator that reads logprobs only)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"with --server: seconds one request to the server may take, its retries included (default "
        f"{DEFAULT_TIMEOUT:g}); a server that does not answer in time is an error naming its URL",
    )


def check_server_options(args: argparse.Namespace) -> None:
    """Refuse ``--model``, ``--backend`` or ``--dtype`` given beside ``--server``: the server's model answers, and
    they would be dropped without a word.  Called before the index opens and again where the back-end is built."""
    given = sorted(getattr(args, "given_model_options", ()))
    if getattr(args, "server", None) and given:
        verb = "choose" if len(given) > 1 else "chooses"
        raise ValueError(
            f"{' and '.join(given)} {verb} a model to load here, but --server answers with the model it serves: leave "
            f"{'them' if len(given) > 1 else 'it'} out (the server's own options choose its model), or leave out "
            "--server"
        )
