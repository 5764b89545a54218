"""Energy of the greedy continuation (SeaKR Table 3's "Energy"): the raw logits' mean ``-logsumexp``.

It needs the logits before normalisation, which not every back-end exposes (``SelfAwareBackend.supports_logits``).
"""

from __future__ import annotations

from collections.abc import Sequence

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.uncertainty.perplexity import mean_nll
from seakr_integrations.uncertainty.record import Uncertainty
from seakr_integrations.uncertainty.samples import kept_samples


def energy(logit_lse: Sequence[float] | None) -> float:
    """Energy: mean over generated positions of ``-logsumexp(raw logits)``; a ``ValueError`` for ``None`` (the
    back-end gave no logits: ``SelfAwareBackend.supports_logits``)."""
    if logit_lse is None:
        raise ValueError(
            "energy needs the raw logits' logsumexp per token, which this back-end does not expose for this "
            "continuation (supports_logits is False, or it is a vLLM sample: vLLM records it for the greedy one "
            "only); use HFBackend, or a vLLM model with a `logits_processor` module"
        )
    return mean_nll(logit_lse)


def score(output: SelfAwareOutput, alpha: float = 0.0) -> Uncertainty:
    """Energy of ``output``'s greedy continuation (``alpha`` is EigenScore's and unused)."""
    _, dropped = kept_samples(output)
    return Uncertainty(energy(output.greedy.logit_lse), "energy", num_samples=0, num_dropped=dropped)
