"""A delta profile read from a file, checked before anything of it is applied: its fields against ``PROFILE``
(``stored_schemas``), its state probe against the profile it sits in, and the profile against the settings it was
looked up for (its file name).  ``calibration`` reads profiles through here; each refusal names the file, the
field and what to do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from seakr_integrations.stored import FieldError, StoredFileError, check
from seakr_integrations.stored_schemas import PROBE_ENTRY, PROFILE
from seakr_integrations.uncertainty.linear_probe import LinearProbe

__all__ = ["KIND", "PROBE_REMEDY", "REMEDY", "check_key", "check_profile", "stored_probe"]

KIND = "delta profile"
REMEDY = "run seakr calibrate again or delete it"
PROBE_REMEDY = "run `seakr calibrate --probe` again, or delete the file"


def _remedy(field: str) -> str:
    return PROBE_REMEDY if field.startswith("probe") else REMEDY


def check_profile(data: Any, source: str | Path) -> dict[str, Any]:
    """``data`` (a profile file's JSON) if it is a delta profile, else a :class:`StoredFileError` naming ``source``
    and the first bad field."""
    try:
        check(data, PROFILE)
    except FieldError as err:
        raise StoredFileError.of(source, KIND, err, _remedy(err.path)) from None
    return data


def stored_probe(profile: Any, source: str | Path | None = None) -> tuple[LinearProbe, float] | None:
    """The state probe and its threshold that ``profile`` (a ``DeltaProfile``) stores, or ``None`` when it stores
    none; a :class:`StoredFileError` naming ``source`` (default: the profile's key) when the entry is malformed, when
    the probe records another model than the profile's, or was trained on another layer or source than the one the
    profile is for (``seakr calibrate --probe`` trains it on the profile's own)."""
    if not profile.probe:
        return None
    where = source or f"profile {profile.key}"
    try:
        check(profile.probe, PROBE_ENTRY, "probe")
        probe = LinearProbe.from_dict(profile.probe["probe"], model=profile.model, path="probe.probe")
    except FieldError as err:
        raise StoredFileError.of(where, KIND, err, PROBE_REMEDY) from None
    if (probe.layer, probe.source) != (profile.layer, profile.source):
        own = "no hidden state (layer null)" if profile.layer is None else f"layer {profile.layer} ({profile.source})"
        raise StoredFileError(
            where,
            KIND,
            f"field probe.probe.layer: the probe was trained on {probe.readout()}, but the profile is for {own}",
            PROBE_REMEDY,
            "probe.probe.layer",
        )
    return probe, float(profile.probe["threshold"])


def check_key(
    profile: Any, expected: dict[str, Any], source: str | Path, canonical: Callable[[str], str] = str
) -> None:
    """Refuse (:class:`StoredFileError`) a profile whose settings are not the ones its file was looked up for
    (``expected``: ``model``, ``layer``, ``source``, ``estimator``, ``k``, the model by its ``canonical`` name): its
    delta was calibrated for others, and applying it would be applying a mismatch."""
    for name, value in expected.items():
        if name == "source" and expected.get("layer") is None:  # a logprobs profile's key has no source
            continue
        held = getattr(profile, name)
        if (canonical(held) if name == "model" else held) != value:
            raise StoredFileError(
                source,
                KIND,
                f"field {name} holds {held!r}, but the file is the profile of {name}={value!r} (its name says so): "
                "it was renamed, copied or edited",
                REMEDY,
                name,
            )
