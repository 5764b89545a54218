"""One entry point that scores a self-aware output with any registered estimator (``registry.REGISTRY``); an output
from a ``seakr serve`` server without its vectors carries the server's scores, returned as they are.
"""

from __future__ import annotations

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.uncertainty.eigenscore import DEFAULT_ALPHA
from seakr_integrations.uncertainty.record import Uncertainty
from seakr_integrations.uncertainty.registry import REGISTRY


def estimate(output: SelfAwareOutput, estimator: str = "eigenscore", alpha: float = DEFAULT_ALPHA) -> Uncertainty:
    """Score one prompt's self-aware output.

    Args:
        output: What a back-end returned for the prompt; for an estimator that needs a ``"probe"`` (``"prompt"``),
            what it returned for the probe (see ``uncertainty.prompt``).
        estimator: A name in ``REGISTRY``.

    Raises:
        ValueError: For an unknown estimator (the message lists the known ones), or for ``energy`` on a back-end
            without logits.
    """
    entry = REGISTRY.get(estimator)
    if entry is None:
        raise ValueError(f"unknown estimator {estimator!r}; known: {', '.join(REGISTRY)}")
    remote = output.scores.get(estimator)
    if remote is not None and any(s.eos_vector is None for s in output.samples):
        if estimator == "eigenscore" and alpha != DEFAULT_ALPHA:
            raise ValueError(
                f"alpha={alpha}: the server computed EigenScore with alpha={DEFAULT_ALPHA}; ask it for the vectors "
                "(RemoteBackend(return_vectors=True)) to score with another alpha"
            )
        return remote
    return entry.score(output, alpha)
