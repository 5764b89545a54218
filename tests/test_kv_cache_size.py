"""The CPU KV cache is sized to SeaKR's request shape (one prompt shared by a greedy continuation and k samples, plus
their read-outs), not to vLLM's default 4 GiB; a user's own size wins."""

from __future__ import annotations

import json
import math

import pytest

from seakr_integrations.backends.vllm_settings import (
    CPU_BLOCK_SIZE,
    KV_CACHE_PROMPTS,
    SERVER_KV_CACHE_PROMPTS,
    cpu_engine_settings,
    engine_environment,
    kv_bytes_per_token,
    kv_cache_blocks,
    kv_cache_bytes,
)

QWEN_05B = {
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "hidden_size": 896,
    "max_position_embeddings": 32768,
    "torch_dtype": "float32",
}
"""Qwen2.5-Coder-0.5B's shape, as the converted checkpoint's config.json gives it."""


@pytest.fixture
def qwen(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN_05B))
    return tmp_path


def test_bytes_per_token_are_keys_and_values_of_every_layer(qwen):
    assert kv_bytes_per_token(qwen) == 2 * 24 * 2 * 64 * 4  # head size 896 / 14
    assert kv_bytes_per_token(qwen, "bfloat16") == 2 * 24 * 2 * 64 * 2
    (qwen / "config.json").write_text(json.dumps({**QWEN_05B, "head_dim": 128, "torch_dtype": "bfloat16"}))
    assert kv_bytes_per_token(qwen) == 2 * 24 * 2 * 128 * 2


def test_blocks_cover_the_prompt_each_samples_own_blocks_and_the_readouts():
    blocks = kv_cache_blocks(8192, prompts=1, k=20, max_tokens=100, block_size=32)
    assert blocks == 8192 // 32 + 20 * (1 + math.ceil(100 / 32)) + 20
    assert kv_cache_blocks(8192, prompts=3, k=20, max_tokens=100, block_size=32) == 3 * blocks
    # vLLM refuses a cache that cannot hold one request of the whole context
    assert kv_cache_blocks(8192, prompts=1, k=0, max_tokens=100, block_size=32) * 32 >= 8192


def test_the_main_jobs_cache_is_under_a_gigabyte(qwen):
    size = kv_cache_bytes(qwen, 8192)
    blocks = kv_cache_blocks(8192, prompts=KV_CACHE_PROMPTS, k=20, max_tokens=100, block_size=CPU_BLOCK_SIZE)
    assert size == blocks * CPU_BLOCK_SIZE * 24576
    assert 0.5e9 < size < 1e9  # vLLM's CPU default is 4 GiB; seakr set 2 GiB before
    server = kv_cache_bytes(qwen, 8192, prompts=SERVER_KV_CACHE_PROMPTS)
    assert server == size // KV_CACHE_PROMPTS * SERVER_KV_CACHE_PROMPTS


def test_cpu_settings_carry_the_size_only_when_given():
    assert "kv_cache_memory_bytes" not in cpu_engine_settings(8192)
    assert cpu_engine_settings(8192, 123)["kv_cache_memory_bytes"] == 123


def test_no_kv_environment_unless_asked(monkeypatch):
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    assert "VLLM_CPU_KVCACHE_SPACE" not in engine_environment(on_cpu=True)
    assert engine_environment(on_cpu=True, kv_cache_space_gib=3)["VLLM_CPU_KVCACHE_SPACE"] == "3"


def test_the_server_gets_a_sized_cache_unless_the_user_sizes_it(qwen, monkeypatch):
    from seakr_integrations.serving.launch import serve_command

    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    args, _ = serve_command(str(qwen), on_cpu=True)
    size = kv_cache_bytes(qwen, 8192, prompts=SERVER_KV_CACHE_PROMPTS)
    assert args[args.index("--kv-cache-memory-bytes") + 1] == str(size)
    args, _ = serve_command(str(qwen), ["--dtype", "bfloat16"], on_cpu=True)
    assert args[args.index("--kv-cache-memory-bytes") + 1] == str(size // 2)
    args, _ = serve_command(str(qwen), ["--kv-cache-memory-bytes", "1000000000"], on_cpu=True)
    assert args.count("--kv-cache-memory-bytes") == 1
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "4")
    args, _ = serve_command(str(qwen), on_cpu=True)
    assert "--kv-cache-memory-bytes" not in args


@pytest.mark.vllm
@pytest.mark.parametrize(("given", "expected"), [({}, "sized"), ({"kv_cache_space_gib": 3}, None)])
def test_the_backend_starts_its_cpu_engine_with_the_sized_cache(qwen, monkeypatch, given, expected):
    pytest.importorskip("vllm", reason="vLLM is not installed")
    from vllm.platforms import current_platform

    from seakr_integrations.backends import vllm as vllm_backend

    if not current_platform.is_cpu():
        pytest.skip("the sized cache is a CPU setting")
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    seen = {}

    def start(vllm, path, dtype, context, eager, seed, kwargs):
        seen.update(kwargs, context=context)
        raise RuntimeError("no model here")

    monkeypatch.setattr(vllm_backend.VLLMBackend, "_start_engine", staticmethod(start))
    with pytest.raises(RuntimeError, match="no model here"):
        vllm_backend.VLLMBackend(qwen, **given)
    sized = kv_cache_bytes(qwen, seen["context"])
    assert seen.get("kv_cache_memory_bytes") == (sized if expected == "sized" else None)


def test_a_command_runs_its_engine_in_its_own_process_unless_the_user_says_otherwise(monkeypatch):
    from seakr_integrations.backends.vllm_settings import single_process_environment

    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    assert single_process_environment() == {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    assert single_process_environment() == {}
