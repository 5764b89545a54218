"""Sampling parameters of one self-aware LM call, with the SeaKR authors' defaults (SPEC section 4)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

__all__ = ["HiddenSource", "SamplingConfig"]

HiddenSource = Literal["mlp", "residual"]
_SOURCES = ("mlp", "residual")


@dataclass(frozen=True)
class SamplingConfig:
    """How a back-end samples and where it reads the hidden state.

    One greedy continuation is always produced next to the ``k`` samples; it uses the same ``max_tokens`` and
    ``stop`` but temperature 0.

    Attributes:
        k: Number of sampled continuations (SeaKR: 20).  At least 2: EigenScore compares samples with each other;
            0 asks for the greedy continuation alone (no samples, no read-out), for calls whose uncertainty nobody
            reads.
        temperature: Sampling temperature of the k samples.
        top_k: Keep only the ``top_k`` most likely tokens (0 or -1 disables).
        top_p: Nucleus sampling mass (1.0 disables).
        max_tokens: Maximum generated tokens per continuation.
        min_tokens: EOS cannot end a continuation before it has this many tokens (vLLM's ``min_tokens``).  The
            log-probabilities stay those of the unmasked distribution, so a forced token reads as unlikely.
        stop: Stop strings; the text is cut before the first one that appears.
        seed: Seed of the samples' random generator (same seed, same samples on the same back-end).
        layer: 0-based decoder layer whose vector is read; ``None`` means ``num_layers // 2 - 1`` (SeaKR's L/2).
        source: ``"mlp"`` (SeaKR's vector: the MLP output before it joins the residual stream) or ``"residual"``
            (the residual stream after the layer, as INSIDE and HF ``hidden_states[layer + 1]``).
    """

    k: int = 20
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 0.9
    max_tokens: int = 100
    min_tokens: int = 0
    stop: tuple[str, ...] = ()
    seed: int = 42
    layer: int | None = None
    source: HiddenSource = "mlp"

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            raise ValueError(f"stop must be a list of strings, not the string {self.stop!r}: use stop=[{self.stop!r}]")
        object.__setattr__(self, "stop", tuple(self.stop))
        if not isinstance(self.k, int) or self.k < 0 or self.k == 1:
            raise ValueError(
                f"k={self.k!r}: EigenScore compares the k samples with each other, so it needs at least 2 "
                "(SeaKR uses k=20); k=0 asks for the greedy continuation alone"
            )
        if self.temperature < 0:
            raise ValueError(f"temperature={self.temperature}: must be >= 0 (SeaKR samples at 1.0)")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p={self.top_p}: must be in (0, 1] (1.0 disables nucleus sampling)")
        if self.top_k < -1:
            raise ValueError(f"top_k={self.top_k}: must be >= 1, or 0 / -1 to disable")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ValueError(f"max_tokens={self.max_tokens!r}: must be an integer >= 1")
        if not isinstance(self.min_tokens, int) or not 0 <= self.min_tokens <= self.max_tokens:
            raise ValueError(
                f"min_tokens={self.min_tokens!r}: must be an integer from 0 to max_tokens={self.max_tokens}"
            )
        if any(not isinstance(s, str) or s == "" for s in self.stop):
            raise ValueError(f"stop={list(self.stop)!r}: every stop string must be a non-empty string")
        if self.source not in _SOURCES:
            raise ValueError(f"source={self.source!r}: choose one of {_SOURCES}")
        if self.layer is not None and (not isinstance(self.layer, int) or self.layer < 0):
            raise ValueError(f"layer={self.layer!r}: must be a 0-based layer index or None for L/2 - 1")

    def with_(self, **changes: object) -> SamplingConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]
