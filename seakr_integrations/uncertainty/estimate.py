"""One entry point that scores a self-aware output with any estimator and records how it got the number.

It applies SPEC section 2/3's rules that sit around the formula: samples whose text is empty are dropped before
scoring, fewer than two kept samples count as maximally uncertain, and a non-finite vector gives ``inf`` with the
reason recorded, never an exception from inside numpy.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.uncertainty.eigenscore import DEFAULT_ALPHA, eigenscore
from seakr_integrations.uncertainty.logprob import energy, ln_entropy, multi_perplexity, perplexity

__all__ = ["ESTIMATORS", "LOOP_ESTIMATORS", "Uncertainty", "estimate"]

ESTIMATORS = ("eigenscore", "perplexity", "multi_perplexity", "ln_entropy", "energy")
"""Estimators computed from one self-aware output.  The prompt-based one needs its own probe call: see
``seakr_integrations.uncertainty.prompt``."""

LOOP_ESTIMATORS = (*ESTIMATORS, "prompt")
"""What ``SeaKRConfig.estimator`` accepts: the above, and ``"prompt"`` (SeaKR's loop makes the probe call)."""


@dataclass(frozen=True)
class Uncertainty:
    """A score and what it was computed from (part of the decision trace).

    Attributes:
        value: Higher = more uncertain; ``inf`` when it could not be computed (see ``note``).
        estimator: Which estimator produced it.
        num_samples: Samples that entered the score.
        num_dropped: Samples dropped because their text was empty.
        layer: Decoder layer of the vectors (EigenScore), else ``None``.
        source: ``"mlp"`` or ``"residual"`` (EigenScore), else ``None``.
        note: Why the value is ``inf``, or ``None`` when it is an ordinary number.
    """

    value: float
    estimator: str
    num_samples: int
    num_dropped: int = 0
    layer: int | None = None
    source: str | None = None
    note: str | None = None

    @property
    def is_finite(self) -> bool:
        return math.isfinite(self.value)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (``inf`` stays a float; ``json.dumps`` writes it as ``Infinity``)."""
        return asdict(self)


def estimate(output: SelfAwareOutput, estimator: str = "eigenscore", alpha: float = DEFAULT_ALPHA) -> Uncertainty:
    """Score one prompt's self-aware output.

    Args:
        output: What a back-end returned for the prompt.
        estimator: One of ``ESTIMATORS``.
        alpha: EigenScore's ridge.

    Raises:
        ValueError: For an unknown estimator (the message lists the known ones), or for ``energy`` on a back-end
            without logits.
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; known: {', '.join(ESTIMATORS)} (and the prompt probe)")
    remote = output.scores.get(estimator)
    if remote is not None and any(s.eos_vector is None for s in output.samples):
        if estimator == "eigenscore" and alpha != DEFAULT_ALPHA:
            raise ValueError(
                f"alpha={alpha}: the server computed EigenScore with alpha={DEFAULT_ALPHA}; ask it for the vectors "
                "(RemoteBackend(return_vectors=True)) to score with another alpha"
            )
        return remote
    kept = [s for s in output.samples if s.text.strip()]
    dropped = len(output.samples) - len(kept)
    common = {"estimator": estimator, "num_dropped": dropped}
    if estimator == "perplexity":
        return Uncertainty(perplexity(output.greedy.logprobs), num_samples=0, **common)
    if estimator == "energy":
        return Uncertainty(energy(output.greedy.logit_lse), num_samples=0, **common)
    if len(kept) < 2:
        return Uncertainty(
            math.inf,
            num_samples=len(kept),
            layer=output.layer if estimator == "eigenscore" else None,
            source=output.source if estimator == "eigenscore" else None,
            note=f"only {len(kept)} of {len(output.samples)} samples had non-empty text; at least 2 are needed, "
            "so the model counts as maximally uncertain",
            **common,
        )
    if estimator == "multi_perplexity":
        return Uncertainty(multi_perplexity([s.logprobs for s in kept]), num_samples=len(kept), **common)
    if estimator == "ln_entropy":
        return Uncertainty(ln_entropy([s.logprobs for s in kept]), num_samples=len(kept), **common)
    vectors = np.stack([s.eos_vector for s in kept])  # type: ignore[arg-type]
    bad = [i for i, s in enumerate(kept) if not np.isfinite(s.eos_vector).all()]  # type: ignore[arg-type]
    value = eigenscore(vectors, alpha=alpha)
    note = None
    if bad:
        note = f"non-finite hidden state in {len(bad)} kept sample(s) (indices {bad[:5]}); score set to inf"
    elif math.isinf(value):
        note = "the regularised Gram matrix was not positive definite; score set to inf"
    return Uncertainty(value, num_samples=len(kept), layer=output.layer, source=output.source, note=note, **common)
