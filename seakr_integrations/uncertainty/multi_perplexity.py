"""Mean perplexity of the k samples (SeaKR Table 3's "Multi-Perplexity")."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.uncertainty.perplexity import perplexity
from seakr_integrations.uncertainty.record import Uncertainty
from seakr_integrations.uncertainty.samples import kept_samples, too_few_samples


def multi_perplexity(samples_logprobs: Sequence[Sequence[float]]) -> float:
    """Mean perplexity over the k sampled continuations."""
    if len(samples_logprobs) == 0:
        raise ValueError("multi_perplexity needs at least one sample's logprobs")
    return float(np.mean([perplexity(lp) for lp in samples_logprobs]))


def score(output: SelfAwareOutput, alpha: float = 0.0) -> Uncertainty:
    """Multi-perplexity of ``output``'s kept samples (``alpha`` is EigenScore's and unused)."""
    kept, dropped = kept_samples(output)
    few = too_few_samples(output, "multi_perplexity", kept)
    if few is not None:
        return few
    value = multi_perplexity([s.logprobs for s in kept])
    return Uncertainty(value, "multi_perplexity", num_samples=len(kept), num_dropped=dropped)
