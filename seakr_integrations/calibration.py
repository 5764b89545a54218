"""Calibrated retrieval thresholds (delta), stored per model, layer, hidden-state source, estimator and k.

The uncertainty's scale depends on all five (the authors' -6.0 means "always retrieve" for SmolLM2), so
``seakr calibrate`` saves the delta it chooses as a profile; how profiles are picked: docs/design/core.md.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from seakr_integrations.models import REFERENCE_DTYPE, cache_dir
from seakr_integrations.profile_checks import KIND, REMEDY, check_key, check_profile
from seakr_integrations.profile_names import canonical_model_name, profile_key
from seakr_integrations.stored import read_json

PAPER_DELTA = -6.0
"""The authors' threshold, set for Llama-2-7B's MLP output: the delta of a model without any profile."""

SHIPPED_PROFILES = Path(__file__).resolve().parent / "data" / "calibration"
"""The profiles shipped inside the package: ``<key>__<style>-<num_exemplars>ex.json``."""


class UncalibratedDeltaWarning(UserWarning):
    """SeaKR runs with a delta that was not calibrated for this model, layer, source, estimator and k."""


class CalibrationMismatchWarning(UncalibratedDeltaWarning):
    """A profile's delta is applied to a config whose prompt differs from the one it was calibrated with."""


class UninformativeGateWarning(UserWarning):
    """The calibration profile found that the gate's signal carries no information for this model and prompt."""


GATE_ALTERNATIVE = (
    "SeaKR's decisions then rest on its rules, not on the model's state; where retrieval should not be left to "
    "chance, retrieve once and keep SeaKR's re-ranking and final choice: SeaKRConfig(mode='single_hop', "
    "retrieve='always') (docs/gate_signals.md)"
)
"""What to use instead of a gate that knows nothing (the warning and the docs say it)."""


def warn_uninformative(profile: DeltaProfile | None, config: Any) -> None:
    """Warn once when ``profile``'s verdict says the signal that gates ``config`` carries no information: the verdict
    a rule that decides the greedy step learned with its state (``rules[name]["verdict"]``), else the estimator's."""
    if profile is None or config.retrieve != "uncertain":
        return
    learned = (profile.rules.get(r.name, {}).get("verdict") for r in config.rules if r.reads().greedy_step)
    verdict = next((v for v in learned if v), None) or profile.verdict.get(config.estimator)
    if verdict is None or verdict.get("informative", True) or verdict.get("auroc") is None:
        return
    signal = verdict.get("signal", config.estimator)
    _warn_once(
        f"uninformative|{profile.key}|{signal}",
        f"{profile.model}, {profile.prompt.get('exemplar_style')} prompt: the calibration found that the gate's "
        f"{signal} carries no information (AUROC for 'retrieval helps' {verdict['auroc']:.2f}, 95% "
        f"{verdict['auroc_low']:.2f}-{verdict['auroc_high']:.2f}, on {verdict['questions']} questions). "
        + GATE_ALTERNATIVE,
        UninformativeGateWarning,
        4,
    )


@dataclass(frozen=True)
class DeltaProfile:
    """A calibrated delta and how it was chosen.

    Attributes:
        model: Canonical model name (see ``profile_names.canonical_model_name``).
        layer: Decoder layer read (0-based), or ``None`` for a back-end that reads no hidden states.
        source: ``"mlp"`` or ``"residual"`` (as configured; nothing is read when ``layer`` is ``None``).
        k: Samples per call.
        objective: ``"f1"`` (maximise F1 on the calibration questions) or ``"rate"`` (reach a retrieval rate).
        target_rate: The retrieval rate asked for (objective ``"rate"``).
        dataset: The calibration question file's name.
        questions: How many questions were used.
        sweep: The candidates tried: one dict per delta with the scores measured there.
        prompt: The calibration's prompt settings (:func:`prompt_settings`; empty in old profiles), not in the key.
        rules: What the calibration's rules learned with delta, by rule name (``Rule.learn``; each reads its own back
            in ``Rule.calibrated``): ``{"token-cascade": {"estimator", "band", "agreement", "decided"},
            "state-probe": {"probe", "threshold", "penalty_inner_auroc", "verdict"}}``.  A rule's state may hold a
            ``verdict`` on its own signal (as ``verdict`` below); the rest is the rule's.
        verdict: Whether the gate's signals know anything here (``evaluation.verdict.GateVerdict.to_dict`` per
            signal, by signal name), or empty when not measured.
        dtype: The dtype the model ran in (``None``: not recorded; the shipped profiles were made in
            ``REFERENCE_DTYPE``).  A back-end that runs another gets a :class:`CalibrationMismatchWarning`.
        origin: The file it was read from (not stored): a rule's refusal of its learned state names it.
    """

    model: str
    layer: int | None
    source: str
    estimator: str
    k: int
    delta: float
    objective: str
    target_rate: float | None = None
    dataset: str = ""
    questions: int = 0
    sweep: list[dict[str, Any]] = field(default_factory=list)
    prompt: dict[str, Any] = field(default_factory=dict)
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    verdict: dict[str, Any] = field(default_factory=dict)
    dtype: str | None = None
    origin: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "prompt", _current_prompt(self.prompt))  # as today's settings spell it

    @property
    def key(self) -> str:
        return profile_key(self.model, self.layer, self.source, self.estimator, self.k)

    def to_dict(self) -> dict[str, Any]:
        """The profile as ``seakr calibrate`` saves it (``PROFILE`` in ``stored_schemas``)."""
        data = asdict(self)
        del data["origin"]
        return data


