"""The strict-JSON form of a SeaKR trace's values, both ways (non-finite numbers as ``"inf"``, ``"-inf"``,
``"nan"``), and the version of that form (``docs/design/reasoning.md``)."""

from __future__ import annotations

import math
from dataclasses import fields
from enum import StrEnum
from typing import Any

from seakr_integrations.stored import check
from seakr_integrations.stored_schemas import TRACE
from seakr_integrations.uncertainty.estimate import Uncertainty

SCHEMA_VERSION = 2
"""Version of the trace's JSON form (described in ``docs/design/reasoning.md``); a trace without one is version 1."""


def number_to_json(value: float) -> float | str:
    """``value`` for strict JSON: the number itself, or ``"inf"``/``"-inf"``/``"nan"`` when it is not finite."""
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def number_from_json(value: float | int | str | None) -> float:
    """The float that :func:`number_to_json` wrote (``None``, no number recorded, reads as ``inf``: the readers of
    raw JSON records call it on what may be missing); a ``ValueError`` for anything else."""
    if value is None:
        return math.inf
    if isinstance(value, str) and value not in ("inf", "-inf", "nan"):
        raise ValueError(f"{value!r} is not a number of a SeaKR trace (numbers, or 'inf', '-inf', 'nan')")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{value!r} is not a number of a SeaKR trace")
    return float(value)


def check_trace(data: Any) -> None:
    """Refuse (``stored.FieldError``, a ``ValueError``) a trace's JSON form that is not what ``stored_schemas.TRACE``
    describes, naming the first bad field by its path (``steps[2].query``): a text field that holds NaN, a count that
    is not a whole number, a list where an object belongs; the recorded ``config`` is not checked."""
    check(data, TRACE)


def _plain(value: Any) -> Any:
    """Strict-JSON form: non-finite floats become ``"inf"``/``"-inf"``/``"nan"``, enums their values, tuples lists,
    records dicts."""
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, float):
        return number_to_json(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    return value


def _numbers_from_json(value: Any) -> Any:
    """``value`` with the strings ``"inf"``, ``"-inf"``, ``"nan"`` read back as floats (the recorded config)."""
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    if isinstance(value, dict):
        return {k: _numbers_from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers_from_json(v) for v in value]
    return value


def uncertainty_from_dict(data: dict[str, Any], *, strict: bool = False) -> Uncertainty:
    """The ``Uncertainty`` of its JSON form (``Uncertainty.to_dict()`` through :func:`_plain`): a trace's, or with
    ``strict`` a ``seakr serve`` reply's, which must hold ``value`` and only the record's fields (else
    ``KeyError``/``TypeError``)."""
    known = {f.name for f in fields(Uncertainty)}
    values = {**data} if strict else {k: v for k, v in data.items() if k in known}
    values["value"] = number_from_json(data["value"] if strict else data.get("value"))
    return Uncertainty(**values)


def trace_version(data: Any) -> int | None:
    """The ``schema_version`` of a trace's JSON form: 1 for a trace written before the version was recorded (no
    version, its keys), ``None`` when ``data`` is not a SeaKR trace at all (e.g. the closed-book method's record).

    Raises:
        ValueError: The version is newer than this release reads, or not a version number.
    """
    if not isinstance(data, dict):
        return None
    if "schema_version" not in data:
        return 1 if {"steps", "finals", "config"} <= data.keys() else None
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"schema_version {version!r} of a SeaKR trace is not a version number (1, 2, ...)")
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"this SeaKR trace has schema_version {version}, newer than the {SCHEMA_VERSION} this release of "
            "seakr-integrations reads: upgrade seakr-integrations to read it"
        )
    return version
