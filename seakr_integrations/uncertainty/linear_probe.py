"""A linear probe on one hidden state: the probability that a label holds ("retrieval helps", "the claim is
wrong"), read from the greedy continuation's vector at EOS, with no samples (Semantic Entropy Probes, Kossen et al.
2024; Probing-RAG, Baek et al. 2025).

Pure arithmetic on a vector; the weights come from ``seakr calibrate`` with the ``state-probe`` rule
(``evaluation.probe_fit``) and live in a calibration profile, the rule's learned state, as plain lists of numbers,
never a pickle.  A probe knows where it was trained (model,
layer, source, width): read through another model's or layer's vector it would still return a probability, a
meaningless one, so every run that applies it compares the two first (:meth:`LinearProbe.mismatch`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seakr_integrations.profile_names import canonical_model_name
from seakr_integrations.stored import FieldError, check, join
from seakr_integrations.stored_schemas import PROBE, SOURCES

__all__ = ["LinearProbe", "RETRAIN", "stored_probe"]

RETRAIN = "train it again with `seakr calibrate --rules default,state-probe` (it stores the probe in the profile)"
"""What to do about a probe that cannot be applied."""


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
        model: The model it was trained on (read as its canonical name, as profiles name models); ``None`` for a
            probe built by hand, whose model cannot be compared (its width still is).  A stored probe always has one.
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
    model: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.layer, bool) or not isinstance(self.layer, numbers.Integral) or self.layer < 0:
            raise ValueError(f"LinearProbe(layer={self.layer!r}): the layer it reads is an integer >= 0")
        object.__setattr__(self, "layer", int(self.layer))
        if self.source not in SOURCES:
            raise ValueError(f"LinearProbe(source={self.source!r}): choose one of {', '.join(map(repr, SOURCES))}")
        sizes = {len(self.mean), len(self.scale), len(self.weights)}
        if len(sizes) != 1 or 0 in sizes:
            raise ValueError(f"a probe's mean, scale and weights must have one length (>= 1), got {sorted(sizes)}")
        if any(not _finite(v) for v in (*self.mean, *self.scale, *self.weights, self.bias, self.penalty)):
            raise ValueError("a probe's numbers must be finite")
        if any(v <= 0 for v in self.scale):
            raise ValueError("a probe's scale holds standard deviations: each must be > 0")
        if self.model is not None:
            if not isinstance(self.model, str) or not self.model:
                raise ValueError(f"LinearProbe(model={self.model!r}): the model's name, or None")
            object.__setattr__(self, "model", canonical_model_name(self.model))  # profiles' names: compared as theirs

    @property
    def width(self) -> int:
        """The hidden size of the vectors it reads."""
        return len(self.weights)

    def readout(self) -> str:
        """Where it reads, in words: ``"layer 3 (residual) of smollm2-135m-instruct"``."""
        return f"layer {self.layer} ({self.source})" + (f" of {self.model}" if self.model else "")

    def mismatch(
        self, *, layer: int | None = None, source: str | None = None, model: str | None = None, width: int | None = None
    ) -> str | None:
        """What differs between where it was trained and where a run reads (each ``None``: not known yet), in words
        naming both sides, or ``None`` when nothing does."""
        read = ["the default layer" if layer is None else f"layer {layer}"]
        read += [] if source is None else [f"({source})"]
        read += [] if model is None else [f"of {model}"]
        differs = (layer is not None and layer != self.layer) or (source is not None and source != self.source)
        differs |= model is not None and self.model is not None and model != self.model
        if differs:
            return f"StateProbe's probe was trained on {self.readout()}; this run reads {' '.join(read)}"
        if width is not None and width != self.width:
            return (
                f"StateProbe's probe reads vectors of width {self.width} ({self.readout()}); "
                f"this run's model{f' {model}' if model else ''} has hidden size {width}"
            )
        return None

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
        """Plain JSON numbers, as a profile stores them (``PROBE`` in ``stored_schemas``)."""
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
            "model": self.model,
            "width": self.width,
        }

    @classmethod
    def from_dict(cls, data: Any, *, model: str | None = None, path: str = "") -> LinearProbe:
        """The probe :meth:`to_dict` wrote, checked against its schema first.

        Args:
            data: The stored form.
            model: The model of the profile that holds it (it was trained in the same calibration): read for a
                probe that records none (one stored before probes recorded their model); refused when it records
                another.
            path: Where ``data`` sits in its file (``"probe.probe"``), for the messages.

        Raises:
            FieldError: A ``ValueError`` that names the field: a missing or wrong one, or no model known.
        """
        try:
            check(data, PROBE, path)
        except FieldError as err:
            raise FieldError(err.path, f"not a stored linear probe: {err}") from None
        recorded = data.get("model")
        if recorded is not None and model is not None and canonical_model_name(recorded) != canonical_model_name(model):
            raise FieldError(
                join(path, "model"),
                f"field {join(path, 'model')} says the probe was trained on {recorded}, but it is stored for "
                f"{model}: {RETRAIN}",
            )
        if "model" not in data and model is None:  # an explicit null: a probe built in code, recorded as such
            raise FieldError(
                join(path, "model"),
                f"the field '{join(path, 'model')}' is missing: the probe records no model it was trained on, so it "
                f"cannot be checked against the model it would read; {RETRAIN}",
            )
        return cls(
            layer=data["layer"],
            source=data["source"],
            label=data["label"],
            mean=tuple(float(v) for v in data["mean"]),
            scale=tuple(float(v) for v in data["scale"]),
            weights=tuple(float(v) for v in data["weights"]),
            bias=float(data["bias"]),
            penalty=float(data["penalty"]),
            trained_on=dict(data.get("trained_on") or {}),
            model=recorded or model,
        )


def stored_probe(
    state: Mapping[str, Any], path: str, *, model: str, layer: int | None, source: str
) -> tuple[LinearProbe, float]:
    """The probe and threshold of the ``state-probe`` rule's learned state (``PROBE_ENTRY``, already checked), found
    at ``path`` in a profile of ``model``, ``layer`` and ``source``: it was trained in that profile's calibration, so
    a probe that records no model is that model's, and one trained on another model, layer or source is refused.

    Raises:
        FieldError: Naming the field: the probe cannot be read, or was trained elsewhere than the profile reads.
    """
    probe = LinearProbe.from_dict(state["probe"], model=model, path=join(path, "probe"))
    if (probe.layer, probe.source) != (layer, source):
        own = "no hidden state (layer null)" if layer is None else f"layer {layer} ({source})"
        where = join(join(path, "probe"), "layer")
        raise FieldError(
            where, f"field {where}: the probe was trained on {probe.readout()}, but the profile is for {own}"
        )
    return probe, float(state["threshold"])


def _finite(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