def read_profile(path: Path, expected: dict[str, Any] | None = None, **defaults: Any) -> DeltaProfile:
    """The profile in ``path``, every field checked first (``profile_checks``; a rule's learned state when the rule
    reads it): a ``StoredFileError`` (a ``ValueError``) that names the file, the field and what to do otherwise.
    ``expected``: the settings it was looked up for (``_settings``), which it must hold; ``defaults`` fill fields it
    lacks."""
    data = read_json(path, KIND, REMEDY)
    if isinstance(data, dict):
        data = {**defaults, **data}
    profile = DeltaProfile(**check_profile(data, path), origin=str(path))
    if expected is not None:
        check_key(profile, expected, path, canonical_model_name)
    return profile


def prompt_settings(config: Any, chat_default: bool | None = None) -> dict[str, Any]:
    """The settings of a ``SeaKRConfig`` that change the prompt the uncertainty is measured on: they move delta
    (docs/design/core.md), so a profile records them.  ``chat_default``, when given, replaces ``chat_template=None``
    (whether the tokenizer has a template), so that ``None`` and its meaning compare equal."""
    return {
        "exemplar_style": config.style,
        "num_exemplars": config.num_exemplars,
        "chat_template": _chat(config.chat_template, chat_default),
    }


_REMOVED_PROMPT_SETTINGS: dict[str, Any] = {"chat_answer_prefix": True}
"""Prompt settings profiles recorded that no longer vary, with the value today's prompts have (``Answer:`` opens
the assistant turn in a chat template).  A profile that recorded that value reads as one without the key; another
value stays, and differs from every config today (``prompt_mismatches`` names it)."""


def _current_prompt(prompt: dict[str, Any]) -> dict[str, Any]:
    removed = _REMOVED_PROMPT_SETTINGS
    return {name: value for name, value in prompt.items() if not (name in removed and value == removed[name])}


def _chat(value: bool | None, chat_default: bool | None) -> bool | None:
    return chat_default if value is None and chat_default is not None else value


def _recorded(profile: DeltaProfile, chat_default: bool | None) -> dict[str, Any]:
    """The profile's prompt settings, ``chat_template=None`` read as ``chat_default`` (see ``prompt_settings``)."""
    return {name: _chat(v, chat_default) if name == "chat_template" else v for name, v in profile.prompt.items()}


def prompt_mismatches(profile: DeltaProfile, config: Any, chat_default: bool | None = None) -> list[str]:
    """``"name: calibrated X, now Y"`` for each recorded prompt setting the config changes (none if unrecorded)."""
    now = {**_REMOVED_PROMPT_SETTINGS, **prompt_settings(config, chat_default)}
    return [
        f"{name}: calibrated {value!r}, now {now[name]!r}"
        for name, value in _recorded(profile, chat_default).items()
        if name in now and now[name] != value
    ]


