"""Perplexity of the greedy continuation (SeaKR Table 3's "Perplexity"): how surprised the model is by its answer."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.uncertainty.record import Uncertainty
from seakr_integrations.uncertainty.samples import kept_samples


def mean_nll(logprobs: Sequence[float]) -> float:
    """Mean negative log-likelihood per token; ``inf`` for an empty or non-finite sequence."""
    lp = np.asarray(logprobs, dtype=np.float64)
    if lp.size == 0 or not np.isfinite(lp).all():
        return math.inf
    return float(-lp.mean())


def perplexity(logprobs: Sequence[float]) -> float:
    """``exp(-mean log p)`` of one continuation's tokens; ``inf`` for an empty or non-finite one."""
    nll = mean_nll(logprobs)
    return math.inf if math.isinf(nll) else math.exp(nll)


def score(output: SelfAwareOutput, alpha: float = 0.0) -> Uncertainty:
    """Perplexity of ``output``'s greedy continuation (``alpha`` is EigenScore's and unused)."""
    _, dropped = kept_samples(output)
    return Uncertainty(perplexity(output.greedy.logprobs), "perplexity", num_samples=0, num_dropped=dropped)
