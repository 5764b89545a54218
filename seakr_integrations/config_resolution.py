"""The one step that makes a ``SeaKRConfig`` ready to run on a back-end: delta and the rules' calibrated parameters
(the cascade band) filled in from the calibration profiles (``calibration``), so that ``SeaKR`` itself reads no
file when given its result.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from seakr_integrations.calibration import (
    DeltaProfile,
    calibrate_command,
    load_profile,
    profile_path,
    resolve_delta,
    resolve_rules,
    shipped_profile,
    warn_dtype_mismatch,
    warn_prompt_mismatch,
    warn_uninformative,
)
from seakr_integrations.profile_names import canonical_model_name

if TYPE_CHECKING:  # annotations only: resolving needs neither the back-ends nor the loop loaded
    from seakr_integrations.backends.base import SelfAwareBackend
    from seakr_integrations.reasoning.config import SeaKRConfig


@dataclass(frozen=True)
class ResolvedConfig:
    """A SeaKR config made ready to run on one model by :func:`resolve_config`, with what it read.

    Attributes:
        config: The config that runs: ``delta`` and the rules' calibrated parameters (the cascade band) filled in.
        profile: The profile they came from; ``None`` when none exists (a warning said so).
        requested: The config as given (``delta=None``: "the calibrated one").
        model: The back-end's model name it was resolved for.
    """

    config: SeaKRConfig
    profile: DeltaProfile | None
    requested: SeaKRConfig
    model: str


def resolve_config(backend: SelfAwareBackend, config: SeaKRConfig) -> ResolvedConfig:
    """The config a SeaKR run on ``backend`` uses (:func:`resolve_delta`, :func:`resolve_band`): the calibration
    profiles are read here, once per ``SeaKR``; given this result, ``SeaKR`` reads no file (the adapters' caches)."""
    from seakr_integrations.backends.openai_plain import check_estimators

    check_estimators(backend, [("estimator", config.estimator)])  # refused first: no profile is sought for it
    layer = backend.profile_layer(config.layer)
    server = server_url(backend)
    delta, profile = resolve_delta(backend.model_name, layer, config, backend.has_chat_template, server)
    if profile is not None and config.retrieve == "uncertain":
        warn_dtype_mismatch(profile, backend.dtype, server)
    resolved = config.with_(delta=delta, rules=resolve_rules(profile, config))
    check_probe_fits(backend, resolved)
    warn_uninformative(profile, resolved)
    return ResolvedConfig(resolved, profile, config, backend.model_name)


def server_url(backend: object) -> str | None:
    """The URL of the server ``backend`` talks to (a wrapper reads it through); ``None`` for a model loaded here."""
    url = getattr(backend, "base_url", None)
    return url if isinstance(url, str) else None


def calibrated_config(backend: SelfAwareBackend, config: SeaKRConfig, root: Path | None = None) -> SeaKRConfig:
    """``config`` with the delta (and cascade band) that ``seakr calibrate`` saved for this back-end's model and these
    settings: unlike :func:`resolve_config`, a missing profile is an error.

    Args:
        backend: The ``SelfAwareBackend`` that will run (its model name and layer count pick the profile).
        config: The ``SeaKRConfig`` (``layer``, ``source``, ``estimator`` and ``k`` also choose the profile).
        root: Directory of the profiles (default ``<cache>/calibration``, then the profiles the package ships).

    Raises:
        LookupError: No profile exists for these settings, or the one that does was made in another dtype than the
            back-end runs (the uncertainties move with the precision); the message names both and what to do.

    Warns:
        CalibrationMismatchWarning: The profile was calibrated on another prompt (exemplars, chat template).
    """
    layer = backend.profile_layer(config.layer)
    chat_default = backend.has_chat_template
    model, source, estimator, k = backend.model_name, config.source, config.estimator, config.k
    profile = load_profile(model, layer, source, estimator, k, root)
    if profile is None and root is None:
        profile = shipped_profile(model, layer, config, chat_default)
    server = server_url(backend)
    if profile is None:
        raise LookupError(
            f"no calibrated delta for {model} ({'logprobs only' if layer is None else f'layer {layer}'}, {source}, "
            f"{estimator}, k={k}) at {profile_path(model, layer, source, estimator, k, root)}; run "
            f"`{calibrate_command(model, config, server)}` with the same settings first"
        )
    if backend.dtype is not None and profile.dtype is not None and backend.dtype != profile.dtype:
        raise LookupError(
            f"the calibrated delta for {model} ({profile.key}) was made in {profile.dtype}, and this run loads the "
            f"model in {backend.dtype}: the uncertainties move with the precision, so it does not hold here; run in "
            f"{profile.dtype} (--dtype {profile.dtype}), or calibrate in {backend.dtype} with "
            f"`{calibrate_command(model, config, server)} --dtype {backend.dtype}`"
        )
    warn_prompt_mismatch(profile, config, stacklevel=3, chat_default=chat_default)
    resolved = config.with_(delta=profile.delta, rules=resolve_rules(profile, config))
    check_probe_fits(backend, resolved)
    return resolved


def check_probe_fits(backend: SelfAwareBackend, config: SeaKRConfig) -> None:
    """Refuse (``ValueError``, naming both sides) a state probe of ``config`` trained on another model, hidden size,
    layer or source than this back-end reads; the config itself checked the layer and source it names, the
    back-end's default layer and its model are known only here.  A back-end that reads no hidden states has no
    vector to compare (the rule is refused when it asks for one)."""
    from seakr_integrations.reasoning.rules.state_probe import check_probe_readout

    if backend.reads_hidden_states:
        layer = backend.resolve_layer(config.layer)
        width = backend.hidden_size or None
        model = canonical_model_name(backend.model_name)
        server = server_url(backend)
        named = f"--server {server}" if server else f"--model {model}"
        check_probe_readout(config.rules, layer, config.source, model, width, named)
