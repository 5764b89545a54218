"""Uncertainty estimators: "higher = more uncertain", numpy only, no model needed (docs/design/core.md).

The formulas themselves (``eigenscore``, ``perplexity``...) are imported from their modules.
"""

from seakr_integrations.uncertainty.estimate import Uncertainty, estimate
from seakr_integrations.uncertainty.prompt import probe_prompt, prompt_uncertainty
from seakr_integrations.uncertainty.registry import REGISTRY, Estimator, estimator_names, estimators_for

__all__ = [
    "REGISTRY",
    "Estimator",
    "Uncertainty",
    "estimate",
    "estimator_names",
    "estimators_for",
    "probe_prompt",
    "prompt_uncertainty",
]
