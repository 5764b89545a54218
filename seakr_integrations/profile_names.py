"""How calibration profiles are named: a model by its canonical name, and a profile by its key (its file stem).

Kept apart from ``calibration`` because the linear probe compares model names the way profiles file them, and
``calibration`` reads probes (through ``profile_checks``); both sides import the naming from here.
"""

from __future__ import annotations

from pathlib import Path

from seakr_integrations.models import packaged_model

__all__ = ["canonical_model_name", "profile_key"]


def canonical_model_name(name: str) -> str:
    """The packaged model's short name for any of its aliases; a model directory's last path component otherwise."""
    packaged = packaged_model(name)
    if packaged is not None:
        return packaged.name
    return Path(name.rstrip("/\\")).name or name


def profile_key(model: str, layer: int | None, source: str, estimator: str, k: int) -> str:
    """The file stem of a profile: one per (model, layer, source, estimator, k); ``layer=None`` (no hidden states
    read) says ``logprobs`` there, so such profiles and hidden-state ones never mix (docs/design/core.md)."""
    readout = "logprobs" if layer is None else f"layer{layer}__{source}"
    return f"{canonical_model_name(model)}__{readout}__{estimator}__k{k}"