def warn_prompt_mismatch(
    profile: DeltaProfile, config: Any, *, stacklevel: int, chat_default: bool | None = None
) -> None:
    """Warn (once per profile and change, per process) when ``config`` runs the profile's delta on another prompt;
    ``stacklevel`` counts from the caller of this function, as for :func:`warnings.warn`."""
    changed = prompt_mismatches(profile, config, chat_default)
    if changed:
        _warn_once(
            f"{profile.key}|{changed}",
            f"the delta of profile {profile.key} ({profile.delta}) was calibrated on another prompt "
            f"({'; '.join(changed)}), and the prompt moves the uncertainty's scale: calibrate again with these "
            "settings (in another profile directory) or use the calibration's",
            CalibrationMismatchWarning,
            stacklevel + 1,
        )


def _warn_once(seen: str, message: str, category: type[Warning], stacklevel: int) -> None:
    """``warnings.warn`` unless ``seen`` was warned in this process; ``stacklevel`` counts from this one's caller."""
    if seen not in _warned:
        _warned.add(seen)
        warnings.warn(message, category, stacklevel=stacklevel + 1)


def profile_path(model: str, layer: int | None, source: str, estimator: str, k: int, root: Path | None = None) -> Path:
    """Where the profile for these settings lives: ``<cache>/calibration/<key>.json`` by default."""
    return (root or cache_dir() / "calibration") / f"{profile_key(model, layer, source, estimator, k)}.json"


