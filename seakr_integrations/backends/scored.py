"""One self-aware call scored with any estimator SeaKR's loop accepts: what a framework's LLM class does per call.

The LangChain and LlamaIndex model classes answer one prompt at a time, outside the loop, yet a user picks the same
estimators there as in ``SeaKRConfig``.  Most are computed from the call's own output; ``"prompt"`` needs a second,
greedy-only call (the probe) that asks the model whether it knew, built and scored exactly as the loop does it.
"""

from __future__ import annotations

from collections.abc import Sequence

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import SamplingConfig
from seakr_integrations.uncertainty.estimate import Uncertainty, estimate
from seakr_integrations.uncertainty.prompt import PROBE_TOKENS, probe_after, probe_sampling, unprobed
from seakr_integrations.uncertainty.registry import check_estimator

__all__ = ["scored_generate"]


def _probe(
    backend: SelfAwareBackend, prompts: Sequence[str], outputs: Sequence[SelfAwareOutput], config: SamplingConfig
) -> list[Uncertainty]:
    """``1 - P(yes)`` per call; a probe that does not fit the context counts as uncertain, with the reason."""
    probes = [probe_after(p, o.greedy.text) for p, o in zip(prompts, outputs, strict=True)]
    budget = backend.max_context - PROBE_TOKENS - 1  # the back-end's own rule: prompt + max_tokens + EOS read-out
    fits = [len(backend.tokenize(p)) <= budget for p in probes]
    sent = [p for p, ok in zip(probes, fits, strict=True) if ok]
    replies = iter(backend.generate(sent, probe_sampling(config)) if sent else [])
    why = f"the probe does not fit {backend.model_name}'s context"
    return [estimate(next(replies), "prompt") if ok else unprobed(why) for ok in fits]


def scored_generate(
    backend: SelfAwareBackend,
    prompts: Sequence[str],
    config: SamplingConfig,
    estimator: str,
    alpha: float,
) -> list[tuple[SelfAwareOutput, Uncertainty]]:
    """Generate ``prompts`` and score each output with ``estimator`` (one more greedy call for ``"prompt"``).

    Raises:
        ValueError: Unknown estimator (the message lists them), or what the back-end raises for the call.
    """
    estimator = check_estimator(estimator)
    outputs = backend.generate(list(prompts), config)
    if estimator == "prompt":
        return list(zip(outputs, _probe(backend, prompts, outputs, config), strict=True))
    return [(o, estimate(o, estimator, alpha)) for o in outputs]
