"""Build a back-end from a name, once per process: ``shared_backend`` keys its cache on the model's resolved directory
(why: docs/design/backends.md)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Literal, get_args

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.models import DEFAULT_MODEL, packaged_model, resolve_model

__all__ = ["BACKEND_KINDS", "BackendKind", "canonical_model_name", "load_backend", "shared_backend"]

BackendKind = Literal["hf", "vllm"]
BACKEND_KINDS: tuple[str, ...] = get_args(BackendKind)

_shared: dict[tuple[str, str, tuple[tuple[str, Any], ...]], SelfAwareBackend] = {}
_lock = threading.Lock()


def _check_kind(kind: object) -> str:
    if kind not in BACKEND_KINDS:
        raise ValueError(f"backend={kind!r}: choose one of {BACKEND_KINDS}, or pass a SelfAwareBackend instance")
    return str(kind)


def canonical_model_name(model: str | os.PathLike[str]) -> str:
    """The name a back-end loaded from ``model`` reports: a packaged model's own name whatever alias was used
    (traces and calibration profiles are filed under it), else the path as given."""
    text = str(model)
    if Path(text).expanduser().is_dir():
        return text
    packaged = packaged_model(text)
    return packaged.name if packaged is not None else text


def load_backend(kind: str = "hf", model: str = DEFAULT_MODEL, **options: Any) -> SelfAwareBackend:
    """A new back-end: ``"hf"`` (Hugging Face transformers, float32 on CPU by default) or ``"vllm"``.

    Args:
        model: A short name from ``seakr models``, a local model directory or a Hugging Face id (``org/name``).
        **options: Passed to the back-end's constructor (``dtype``, ``device``, ``max_model_len``...).

    Raises:
        ValueError: Unknown ``kind`` (or, from the back-end, an unknown model).
    """
    kind = _check_kind(kind)
    if kind == "vllm":
        # vLLM logs to stdout by default, which would mix with an application's output.
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
        from seakr_integrations.backends.vllm import VLLMBackend

        return VLLMBackend(model, **{"dtype": "auto", **options})
    from seakr_integrations.backends.hf import HFBackend

    return HFBackend(model, **{"dtype": "float32", **options})


def shared_backend(kind: str = "hf", model: str = DEFAULT_MODEL, **options: Any) -> SelfAwareBackend:
    """``load_backend``, but one instance per (kind, resolved model directory, options) within this process
    (thread-safe): ``"smollm2"`` and ``"smollm2-135m-instruct"`` share one loaded model.  A ``ValueError`` for an
    unknown ``kind`` or model (the message lists the choices)."""
    kind = _check_kind(kind)
    with _lock:  # resolving may convert a packaged model: once, not once per thread
        path = Path(resolve_model(model)).resolve()
        key = (kind, str(path), tuple(sorted(options.items())))
        if key not in _shared:
            _shared[key] = load_backend(kind, canonical_model_name(model), **options)
        return _shared[key]
