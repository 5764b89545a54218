"""Find the decoder layers and their MLP in a Llama-style model, whatever class wraps them: both back-ends hook the
same two places, and vLLM's re-implementations keep Hugging Face's ``model.layers[i].mlp`` layout."""

from __future__ import annotations

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


def _architecture(model: nn.Module) -> str:
    config = getattr(model, "config", None)
    archs = getattr(config, "architectures", None)
    return f"{type(model).__name__} (config architectures: {archs})" if archs else type(model).__name__


def _get_path(obj: object, path: str) -> object | None:
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def find_mlp(layer: nn.Module) -> nn.Module | None:
    """The MLP sub-block of a decoder layer, or ``None`` if it has none under a known name."""
    for name in _MLP_NAMES:
        sub = getattr(layer, name, None)
        if isinstance(sub, nn.Module):
            return sub
    return None


def find_decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The decoder layer stack of ``model``.

    Raises:
        ValueError: Naming the architecture, when no stack of layers with an MLP sub-block is found.
    """
    for path in _LAYER_PATHS:
        layers = _get_path(model, path)
        if isinstance(layers, nn.ModuleList) and len(layers) > 0 and find_mlp(layers[0]) is not None:
            return layers
    stacks = [
        (name, mod)
        for name, mod in model.named_modules()
        if isinstance(mod, nn.ModuleList) and len(mod) > 1 and find_mlp(mod[0]) is not None
    ]
    if stacks:
        return max(stacks, key=lambda nm: len(nm[1]))[1]
    raise ValueError(
        f"cannot find the decoder layers of {_architecture(model)}: seakr reads hidden states from Llama-style "
        "stacks (Llama, Qwen2, Gemma 3, Mistral), i.e. a ModuleList of decoder layers that each hold an "
        f"MLP sub-module named one of {_MLP_NAMES}"
    )
