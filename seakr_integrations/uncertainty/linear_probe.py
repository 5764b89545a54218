"""A linear probe on one hidden state: the probability that a label holds ("retrieval helps", "the claim is
wrong"), read from the greedy continuation's vector at EOS, with no samples (Semantic Entropy Probes, Kossen et al.
2024; Probing-RAG, Baek et al. 2025).

Pure arithmetic on a vector; the weights come from ``seakr calibrate --probe`` (``evaluation.probe_fit``) and live
in a calibration profile as plain lists of numbers, never a pickle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["LinearProbe"]


@dataclass(frozen=True)
class LinearProbe:
    """``sigmoid(w . (x - mean) / scale + b)`` on a hidden state ``x``.

    Attributes:
        layer: The 0-based decoder layer whose vector it reads.
        source: ``"mlp"`` or ``"residual"`` (as ``SamplingConfig.source``).
        label: What it predicts (``"retrieval helps"``, ``"claim wrong"``): higher is more in need of retrieval.
        mean, scale: The training vectors' per-dimension mean and standard deviation.
        weights, bias: The logistic regression's coefficients on the standardised vector.
        penalty: The L2 strength it was fitted with.
        trained_on: What it was trained on (question file and lines), as recorded.
    """

    layer: int
    source: str
    label: str
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    penalty: float
    trained_on: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        sizes = {len(self.mean), len(self.scale), len(self.weights)}
        if len(sizes) != 1:
            raise ValueError(f"a probe's mean, scale and weights must have one length, got {sorted(sizes)}")
        if any(not np.isfinite(v) for v in (*self.mean, *self.scale, *self.weights, self.bias)):
            raise ValueError("a probe's numbers must be finite")

    @property
    def width(self) -> int:
        return len(self.weights)

    def probabilities(self, vectors: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
        """The probability of the label for each row of ``vectors`` ``(n, width)``."""
        x = np.asarray(vectors, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.width:
            raise ValueError(f"the probe reads vectors of width {self.width}, got shape {x.shape}")
        z = ((x - np.asarray(self.mean)) / np.asarray(self.scale)) @ np.asarray(self.weights) + self.bias
        return 1.0 / (1.0 + np.exp(-z))

    def probability(self, vector: np.ndarray | Sequence[float]) -> float:
        return float(self.probabilities(np.asarray(vector, dtype=np.float64)[None, :])[0])

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON numbers, as a profile stores them."""
        return {
            "layer": self.layer,
            "source": self.source,
            "label": self.label,
            "mean": [float(v) for v in self.mean],
            "scale": [float(v) for v in self.scale],
            "weights": [float(v) for v in self.weights],
            "bias": float(self.bias),
            "penalty": float(self.penalty),
            "trained_on": dict(self.trained_on),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinearProbe:
        try:
            return cls(
                layer=int(data["layer"]),
                source=str(data["source"]),
                label=str(data["label"]),
                mean=tuple(float(v) for v in data["mean"]),
                scale=tuple(float(v) for v in data["scale"]),
                weights=tuple(float(v) for v in data["weights"]),
                bias=float(data["bias"]),
                penalty=float(data["penalty"]),
                trained_on=dict(data.get("trained_on") or {}),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"not a stored linear probe ({type(err).__name__}: {err})") from None
