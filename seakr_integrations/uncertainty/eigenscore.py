"""EigenScore: SeaKR's self-aware uncertainty from the samples' hidden states (SPEC section 3).

If the model "knows" the answer its k samples end in nearly the same internal state, the Gram matrix of their
(feature-centred) vectors is close to rank one, and its regularised log-determinant is small.  Diverse internal
states spread the spectrum and raise the score.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["DEFAULT_ALPHA", "eigenscore"]

DEFAULT_ALPHA = 1e-3


def eigenscore(vectors: ArrayLike, alpha: float = DEFAULT_ALPHA) -> float:
    """Regularised log-determinant of the samples' Gram matrix, divided by k.

    ``Z`` is centred over each vector's own features (not across samples), ``G = Z Z^T`` with no normalisation,
    and the score is ``logdet(G + alpha I) / k`` with the natural log.  Higher means more uncertain.

    Args:
        vectors: ``(k, d)`` array, one row per sample (k >= 2).
        alpha: Ridge added to the diagonal; SeaKR uses 1e-3.

    Returns:
        The score, or ``inf`` when a vector holds NaN/inf (the caller should flag it; see ``estimate``).

    Raises:
        ValueError: If ``vectors`` is not 2-D, has fewer than 2 rows, or ``alpha`` is not positive.
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
