"""The back-end a command runs on, built from the model options (``model_options``).  :func:`build_backend` is the
seam a test replaces with a scripted model (``monkeypatch.setattr(backend, "build_backend", ...)``):
:func:`model_backend`, through which every command reaches it, looks it up here at each call."""

from __future__ import annotations

import argparse
import os
import sys

from seakr_integrations.cli.model_options import check_server_options

__all__ = ["build_backend", "model_backend", "quiet_vllm_start"]


def build_backend(args: argparse.Namespace):  # noqa: ANN202 - returns a SelfAwareBackend
    """The back-end ``--server``, or ``--backend``, ``--model`` and ``--dtype`` name."""
    if getattr(args, "server", None):
        check_server_options(args)
        from seakr_integrations.backends.remote import RemoteBackend
        from seakr_integrations.backends.remote_checks import check_api_key

        key = check_api_key(os.environ.get("SEAKR_API_KEY") or None, "SEAKR_API_KEY")
        return RemoteBackend(args.server, api_key=key, timeout=args.timeout)
    from seakr_integrations.backends.loading import load_backend

    if args.backend == "vllm":
        from seakr_integrations.backends.vllm_settings import single_process_environment

        os.environ.update(single_process_environment())  # a command's engine runs in its own process
        if not getattr(args, "engine_output", False):
            quiet_vllm_start()
    return load_backend(args.backend, args.model, **({"dtype": args.dtype} if args.dtype else {}))


def quiet_vllm_start() -> None:
    """Keep vLLM's start-up log lines and torch FutureWarnings (here and in the engine's processes) off a command's
    terminal; a user's own ``VLLM_LOGGING_LEVEL`` or ``PYTHONWARNINGS`` is kept."""
    import warnings

    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")  # read by the engine's processes at start
    if not sys.warnoptions:
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"vllm\.")


def model_backend(args: argparse.Namespace):  # noqa: ANN202 - returns a SelfAwareBackend
    """The back-end a command runs on, built by :func:`build_backend` (looked up at each call, so that a test can
    replace it with a scripted model).  Without ``--dtype``, the model's own (``models.default_dtype``) is filled in
    first, so that results files record the precision that ran."""
    from seakr_integrations.models import default_dtype

    if getattr(args, "dtype", None) is None and not getattr(args, "server", None):
        args.dtype = default_dtype(args.model)
    return build_backend(args)
