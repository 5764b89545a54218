"""A delta profile read from a file, checked before anything of it is applied: its fields against ``PROFILE``
(``stored_schemas``), the profile against the settings it was looked up for (its file name), and each rule's learned
state when the rule reads it (:func:`learned_state`, with the rule's own schema).  ``calibration`` reads profiles
through here; each refusal names the file, the field and what to do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from seakr_integrations.stored import FieldError, Schema, StoredFileError, check, join
from seakr_integrations.stored_schemas import PROFILE

__all__ = ["KIND", "REMEDY", "check_key", "check_profile", "learned_state", "relearn"]

KIND = "delta profile"
REMEDY = "run seakr calibrate again or delete it"

_FORMER_FIELDS = {"cascade": "token-cascade", "probe": "state-probe"}
"""Fields profiles held before a rule's learned state went under ``rules`` (by the rule's name), and the rule each
was for: such a profile is refused with what to do, not read."""

T = TypeVar("T")


def relearn(rule: str) -> str:
    """What to do about a rule's learned state that cannot be read: learn it again, or drop the file."""
    return f"run `seakr calibrate` again with {rule} among its --rules (it learns it), or delete the file"


def check_profile(data: Any, source: str | Path) -> dict[str, Any]:
    """``data`` (a profile file's JSON) if it is a delta profile, else a :class:`StoredFileError` naming ``source``
    and the first bad field."""
    former = next((name for name in _FORMER_FIELDS if isinstance(data, dict) and name in data), None)
    if former is not None:
        raise StoredFileError(
            source,
            KIND,
            f"field {former}: an earlier seakr stored the {_FORMER_FIELDS[former]} rule's learned state there, and "
            "profiles now keep each rule's under rules.<rule name>",
            f"run `seakr calibrate` again (with {_FORMER_FIELDS[former]} among its --rules) to remake it",
            former,
        )
    try:
        check(data, PROFILE)
    except FieldError as err:
        raise StoredFileError.of(source, KIND, err, REMEDY) from None
    return data


def learned_state(
    profile: Any, rule: str, schema: Schema, read: Callable[[dict[str, Any], str], T] | None = None
) -> T | dict[str, Any] | None:
    """What ``profile`` (a ``DeltaProfile``) stores for the rule named ``rule``, checked against the rule's
    ``schema`` and read by ``read`` (given the state and its path in the file; it raises ``FieldError``), or ``None``
    when it stores nothing for it.  A state that does not check or read is a :class:`StoredFileError` naming the
    profile's file (its key when it was built in code), the field and how to learn it again.

    Called by the rule itself (``Rule.calibrated``): the profile knows no rule's state but as a JSON object.
    """
    state = profile.rules.get(rule)
    if not state:
        return None
    path = join("rules", rule)
    try:
        check(state, schema, path)
        return read(state, path) if read is not None else state
    except FieldError as err:
        raise StoredFileError.of(profile.origin or f"profile {profile.key}", KIND, err, relearn(rule)) from None


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
