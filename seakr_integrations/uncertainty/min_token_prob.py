"""The greedy continuation's least likely token: ``1 - min p``, a signal that needs no samples.

Perplexity dilutes the one token a model hesitated on; this does not, and it was the cheap signal that best
separated wrong first multi-hop steps (docs/gate_signals.md), which is why the cascade gate can read it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.uncertainty.record import Uncertainty
from seakr_integrations.uncertainty.samples import kept_samples


def min_token_doubt(logprobs: Sequence[float]) -> float:
    """``1 - exp(min log p)`` over one continuation's tokens; ``inf`` for an empty or non-finite sequence."""
    if not logprobs or not all(math.isfinite(lp) for lp in logprobs):
        return math.inf
    return 1.0 - math.exp(min(logprobs))


def score(output: SelfAwareOutput, alpha: float = 0.0) -> Uncertainty:
    """``1 - min p`` of ``output``'s greedy continuation (``alpha`` is EigenScore's and unused)."""
    _, dropped = kept_samples(output)
    return Uncertainty(min_token_doubt(output.greedy.logprobs), "min_token_prob", num_samples=0, num_dropped=dropped)
