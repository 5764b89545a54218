"""Build a back-end from a name, once per process.

Framework objects get constructed far more often than models should be loaded: a LangChain chat model is created
per request in some apps, test suites build one per test, and a chain, a retriever and a re-ranker often name the
same model.  ``shared_backend`` loads each (kind, model, options) once and hands the same instance to all of them.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Literal

from seakr_integrations.backends.base import SelfAwareBackend

__all__ = ["BACKEND_KINDS", "BackendKind", "load_backend", "shared_backend"]

BackendKind = Literal["hf", "vllm"]
BACKEND_KINDS = ("hf", "vllm")

_shared: dict[tuple[str, str, tuple[tuple[str, Any], ...]], SelfAwareBackend] = {}
_lock = threading.Lock()


def load_backend(kind: str = "hf", model: str = "smollm2-135m-instruct", **options: Any) -> SelfAwareBackend:
    """A new back-end: ``"hf"`` (Hugging Face transformers, float32 on CPU by default) or ``"vllm"``.

    Args:
        kind: ``"hf"`` or ``"vllm"``.
        model: A short name from ``seakr models`` or a local model directory.
        **options: Passed to the back-end's constructor (``dtype``, ``device``, ``max_model_len``...).

    Raises:
        ValueError: Unknown ``kind`` (or, from the back-end, an unknown model).
    """
    if kind == "vllm":
        # vLLM logs to stdout by default, which would mix with an application's output.
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
        from seakr_integrations.backends.vllm import VLLMBackend

        return VLLMBackend(model, **{"dtype": "auto", **options})
    if kind == "hf":
        from seakr_integrations.backends.hf import HFBackend

        return HFBackend(model, **{"dtype": "float32", **options})
    raise ValueError(f"backend={kind!r}: choose one of {BACKEND_KINDS}, or pass a SelfAwareBackend instance")


def shared_backend(kind: str = "hf", model: str = "smollm2-135m-instruct", **options: Any) -> SelfAwareBackend:
    """``load_backend``, but the same instance for the same arguments within this process (thread-safe)."""
    if kind not in BACKEND_KINDS:
        raise ValueError(f"backend={kind!r}: choose one of {BACKEND_KINDS}, or pass a SelfAwareBackend instance")
    key = (kind, str(model), tuple(sorted(options.items())))
    with _lock:
        if key not in _shared:
            _shared[key] = load_backend(kind, model, **options)
        return _shared[key]
