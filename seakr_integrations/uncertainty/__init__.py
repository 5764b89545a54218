"""Uncertainty estimators: "higher = more uncertain", numpy only, no model needed."""

from seakr_integrations.uncertainty.eigenscore import DEFAULT_ALPHA, eigenscore
from seakr_integrations.uncertainty.estimate import ESTIMATORS, LOOP_ESTIMATORS, Uncertainty, estimate
from seakr_integrations.uncertainty.logprob import energy, ln_entropy, multi_perplexity, perplexity
from seakr_integrations.uncertainty.prompt import (
    PROBE_SUFFIX,
    PROBE_TEMPLATE,
    probe_after,
    probe_prompt,
    prompt_uncertainty,
)
from seakr_integrations.uncertainty.registry import REGISTRY, Estimator, check_estimator, estimator_names

__all__ = [
    "DEFAULT_ALPHA",
    "ESTIMATORS",
    "REGISTRY",
    "Estimator",
    "check_estimator",
    "estimator_names",
    "LOOP_ESTIMATORS",
    "PROBE_SUFFIX",
    "PROBE_TEMPLATE",
    "Uncertainty",
    "eigenscore",
    "energy",
    "estimate",
    "ln_entropy",
    "multi_perplexity",
    "perplexity",
    "probe_after",
    "probe_prompt",
    "prompt_uncertainty",
]
