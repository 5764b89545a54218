"""EigenScore: SeaKR's self-aware uncertainty from the samples' hidden states (SPEC section 3).

A model that "knows" the answer ends its k samples in nearly the same internal state: their Gram matrix is close to
rank one and its regularised log-determinant small, while diverse states spread the spectrum and raise the score.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.uncertainty.record import Uncertainty
from seakr_integrations.uncertainty.samples import kept_samples, too_few_samples

DEFAULT_ALPHA = 1e-3


def eigenscore(vectors: ArrayLike, alpha: float = DEFAULT_ALPHA) -> float:
    """``logdet(G + alpha I) / k`` (natural log) of the samples' Gram matrix ``G = Z Z^T`` (no normalisation), ``Z``
    centred over each vector's own features (not across samples).  Higher means more uncertain; ``inf`` when a vector
    holds NaN/inf (the caller should flag it; see ``estimate``).

    Args:
        vectors: ``(k, d)`` array, one row per sample (k >= 2).
        alpha: Ridge added to the diagonal (> 0); SeaKR uses 1e-3.
    """
    z = np.asarray(vectors, dtype=np.float64)
    if z.ndim != 2:
        raise ValueError(f"eigenscore needs a (k, d) array of sample vectors, got shape {z.shape}")
    k = z.shape[0]
    if k < 2:
        raise ValueError(f"eigenscore needs at least 2 sample vectors to compare, got {k}")
    if not alpha > 0:
        raise ValueError(f"alpha={alpha}: the ridge must be positive so that the log-determinant exists")
    if not np.isfinite(z).all():
        return math.inf
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported as inf below, not as a warning
        z = z - z.mean(axis=1, keepdims=True)
        gram = z @ z.T
    if not np.isfinite(gram).all():
        return math.inf
    sign, logdet = np.linalg.slogdet(gram + alpha * np.eye(k))
    if sign <= 0 or not math.isfinite(logdet):
        return math.inf
    return float(logdet) / k


def score(output: SelfAwareOutput, alpha: float = DEFAULT_ALPHA) -> Uncertainty:
    """EigenScore of one self-aware output: the kept samples' EOS vectors, with why the score is ``inf`` if it is."""
    kept, dropped = kept_samples(output)
    few = too_few_samples(output, "eigenscore", kept, readout=True)
    if few is not None:
        return few
    vectors = np.stack([s.eos_vector for s in kept])  # type: ignore[arg-type]
    bad = [i for i, s in enumerate(kept) if not np.isfinite(s.eos_vector).all()]  # type: ignore[arg-type]
    value = eigenscore(vectors, alpha=alpha)
    note = None
    if bad:
        note = f"non-finite hidden state in {len(bad)} kept sample(s) (indices {bad[:5]}); score set to inf"
    elif math.isinf(value):
        note = "the regularised Gram matrix was not positive definite; score set to inf"
    return Uncertainty(
        value, "eigenscore", len(kept), num_dropped=dropped, layer=output.layer, source=output.source, note=note
    )
