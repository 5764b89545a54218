"""Uncertainty estimators: "higher = more uncertain", numpy only, no model needed.

``REGISTRY`` lists them with what each needs; ``estimate(output, name)`` scores a back-end's output with one.
"""

from seakr_integrations.uncertainty.eigenscore import DEFAULT_ALPHA, eigenscore
from seakr_integrations.uncertainty.estimate import Uncertainty, estimate
from seakr_integrations.uncertainty.logprob import energy, ln_entropy, multi_perplexity, perplexity
from seakr_integrations.uncertainty.prompt import (
    PROBE_SUFFIX,
    PROBE_TEMPLATE,
    probe_after,
    probe_prompt,
    prompt_uncertainty,
)
from seakr_integrations.uncertainty.registry import (
    NEEDS,
    REGISTRY,
    Estimator,
    check_estimator,
    estimator_names,
    estimators_for,
)

__all__ = [
    "DEFAULT_ALPHA",
    "NEEDS",
    "PROBE_SUFFIX",
    "PROBE_TEMPLATE",
    "REGISTRY",
    "Estimator",
    "Uncertainty",
    "check_estimator",
    "eigenscore",
    "energy",
    "estimate",
    "estimator_names",
    "estimators_for",
    "ln_entropy",
    "multi_perplexity",
    "perplexity",
    "probe_after",
    "probe_prompt",
    "prompt_uncertainty",
]