def save_profile(profile: DeltaProfile, root: Path | None = None) -> Path:
    """Write the profile atomically (a crash never leaves half a file) and return its path."""
    path = profile_path(profile.model, profile.layer, profile.source, profile.estimator, profile.k, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(profile.to_dict(), f, indent=2, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_profile(
    model: str, layer: int | None, source: str, estimator: str, k: int, root: Path | None = None
) -> DeltaProfile | None:
    """The saved profile for these settings, or ``None`` when there is none; a ``ValueError`` that names the file to
    fix or delete when it is not a valid profile."""
    path = profile_path(model, layer, source, estimator, k, root)
    if not path.is_file():
        return None
    profile = read_profile(path, _settings(model, layer, source, estimator, k))
    _loaded[profile.key] = profile
    return profile


def _settings(model: str, layer: int | None, source: str, estimator: str, k: int) -> dict[str, Any]:
    """What a profile looked up for these settings must hold (``check_key``)."""
    return {"model": canonical_model_name(model), "layer": layer, "source": source, "estimator": estimator, "k": k}


_warned: set[str] = set()
_loaded: dict[str, DeltaProfile] = {}
"""Profiles read in this process, from any directory: a config built from one (``calibrated_config(backend, config,
root=DIR)``, ``seakr eval --calibrated --profile-dir DIR``) is calibrated even when DIR is not the default one."""


def shipped_profile(
    model: str, layer: int | None, config: Any, chat_default: bool | None = None
) -> DeltaProfile | None:
    """The shipped profile for these settings whose prompt is the config's, or the nearest one (same exemplar style
    first), or ``None`` when the package ships none for this model, layer, source, estimator and k.
    ``chat_default``: what ``chat_template=None`` means for the model (``prompt_settings``)."""
    key = profile_key(model, layer, config.source, config.estimator, config.k)
    paths = sorted(SHIPPED_PROFILES.glob(f"{key}__*.json"))
    expected = _settings(model, layer, config.source, config.estimator, config.k)
    profiles = [read_profile(path, expected, dtype=REFERENCE_DTYPE) for path in paths]
    if not profiles:
        return None
    now = prompt_settings(config, chat_default)
    return max(
        profiles, key=lambda p: (_recorded(p, chat_default) == now, p.prompt.get("exemplar_style") == config.style)
    )


def calibrate_command(model: str, config: Any, server: str | None = None) -> str:
    """The ``seakr calibrate`` command that makes a profile for these settings: with ``--server URL`` for a model
    behind a server (it needs no torch in the app), else with ``--model``."""
    where = f"--server {server}" if server else f"--model {canonical_model_name(model)}"
    return f"seakr calibrate {where} --dataset QUESTIONS.jsonl --estimator {config.estimator} -k {config.k}"


def _uncalibrated(model: str, layer: int | None, config: Any, delta: float, server: str | None = None) -> None:
    readout = "logprobs only, no hidden states" if layer is None else f"layer {layer}, {config.source}"
    _warn_once(
        profile_key(model, layer, config.source, config.estimator, config.k),
        f"delta={delta} is uncalibrated for {canonical_model_name(model)} ({readout}, "
        f"{config.estimator}, k={config.k}): no profile exists for these settings, the uncertainty's scale depends on "
        f"all of them, and the paper's {PAPER_DELTA} was set for Llama-2-7B, so retrieval may happen always or never. "
        f"Calibrate with `{calibrate_command(model, config, server)}` (and your other settings); SeaKRConfig() then "
        "uses it.",
        UncalibratedDeltaWarning,
        5,
    )


def warn_dtype_mismatch(profile: DeltaProfile, dtype: str | None, server: str | None = None) -> None:
    """Warn once (:class:`CalibrationMismatchWarning`) when the back-end runs another dtype than ``profile`` was
    made in: the uncertainties move with the precision, so its delta may not fit."""
    if dtype is None or profile.dtype is None or dtype == profile.dtype:
        return
    where = f"the server at {server}" if server else "the back-end"
    fix = f"start it with --dtype {profile.dtype}" if server else f"load it with dtype={profile.dtype!r}"
    _warn_once(
        f"dtype|{profile.key}|{dtype}",
        f"{where} runs {profile.model} in {dtype}, but the delta profile {profile.key} was made in {profile.dtype}: "
        f"the uncertainties move with the precision, so its delta may not fit; {fix}, or calibrate in {dtype} with "
        f"`{calibrate_command(profile.model, profile, server)}`",
        CalibrationMismatchWarning,
        4,
    )


def resolve_delta(
    model: str, layer: int | None, config: Any, chat_default: bool | None = None, server: str | None = None
) -> tuple[float, DeltaProfile | None]:
    """The delta a SeaKR run uses, and the profile it came from (``None``: no profile; a warning said so).

    ``config.delta=None`` takes the user's profile, else the shipped one, else the paper's -6.0 with an
    :class:`UncalibratedDeltaWarning`; a number is used as given and warns when no profile exists for these settings
    (one loaded from another directory counts when its delta is the number).  A profile applied to another prompt
    gives a :class:`CalibrationMismatchWarning`; each warning comes once per settings and process, none for
    ``retrieve="always"``/``"never"``.  ``layer=None``: no hidden states read; ``chat_default``: ``prompt_settings``;
    ``server``: the URL of the server the model runs on (the warning's ``seakr calibrate --server``).
    """
    given = config.delta
    if config.retrieve != "uncertain":
        return (PAPER_DELTA if given is None else given), None
    if given is None:
        profile = load_profile(model, layer, config.source, config.estimator, config.k)
        profile = profile or shipped_profile(model, layer, config, chat_default)
        if profile is None:
            _uncalibrated(model, layer, config, PAPER_DELTA, server)
            return PAPER_DELTA, None
        warn_prompt_mismatch(profile, config, stacklevel=4, chat_default=chat_default)
        return profile.delta, profile
    # one read from another directory counts only for the delta it holds (read first: load_profile replaces it)
    loaded = _loaded.get(profile_key(model, layer, config.source, config.estimator, config.k))
    mine = load_profile(model, layer, config.source, config.estimator, config.k)
    found = [p for p in (mine, shipped_profile(model, layer, config, chat_default)) if p is not None]
    profile = next((p for p in (loaded, *found) if p is not None and p.delta == given), found[0] if found else None)
    if profile is None:
        _uncalibrated(model, layer, config, given, server)
    elif profile.delta == given:
        warn_prompt_mismatch(profile, config, stacklevel=4, chat_default=chat_default)
    return given, profile


def resolve_rules(profile: DeltaProfile | None, config: Any) -> tuple[Any, ...]:
    """The rules a SeaKR run uses: each with what it learned in the profile's calibration filled in
    (``Rule.calibrated``: ``TokenCascade``'s band, ``StateProbe``'s probe and threshold).  A rule left lacking it
    does nothing, and an :class:`UncalibratedDeltaWarning` says so, once."""
    if config.retrieve != "uncertain":
        return tuple(config.rules)
    rules = tuple(rule.calibrated(profile) for rule in config.rules)
    where = f"profile {profile.key}" if profile is not None else "no profile"
    for rule in rules:
        lacking = rule.uncalibrated()
        if lacking is not None:
            _warn_once(f"{rule.name}|{where}", f"{where}: {lacking}", UncalibratedDeltaWarning, 4)
    return rules
