"""Weights vLLM's CPU worker keeps twice (vocabulary-sized layers packed for its kernels keep their plain weights too),
released once the model is loaded where a probe proves the kernel never reads them (docs/design/backends.md)."""

from __future__ import annotations

from typing import Any

import torch

from seakr_integrations.backends.vllm_settings import LOAD_FORMAT


def _vocab_modules(model: torch.nn.Module) -> tuple[torch.nn.Module | None, list[torch.nn.Module]]:
    """The model's output layer (``lm_head``, if a module) and its vocabulary embeddings (modules with a 2-D weight of
    the output layer's shape, the output layer itself excepted)."""
    head = getattr(model, "lm_head", None)
    if type(head).__name__ != "ParallelLMHead" or not isinstance(getattr(head, "weight", None), torch.Tensor):
        return None, []  # no output layer, or one that is also the lookup (its plain weight is read)
    shape = tuple(head.weight.shape)
    embeddings = [
        m
        for m in model.modules()
        if m is not head
        and isinstance(getattr(m, "weight", None), torch.Tensor)
        and tuple(m.weight.shape) == shape
        and type(m).__name__ == "VocabParallelEmbedding"
    ]
    return head, embeddings


def _kernel_ignores_weight(layer: torch.nn.Module) -> bool:
    """Whether the layer's CPU kernel computes ``x @ weight.T`` without reading the weight it is passed: it then holds
    a packed copy of its own (vLLM's fallback kernel, torch's linear on the weight, fails the probe)."""
    linear = getattr(layer, "cpu_linear", None)
    weight = layer.weight
    if linear is None or weight.ndim != 2 or weight.numel() == 0 or weight.is_meta:
        return False
    probe = torch.linspace(-1.0, 1.0, 2 * weight.shape[1], dtype=weight.dtype).reshape(2, weight.shape[1])
    bias = getattr(layer, "bias", None)
    try:
        with torch.no_grad():
            packed = linear(probe, torch.empty(0, dtype=weight.dtype), bias)
            plain = torch.nn.functional.linear(probe, weight, bias)
    except (RuntimeError, TypeError, ValueError):  # the kernel reads the weight (or takes other arguments)
        return False
    tolerance = 1e-2 if weight.dtype in (torch.float16, torch.bfloat16) else 1e-4
    return packed.shape == plain.shape and torch.allclose(packed.float(), plain.float(), rtol=tolerance, atol=tolerance)


RELEASED_BYTES = "_seakr_released_bytes"
"""The model's attribute that counts every byte freed here, across calls (the loader's and the hook's)."""


def _engine_reads_plain_head(vllm_config: Any) -> bool:
    """Whether vLLM may read the output layer's plain weight itself: speculative decoding (a draft model compares and
    shares heads by their weights) or logits computed in another dtype than the model's (``F.linear`` on the weight)."""
    if vllm_config is None:
        return False
    model_config = getattr(vllm_config, "model_config", None)
    head_dtype = getattr(model_config, "head_dtype", None)
    return getattr(vllm_config, "speculative_config", None) is not None or (
        head_dtype is not None and head_dtype != getattr(model_config, "dtype", head_dtype)
    )


def release_duplicate_vocab_weights(model: torch.nn.Module, vllm_config: Any = None) -> dict[str, int]:
    """Free the vocabulary-sized copies a CPU model's forward pass never reads (nothing on other devices, or when
    ``vllm_config`` lets vLLM read the plain weights); returns what this call freed (bytes) and adds it to the model's
    ``RELEASED_BYTES``."""
    head, embeddings = _vocab_modules(model)
    freed = {"embedding_packed_bytes": 0, "output_plain_bytes": 0}
    if head is None or head.weight.device.type != "cpu" or _engine_reads_plain_head(vllm_config):
        return freed
    weight_bytes = head.weight.numel() * head.weight.element_size()
    for embedding in embeddings:  # tied or not, the output layer is another module with a kernel of its own
        if "cpu_linear" in vars(embedding) and _kernel_ignores_weight(embedding):  # a copy the lookup never uses
            del embedding.cpu_linear
            freed["embedding_packed_bytes"] += weight_bytes
    tied = any(e.weight is head.weight for e in embeddings)
    if not tied and _kernel_ignores_weight(head):
        head.weight = torch.nn.Parameter(torch.empty(0, dtype=head.weight.dtype), requires_grad=False)
        freed["output_plain_bytes"] = weight_bytes
    setattr(model, RELEASED_BYTES, getattr(model, RELEASED_BYTES, 0) + sum(freed.values()))
    return freed


def register_loader() -> None:
    """Register ``LOAD_FORMAT`` with vLLM, once per process.  ``vllm_worker`` calls it when vLLM imports it into a
    worker (before the model loads); a process without vLLM registers nothing."""
    try:
        from vllm.model_executor.model_loader import register_model_loader
        from vllm.model_executor.model_loader.default_loader import DefaultModelLoader
    except ImportError:
        return
    import dataclasses

    if getattr(register_loader, "done", False):
        return

    class SeaKRModelLoader(DefaultModelLoader):
        """vLLM's default loader; on CPU the duplicate vocabulary-sized weights are freed as soon as they exist."""

        def __init__(self, load_config: Any) -> None:
            super().__init__(dataclasses.replace(load_config, load_format="auto"))

        def load_model(self, vllm_config: Any, model_config: Any, prefix: str = "") -> torch.nn.Module:
            model = super().load_model(vllm_config, model_config, prefix)
            release_duplicate_vocab_weights(model, vllm_config)
            return model

    register_model_loader(LOAD_FORMAT)(SeaKRModelLoader)
    register_loader.done = True  # type: ignore[attr-defined]
