"""Generic decoder-layer / MLP discovery across Llama-style architectures, and a clear error otherwise."""

import pytest
import torch
from torch import nn
from transformers import (
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from seakr_integrations.backends.architecture import find_decoder_layers, find_mlp

SMALL = {
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 3,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 16,
}


@pytest.mark.parametrize(
    ("config_cls", "model_cls"),
    [
        (LlamaConfig, LlamaForCausalLM),
        (Qwen2Config, Qwen2ForCausalLM),
        (MistralConfig, MistralForCausalLM),
        (Gemma3TextConfig, Gemma3ForCausalLM),
    ],
)
def test_llama_style_stacks_are_found(config_cls, model_cls):
    model = model_cls(config_cls(**SMALL))
    layers = find_decoder_layers(model)
    assert len(layers) == 3
    assert find_mlp(layers[0]) is layers[0].mlp


def test_unknown_architecture_names_itself():
    class Weird(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])

    with pytest.raises(ValueError, match="Weird.*Llama-style"):
        find_decoder_layers(Weird())


def test_hf_backend_rejects_unknown_architecture_at_construction():
    from seakr_integrations.backends.hf import HFBackend

    class NoLayers(nn.Module):
        config = LlamaConfig(**SMALL)

        def forward(self, x):
            return x

    with pytest.raises(ValueError, match="NoLayers"):
        HFBackend(NoLayers(), tokenizer=object(), device="cpu")
    torch.manual_seed(0)
