"""Length-normalised entropy of the k samples (SeaKR Table 3's "LN-Entropy")."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.uncertainty.perplexity import mean_nll
from seakr_integrations.uncertainty.record import Uncertainty
from seakr_integrations.uncertainty.samples import kept_samples, too_few_samples


def ln_entropy(samples_logprobs: Sequence[Sequence[float]]) -> float:
    """Length-normalised entropy: mean over samples of ``-sum(log p) / length``."""
    if len(samples_logprobs) == 0:
        raise ValueError("ln_entropy needs at least one sample's logprobs")
    return float(np.mean([mean_nll(lp) for lp in samples_logprobs]))


def score(output: SelfAwareOutput, alpha: float = 0.0) -> Uncertainty:
    """LN-entropy of ``output``'s kept samples (``alpha`` is EigenScore's and unused)."""
    kept, dropped = kept_samples(output)
    few = too_few_samples(output, "ln_entropy", kept)
    if few is not None:
        return few
    return Uncertainty(ln_entropy([s.logprobs for s in kept]), "ln_entropy", num_samples=len(kept), num_dropped=dropped)
