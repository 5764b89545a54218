"""The paper's logit/probability-based alternatives to EigenScore (SeaKR Table 3), as pure functions.

Each returns "higher = more uncertain" from statistics a back-end already produced, so that an estimator never
needs a model (LM-Polygraph's split between statistics and estimators).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["energy", "ln_entropy", "multi_perplexity", "perplexity"]


def _mean_nll(logprobs: Sequence[float]) -> float:
    lp = np.asarray(logprobs, dtype=np.float64)
    if lp.size == 0 or not np.isfinite(lp).all():
        return math.inf
    return float(-lp.mean())


def perplexity(logprobs: Sequence[float]) -> float:
    """``exp(-mean log p)`` of one continuation's tokens; ``inf`` for an empty or non-finite one."""
    nll = _mean_nll(logprobs)
    return math.inf if math.isinf(nll) else math.exp(nll)


def multi_perplexity(samples_logprobs: Sequence[Sequence[float]]) -> float:
    """Mean perplexity over the k sampled continuations."""
    if len(samples_logprobs) == 0:
        raise ValueError("multi_perplexity needs at least one sample's logprobs")
    return float(np.mean([perplexity(lp) for lp in samples_logprobs]))


def ln_entropy(samples_logprobs: Sequence[Sequence[float]]) -> float:
    """Length-normalised entropy: mean over samples of ``-sum(log p) / length``."""
    if len(samples_logprobs) == 0:
        raise ValueError("ln_entropy needs at least one sample's logprobs")
    return float(np.mean([_mean_nll(lp) for lp in samples_logprobs]))


def energy(logit_lse: Sequence[float] | None) -> float:
    """Energy: mean over generated positions of ``-logsumexp(raw logits)``.

    Raises:
        ValueError: If the back-end gave no logits (``None``; see ``SelfAwareBackend.supports_logits``).
    """
    if logit_lse is None:
        raise ValueError(
            "energy needs the raw logits' logsumexp per token, which this back-end does not expose for this "
            "continuation (supports_logits is False, or it is a vLLM sample: vLLM records it for the greedy one "
            "only); use HFBackend, or a vLLM model with a `logits_processor` module"
        )
    return _mean_nll(logit_lse)
