"""Find the decoder layers and their MLP in a Llama-style model, whatever class wraps them: both back-ends hook the
same two places, and vLLM's re-implementations keep Hugging Face's ``model.layers[i].mlp`` layout."""

from __future__ import annotations

import functools

from torch import nn

# Known locations first (cheap and unambiguous); a generic search over ModuleLists follows.
_LAYER_PATHS = (
    "model.layers",  # Llama, Qwen2, Mistral, Gemma 3 text (HF and vLLM)
    "model.language_model.layers",  # Gemma 3 multimodal wrappers
    "language_model.model.layers",
    "model.decoder.layers",
    "layers",
)
_MLP_NAMES = ("mlp", "feed_forward", "ffn")


def find_mlp(layer: nn.Module) -> nn.Module | None:
    """The MLP sub-block of a decoder layer, or ``None`` if it has none under a known name."""
    for name in _MLP_NAMES:
        sub = getattr(layer, name, None)
        if isinstance(sub, nn.Module):
            return sub
    return None


def find_decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The decoder layer stack of ``model``; a ``ValueError`` naming the architecture when no stack of layers with an
    MLP sub-block is found."""
    for path in _LAYER_PATHS:
        layers = functools.reduce(lambda obj, part: getattr(obj, part, None), path.split("."), model)
        if isinstance(layers, nn.ModuleList) and len(layers) > 0 and find_mlp(layers[0]) is not None:
            return layers
    stacks = [m for m in model.modules() if isinstance(m, nn.ModuleList) and len(m) > 1 and find_mlp(m[0]) is not None]
    if stacks:
        return max(stacks, key=len)
    archs = getattr(getattr(model, "config", None), "architectures", None)
    architecture = f"{type(model).__name__} (config architectures: {archs})" if archs else type(model).__name__
    raise ValueError(
        f"cannot find the decoder layers of {architecture}: seakr reads hidden states from Llama-style "
        "stacks (Llama, Qwen2, Gemma 3, Mistral), i.e. a ModuleList of decoder layers that each hold an "
        f"MLP sub-module named one of {_MLP_NAMES}"
    )
